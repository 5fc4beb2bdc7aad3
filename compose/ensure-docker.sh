#!/usr/bin/env bash
# Make sure a Docker engine answers `docker info` on this machine type (Debian 12, root, no engine
# running on a fresh CI machine). Idempotent and non-interactive (CI=true, no stdin):
#   - an engine that already answers is left alone (never start a second dockerd beside it);
#   - otherwise installs Debian's docker.io + debootstrap (+ docker-compose v1 if no compose is
#     available) and starts dockerd in the background, then waits until it answers.
# Env: DOCKERD_LOG (default /tmp/dockerd.log), DOCKERD_WAIT_SECONDS (default 30).
set -euo pipefail

log() { echo "[ensure-docker] $*" >&2; }
die() { log "ERROR: $*"; exit 1; }

DOCKERD_LOG=${DOCKERD_LOG:-/tmp/dockerd.log}
DOCKERD_WAIT_SECONDS=${DOCKERD_WAIT_SECONDS:-30}
export DEBIAN_FRONTEND=noninteractive

have() { command -v "$1" >/dev/null 2>&1; }
have_compose() { docker compose version >/dev/null 2>&1 || have docker-compose; }

missing=()
have dockerd || missing+=(docker.io)
have debootstrap || missing+=(debootstrap)
have_compose || missing+=(docker-compose)

if docker info >/dev/null 2>&1; then
  log "engine already answers ($(docker version --format '{{.Server.Version}}' 2>/dev/null || echo '?'))"
  # Tools only; do not touch the running engine.
  missing=("${missing[@]/docker.io}")
fi

pkgs=()
for p in "${missing[@]}"; do [ -n "$p" ] && pkgs+=("$p"); done
if [ "${#pkgs[@]}" -gt 0 ]; then
  [ "$(id -u)" = 0 ] || die "need root to apt-get install ${pkgs[*]}"
  log "installing: ${pkgs[*]}"
  apt-get update -qq </dev/null
  apt-get install -y -qq --no-install-recommends "${pkgs[@]}" </dev/null >/dev/null \
    || die "apt-get install ${pkgs[*]} failed"
fi

if ! docker info >/dev/null 2>&1; then
  have dockerd || die "dockerd not found after installing docker.io"
  if pgrep -x dockerd >/dev/null 2>&1; then
    log "a dockerd process exists but does not answer yet; waiting for it (not starting a second one)"
  else
    log "starting dockerd (log: $DOCKERD_LOG)"
    setsid nohup dockerd >"$DOCKERD_LOG" 2>&1 </dev/null &  # own session: outlives the caller
  fi
  deadline=$(( $(date +%s) + DOCKERD_WAIT_SECONDS ))
  until docker info >/dev/null 2>&1; do
    if [ "$(date +%s)" -ge "$deadline" ]; then
      tail -n 30 "$DOCKERD_LOG" >&2 2>/dev/null || true
      die "dockerd did not answer within ${DOCKERD_WAIT_SECONDS}s (see $DOCKERD_LOG)"
    fi
    sleep 0.2
  done
  log "engine up ($(docker version --format '{{.Server.Version}}'))"
fi
