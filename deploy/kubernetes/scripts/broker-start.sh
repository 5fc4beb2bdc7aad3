#!/bin/sh
# The broker container's command: this pod's identity as KAFKA_* variables, then the zkafka image's entrypoint
# (which writes server.properties from every KAFKA_* variable and execs kafka-server-start: PID 1 gets SIGTERM,
# controlled shutdown).
#
#   broker.id            = the StatefulSet ordinal (kafka-0 -> 0, kafka-1 -> 1, ...)
#   broker.rack          = the node's zone, written to RACK_FILE by the init container (node-rack.py)
#   advertised.listeners = PLAINTEXT://<pod>.<HEADLESS_SERVICE>.<POD_NAMESPACE>.svc.<CLUSTER_DOMAIN>:<LISTENER_PORT>
#                          (the pod's stable DNS name through the headless Service)
# Helper variables are not named KAFKA_*: the entrypoint would turn them into (unknown) broker configs.
set -eu

ordinal=${HOSTNAME##*-}
case "$ordinal" in
  ''|*[!0-9]*) echo "broker-start: no StatefulSet ordinal at the end of HOSTNAME=$HOSTNAME" >&2; exit 1 ;;
esac
: "${HEADLESS_SERVICE:?broker-start: HEADLESS_SERVICE (the StatefulSet serviceName) is not set}"
: "${POD_NAMESPACE:?broker-start: POD_NAMESPACE (fieldRef metadata.namespace) is not set}"
rack_file=${RACK_FILE:-/etc/zkafka-rack/rack}
rack=$(cat "$rack_file" 2>/dev/null || true)
if [ -z "$rack" ]; then
  echo "broker-start: no rack in $rack_file (the node-rack init container writes it)" >&2
  exit 1
fi

export KAFKA_BROKER_ID="$ordinal"
export KAFKA_BROKER_RACK="$rack"
export KAFKA_ADVERTISED_LISTENERS="PLAINTEXT://${HOSTNAME}.${HEADLESS_SERVICE}.${POD_NAMESPACE}.svc.${CLUSTER_DOMAIN:-cluster.local}:${LISTENER_PORT:-9092}"
exec zkafka-entrypoint "$@"
