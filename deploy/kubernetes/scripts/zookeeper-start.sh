#!/bin/sh
# The ZooKeeper container's command: ZOO_MY_ID = StatefulSet ordinal + 1 (zookeeper-0 is server.1 of ZOO_SERVERS,
# ZooKeeper's ids start at 1), then the zkafka image's zookeeper-server (zoo.cfg from the ZOO_* variables, myid
# written once into the data volume, the JVM exec'd in the foreground: PID 1 gets SIGTERM).
set -eu

ordinal=${HOSTNAME##*-}
case "$ordinal" in
  ''|*[!0-9]*) echo "zookeeper-start: no StatefulSet ordinal at the end of HOSTNAME=$HOSTNAME" >&2; exit 1 ;;
esac
export ZOO_MY_ID=$((ordinal + 1))
exec zookeeper-server "$@"
