#!/usr/bin/env bash
# ZooKeeper (Debian's package) in the foreground, configured like the official image:
#   ZOO_MY_ID (1), ZOO_SERVERS ("server.1=zk1:2888:3888;2181 server.2=..."; empty = standalone),
#   ZOO_TICK_TIME (2000), ZOO_INIT_LIMIT (5), ZOO_SYNC_LIMIT (2), ZOO_MAX_CLIENT_CNXNS (60),
#   ZOO_STANDALONE_ENABLED (true), ZOO_ADMINSERVER_ENABLED (false), ZOO_AUTOPURGE_PURGEINTERVAL (0),
#   ZOO_AUTOPURGE_SNAPRETAINCOUNT (3), ZOO_4LW_COMMANDS_WHITELIST (srvr,mntr,ruok), ZOO_CFG_EXTRA,
#   JVMFLAGS (-Xmx256m -XX:+UseSerialGC).
# An existing $ZOO_CONF_DIR/zoo.cfg (e.g. mounted) is used as is. Other arguments are exec'd instead.
set -euo pipefail

if [ "$#" -gt 0 ]; then
  exec "$@"
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
echo "zookeeper-entrypoint: $CFG (myid $(cat "$ZOO_DATA_DIR/myid")):" >&2
sed 's/^/  /' "$CFG" >&2

# zookeeper.jar's manifest Class-Path names its dependencies in /usr/share/java; slf4j-simple gives
# slf4j 1.7 a binding (otherwise every server log line is dropped).
CP=/usr/share/java/zookeeper.jar
[ -f /usr/share/java/slf4j-simple.jar ] && CP=$CP:/usr/share/java/slf4j-simple.jar
# shellcheck disable=SC2086
exec java ${JVMFLAGS:--Xmx256m -XX:+UseSerialGC} -Dzookeeper.log.dir="$ZOO_DATA_LOG_DIR" \
  -cp "$CP" org.apache.zookeeper.server.quorum.QuorumPeerMain "$CFG"
