#!/usr/bin/env bash
# Apache ZooKeeper in the foreground, configured like the official image:
#   ZOO_MY_ID (1), ZOO_SERVERS ("server.1=zk1:2888:3888;2181 server.2=..."; empty = standalone),
#   ZOO_TICK_TIME (2000), ZOO_INIT_LIMIT (5), ZOO_SYNC_LIMIT (2), ZOO_MAX_CLIENT_CNXNS (60),
#   ZOO_STANDALONE_ENABLED (true), ZOO_ADMINSERVER_ENABLED (false), ZOO_AUTOPURGE_PURGEINTERVAL (0),
#   ZOO_AUTOPURGE_SNAPRETAINCOUNT (3), ZOO_4LW_COMMANDS_WHITELIST (srvr,mntr,ruok), ZOO_CFG_EXTRA,
#   JVMFLAGS (-Xmx256m -XX:+UseSerialGC -XX:TieredStopAtLevel=1: a small heap that starts fast).
# An existing $ZOO_CONF_DIR/zoo.cfg (e.g. mounted) is used as is.
#   zookeeper-server               run it
#   zookeeper-server --classpath   print the classpath it would use (exit 1 if no ZooKeeper is installed)
# The jars: the official image's distribution copied to /opt/zookeeper/lib (the online build; its logback.xml in
# /opt/zookeeper/conf), else Debian's
# zookeeper package (/usr/share/java/zookeeper.jar, whose manifest names its dependencies; slf4j-simple
# gives slf4j a binding, otherwise every server log line is dropped).
set -euo pipefail

classpath() {
  if [ -d /opt/zookeeper/lib ] && ls /opt/zookeeper/lib/zookeeper-*.jar >/dev/null 2>&1; then
    echo "/opt/zookeeper/conf:/opt/zookeeper/lib/*"  # conf: the official image's logback.xml (INFO to the console)
  elif [ -f /usr/share/java/zookeeper.jar ]; then
    local cp=/usr/share/java/zookeeper.jar
    [ -f /usr/share/java/slf4j-simple.jar ] && cp=$cp:/usr/share/java/slf4j-simple.jar
    echo "$cp"
  else
    echo "zookeeper-server: no ZooKeeper jars in /opt/zookeeper/lib or /usr/share/java" >&2
    return 1
  fi
}

if [ "${1:-}" = --classpath ]; then
  classpath
  exit
fi

ZOO_CONF_DIR=${ZOO_CONF_DIR:-/conf}
ZOO_DATA_DIR=${ZOO_DATA_DIR:-/data}
ZOO_DATA_LOG_DIR=${ZOO_DATA_LOG_DIR:-/datalog}
CFG=$ZOO_CONF_DIR/zoo.cfg
mkdir -p "$ZOO_CONF_DIR" "$ZOO_DATA_DIR" "$ZOO_DATA_LOG_DIR"

if [ ! -f "$CFG" ]; then
  {
    echo "dataDir=$ZOO_DATA_DIR"
    echo "dataLogDir=$ZOO_DATA_LOG_DIR"
    echo "tickTime=${ZOO_TICK_TIME:-2000}"
    echo "initLimit=${ZOO_INIT_LIMIT:-5}"
    echo "syncLimit=${ZOO_SYNC_LIMIT:-2}"
    echo "clientPort=2181"
    echo "maxClientCnxns=${ZOO_MAX_CLIENT_CNXNS:-60}"
    echo "standaloneEnabled=${ZOO_STANDALONE_ENABLED:-true}"
    echo "admin.enableServer=${ZOO_ADMINSERVER_ENABLED:-false}"
    echo "autopurge.purgeInterval=${ZOO_AUTOPURGE_PURGEINTERVAL:-0}"
    echo "autopurge.snapRetainCount=${ZOO_AUTOPURGE_SNAPRETAINCOUNT:-3}"
    echo "4lw.commands.whitelist=${ZOO_4LW_COMMANDS_WHITELIST:-srvr,mntr,ruok}"
    for server in ${ZOO_SERVERS:-}; do echo "$server"; done
    for extra in ${ZOO_CFG_EXTRA:-}; do echo "$extra"; done
  } >"$CFG"
fi
if [ ! -f "$ZOO_DATA_DIR/myid" ]; then
  echo "${ZOO_MY_ID:-1}" >"$ZOO_DATA_DIR/myid"
fi
echo "zookeeper-server: $CFG (myid $(cat "$ZOO_DATA_DIR/myid")):" >&2
sed 's/^/  /' "$CFG" >&2

CP=$(classpath)
# shellcheck disable=SC2086
exec java ${JVMFLAGS:--Xmx256m -XX:+UseSerialGC -XX:TieredStopAtLevel=1} -Dzookeeper.log.dir="$ZOO_DATA_LOG_DIR" \
  -cp "$CP" org.apache.zookeeper.server.quorum.QuorumPeerMain "$CFG"
