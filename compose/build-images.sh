#!/usr/bin/env bash
# Build the images of the compose stack and of the container tests:
#   zkafka-broker:local     compose/Dockerfile            (this repo's wheel + its core dependencies)
#   zkafka-zookeeper:local  compose/zookeeper/Dockerfile  (Debian's ZooKeeper, official-image env vars)
#
#   compose/build-images.sh [--offline | --online] [--force-base]
#
#   --offline     build both FROM zkafka-base:bookworm (made by compose/offline-base.sh, Debian packages
#                 only); no container registry needed.
#   --online      build FROM python:3.11-slim / debian:bookworm-slim (present locally or pulled).
#   (neither)     online if those base images are present or a registry answers, else offline.
#   --force-base  rebuild zkafka-base:bookworm (offline-base.sh --force).
#
# Wheels are built on the host with the venv's pip into compose/.build/wheels (gitignored): the
# image installs with `pip install --no-index`, so the build itself needs no network and no CA.
# Env: VENV (default .venv), BROKER_TAG, ZK_TAG, ONLINE_BROKER_BASE, ONLINE_ZK_BASE.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(dirname "$HERE")
cd "$ROOT"

MODE=auto
FORCE_BASE=
while [ $# -gt 0 ]; do
  case "$1" in
    --offline) MODE=offline ;;
    --online) MODE=online ;;
    --force-base) FORCE_BASE=--force ;;
    -h|--help) sed -n '2,18p' "$0"; exit 0 ;;
    *) echo "unknown argument: $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done

BROKER_TAG=${BROKER_TAG:-zkafka-broker:local}
ZK_TAG=${ZK_TAG:-zkafka-zookeeper:local}
OFFLINE_BASE=zkafka-base:bookworm
ONLINE_BROKER_BASE=${ONLINE_BROKER_BASE:-python:3.11-slim}
ONLINE_ZK_BASE=${ONLINE_ZK_BASE:-debian:bookworm-slim}
VENV=${VENV:-$ROOT/.venv}
WHEELS=$HERE/.build/wheels

ts() { date +%H:%M:%S; }
log() { echo "[build-images $(ts)] $*" >&2; }
die() { log "ERROR: $*"; exit 1; }
size() { docker image inspect -f '{{.Size}}' "$1" | awk '{printf "%.0f MB", $1/1e6}'; }

docker info >/dev/null 2>&1 || die "no Docker engine answers 'docker info' (run compose/ensure-docker.sh first)"

# -- 1. wheels on the host ------------------------------------------------------------------------
t0=$(date +%s)
PIP=$VENV/bin/pip
[ -x "$PIP" ] || die "no pip at $PIP (make install creates .venv; or set VENV=)"
host_py=$("$VENV/bin/python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
[ "$host_py" = 3.11 ] || die "the venv's Python is $host_py: the images run Debian bookworm's Python 3.11, so the wheels must be cp311"
log "building wheels (zkafka + core dependencies, no extras) -> ${WHEELS#"$ROOT"/}"
rm -rf "$WHEELS"; mkdir -p "$WHEELS"
"$PIP" wheel -q --disable-pip-version-check --wheel-dir "$WHEELS" "$ROOT" 2> >(grep -v "is ignored: it is neither a file nor a directory" >&2) \
  || die "pip wheel failed"
ls "$WHEELS"/zkafka-*.whl >/dev/null 2>&1 || die "no zkafka wheel in $WHEELS"
if ls "$WHEELS" | grep -q -i -E '^(pyspark|pyarrow)-'; then die "pyspark/pyarrow ended up in the wheelhouse (they belong to the spark extra only)"; fi
log "wheels: $(ls "$WHEELS" | wc -l) files, $(du -sm "$WHEELS" | cut -f1) MB ($(( $(date +%s) - t0 )) s)"

# -- 2. online or offline -------------------------------------------------------------------------
have_or_pull() {
  docker image inspect "$1" >/dev/null 2>&1 && return 0
  log "trying to pull $1"
  timeout 60 docker pull -q "$1" >/dev/null 2>&1
}
if [ "$MODE" = auto ]; then
  if have_or_pull "$ONLINE_BROKER_BASE" && have_or_pull "$ONLINE_ZK_BASE"; then MODE=online; else
    log "no $ONLINE_BROKER_BASE / $ONLINE_ZK_BASE locally and no registry answers: building offline"
    MODE=offline
  fi
fi
if [ "$MODE" = online ]; then
  have_or_pull "$ONLINE_BROKER_BASE" || die "cannot get $ONLINE_BROKER_BASE (no registry? use --offline)"
  have_or_pull "$ONLINE_ZK_BASE" || die "cannot get $ONLINE_ZK_BASE (no registry? use --offline)"
  BROKER_BASE=$ONLINE_BROKER_BASE ZK_BASE=$ONLINE_ZK_BASE
else
  "$HERE/offline-base.sh" $FORCE_BASE || die "offline-base.sh failed"
  BROKER_BASE=$OFFLINE_BASE ZK_BASE=$OFFLINE_BASE
fi
log "mode: $MODE (broker FROM $BROKER_BASE, zookeeper FROM $ZK_BASE)"

# -- 3. images ------------------------------------------------------------------------------------
t1=$(date +%s)
log "docker build $BROKER_TAG"
docker build --force-rm -q --build-arg BASE_IMAGE="$BROKER_BASE" -t "$BROKER_TAG" -f "$HERE/Dockerfile" "$HERE" >/dev/null \
  || die "docker build of $BROKER_TAG failed (rerun without -q: docker build --force-rm --build-arg BASE_IMAGE=$BROKER_BASE -t $BROKER_TAG compose/)"
t2=$(date +%s)
log "$BROKER_TAG: $(size "$BROKER_TAG") ($((t2 - t1)) s)"
docker run --rm --entrypoint python3 "$BROKER_TAG" -c \
  "import brokers.app, confluent_kafka, kazoo, kio, zstandard, lz4, snappy, crc32c, msgpack, aiohttp; print('imports ok; librdkafka', confluent_kafka.libversion()[0])" >&2 \
  || die "$BROKER_TAG cannot import its dependencies"
docker run --rm --entrypoint sh "$BROKER_TAG" -c 'for t in kafka-server-start zkafka iptables ip ps; do command -v $t >/dev/null || exit 1; done' \
  || die "$BROKER_TAG lacks kafka-server-start, zkafka, iptables or ip"

log "docker build $ZK_TAG"
docker build --force-rm -q --build-arg BASE_IMAGE="$ZK_BASE" -t "$ZK_TAG" "$HERE/zookeeper" >/dev/null \
  || die "docker build of $ZK_TAG failed (rerun without -q: docker build --force-rm --build-arg BASE_IMAGE=$ZK_BASE -t $ZK_TAG compose/zookeeper)"
t3=$(date +%s)
log "$ZK_TAG: $(size "$ZK_TAG") ($((t3 - t2)) s)"
# Dangling images from earlier builds of the same tags.
docker image prune -f --filter "dangling=true" >/dev/null 2>&1 || true
log "done in $((t3 - t0)) s: $BROKER_TAG, $ZK_TAG"
