#!/usr/bin/env bash
# The zkafka image's entrypoint: writes server.properties from KAFKA_* environment variables the way
# Confluent's images do, then execs the broker (PID 1 gets SIGTERM -> controlled shutdown).
#
#   KAFKA_BROKER_ID=1                      -> broker.id=1
#   KAFKA_ZOOKEEPER_CONNECT=zk1:2181,...   -> zookeeper.connect=zk1:2181,...
#   KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR -> offsets.topic.replication.factor
#   rule: strip KAFKA_, lowercase, '___' -> '-', '__' -> '_', '_' -> '.'
#
# Defaults: log.dirs=/var/lib/zkafka/data, listeners=PLAINTEXT://0.0.0.0:9092 advertised as
# PLAINTEXT://<hostname>:9092. JVM-style variables of Confluent's images (KAFKA_HEAP_OPTS, KAFKA_OPTS,
# KAFKA_JMX_*, KAFKA_LOG4J_*, ...) are ignored. ZKAFKA_LOG_LEVEL (DEBUG/INFO/WARNING/ERROR) sets the
# broker's log level. A mounted /etc/zkafka/server.properties is used as is when ZKAFKA_CONFIG_FROM_ENV=false.
#
# Arguments: none or options (--override k=v, --log-level ...) -> passed to kafka-server-start;
# `standalone [options]` -> ZooKeeper in the background (zookeeper-server, standalone, its data in
# /var/lib/zkafka/zookeeper, its output prefixed `zookeeper| `) and the broker connected to it at
# 127.0.0.1:2181 (unless KAFKA_ZOOKEEPER_CONNECT says otherwise): one container, one cluster (ZkafkaContainer);
# anything else (e.g. `zookeeper-server`, `zkafka demo groups ...`, `bash`) is exec'd instead of the broker.
set -euo pipefail

if [ "${1:-}" = standalone ]; then
  shift
  export ZOO_CONF_DIR=/var/lib/zkafka/zookeeper/conf ZOO_DATA_DIR=/var/lib/zkafka/zookeeper/data \
    ZOO_DATA_LOG_DIR=/var/lib/zkafka/zookeeper/datalog
  (unset ZOO_SERVERS; exec zookeeper-server 2>&1 | sed -u 's/^/zookeeper| /') &
  export KAFKA_ZOOKEEPER_CONNECT=${KAFKA_ZOOKEEPER_CONNECT:-127.0.0.1:2181}
  # ZooKeeper's JVM starts beside the broker: on a loaded machine it may take longer than the broker's default
  # 18 s first connection, and the broker would give up (as ZkafkaCluster's brokers, wait up to 120 s)
  export KAFKA_ZOOKEEPER_CONNECTION_TIMEOUT_MS=${KAFKA_ZOOKEEPER_CONNECTION_TIMEOUT_MS:-120000}
elif [ "$#" -gt 0 ] && [ "${1#-}" = "$1" ]; then
  exec "$@"
fi

CONFIG=${ZKAFKA_CONFIG:-/etc/zkafka/server.properties}

if [ "${ZKAFKA_CONFIG_FROM_ENV:-true}" = true ]; then
  : "${KAFKA_ZOOKEEPER_CONNECT:?KAFKA_ZOOKEEPER_CONNECT is required (e.g. zk1:2181,zk2:2181,zk3:2181)}"
  export KAFKA_LOG_DIRS=${KAFKA_LOG_DIRS:-/var/lib/zkafka/data}
  if [ -z "${KAFKA_LISTENERS:-}" ]; then
    export KAFKA_LISTENERS=PLAINTEXT://0.0.0.0:9092
    export KAFKA_ADVERTISED_LISTENERS=${KAFKA_ADVERTISED_LISTENERS:-PLAINTEXT://$(hostname):9092}
  fi

  mkdir -p "$(dirname "$CONFIG")"
  tmp=$CONFIG.tmp
  {
    echo "# written by zkafka-entrypoint from KAFKA_* environment variables"
    env | LC_ALL=C sort | while IFS='=' read -r name value; do
      case "$name" in
        KAFKA_*) ;;
        *) continue ;;
      esac
      case "$name" in
        KAFKA_HEAP_OPTS|KAFKA_OPTS|KAFKA_JVM_PERFORMANCE_OPTS|KAFKA_GC_LOG_OPTS|KAFKA_JMX_*|KAFKA_LOG4J_*| \
        KAFKA_TOOLS_LOG4J_LOGLEVEL|KAFKA_DEBUG|KAFKA_VERSION|KAFKA_HOME) continue ;;
      esac
      key=${name#KAFKA_}
      key=$(printf '%s' "$key" | tr '[:upper:]' '[:lower:]' | sed -e 's/___/-/g' -e 's/__/\x01/g' -e 's/_/./g' -e 's/\x01/_/g')
      printf '%s=%s\n' "$key" "$value"
    done
  } >"$tmp"
  mv "$tmp" "$CONFIG"
fi

for dir in $(sed -n 's/^log\.dirs=//p' "$CONFIG" | tr ',' ' '); do mkdir -p "$dir"; done
echo "zkafka-entrypoint: $CONFIG:" >&2
sed 's/^/  /' "$CONFIG" >&2

exec kafka-server-start "$CONFIG" --log-level "${ZKAFKA_LOG_LEVEL:-INFO}" "$@"
