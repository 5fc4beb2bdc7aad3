#!/usr/bin/env bash
# Build the base image zkafka-base:bookworm from Debian packages only (no container registry needed):
# debootstrap bookworm (minbase) with python3, venv, Java 17, ZooKeeper and network tools, then
# `docker import` the root filesystem without apt caches, docs, man pages and locales.
#
#   offline-base.sh [--force] [--tag IMAGE]
#
# Skips everything when the image already exists (unless --force). Uses the Debian mirror apt already
# uses on this machine (first http(s) URI of the main archive in /etc/apt/sources.list{,.d}), override
# with DEBIAN_MIRROR=. Work dir: $ZKAFKA_ROOTFS_DIR (default: a fresh dir under /var/tmp), removed after.
set -euo pipefail

TAG=zkafka-base:bookworm
FORCE=0
while [ $# -gt 0 ]; do
  case "$1" in
    --force) FORCE=1 ;;
    --tag) TAG=$2; shift ;;
    -h|--help) sed -n '2,11p' "$0"; exit 0 ;;
    *) echo "unknown argument: $1" >&2; exit 2 ;;
  esac
  shift
done

SUITE=bookworm
PACKAGES=python3,python3-venv,openjdk-17-jre-headless,zookeeper,iproute2,iptables,procps,ca-certificates,netcat-openbsd
KEYRING=/usr/share/keyrings/debian-archive-keyring.gpg

ts() { date +%H:%M:%S; }
log() { echo "[offline-base $(ts)] $*" >&2; }
die() { log "ERROR: $*"; exit 1; }

docker info >/dev/null 2>&1 || die "no Docker engine answers 'docker info' (run compose/ensure-docker.sh first)"

if [ "$FORCE" = 0 ] && docker image inspect "$TAG" >/dev/null 2>&1; then
  log "$TAG already exists ($(docker image inspect -f '{{.Size}}' "$TAG" | awk '{printf "%.0f MB", $1/1e6}')); nothing to do (--force rebuilds)"
  exit 0
fi

[ "$(id -u)" = 0 ] || die "debootstrap needs root"
command -v debootstrap >/dev/null 2>&1 || die "debootstrap is not installed (apt-get install -y debootstrap, or run compose/ensure-docker.sh)"
[ -r "$KEYRING" ] || die "Debian archive keyring $KEYRING missing (apt-get install -y debian-archive-keyring)"

# The mirror apt uses here: deb822 files (URIs:) and one-line lists (deb URI suite ...), main archive
# only (not -security, not third-party repos).
find_mirror() {
  local f
  for f in /etc/apt/sources.list.d/*.sources; do
    [ -r "$f" ] || continue
    awk 'tolower($1)=="uris:" {for (i=2;i<=NF;i++) print $i}' "$f"
  done
  for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
    [ -r "$f" ] || continue
    awk '$1=="deb" { for (i=2;i<=NF;i++) if ($i ~ /^(https?|file):/) { print $i; break } }' "$f"
  done
}
MIRROR=${DEBIAN_MIRROR:-$(find_mirror | grep -E '/debian/?$' | grep -v -- '-security' | head -n1 || true)}
[ -n "$MIRROR" ] || die "could not find a Debian mirror in /etc/apt/sources.list{,.d}; set DEBIAN_MIRROR=http://..."
log "mirror: $MIRROR, suite: $SUITE, packages: $PACKAGES"

WORK=${ZKAFKA_ROOTFS_DIR:-$(mktemp -d /var/tmp/zkafka-rootfs.XXXXXX)}
ROOTFS=$WORK/rootfs
cleanup() {
  # debootstrap may leave proc/sys mounted on failure
  for m in proc sys dev/pts dev; do mountpoint -q "$ROOTFS/$m" 2>/dev/null && umount -l "$ROOTFS/$m" || true; done
  rm -rf --one-file-system "$WORK"
}
trap cleanup EXIT
rm -rf --one-file-system "$ROOTFS"; mkdir -p "$ROOTFS"

t0=$(date +%s)
log "debootstrap --variant=minbase $SUITE -> $ROOTFS (log: $WORK/debootstrap.log)"
if ! debootstrap --variant=minbase --keyring="$KEYRING" --include="$PACKAGES" \
    "$SUITE" "$ROOTFS" "$MIRROR" >"$WORK/debootstrap.log" 2>&1; then
  tail -n 40 "$WORK/debootstrap.log" >&2
  [ -f "$ROOTFS/debootstrap/debootstrap.log" ] && tail -n 40 "$ROOTFS/debootstrap/debootstrap.log" >&2
  die "debootstrap failed (mirror $MIRROR reachable? see the log above)"
fi
t1=$(date +%s)
log "debootstrap done in $((t1 - t0)) s ($(du -sm --one-file-system "$ROOTFS" | cut -f1) MB)"

# Sanity: what the images need must be there.
# (inside the chroot: absolute symlinks such as /etc/alternatives/nc must resolve in the rootfs)
for f in /usr/bin/python3 /usr/bin/java /usr/share/java/zookeeper.jar /usr/bin/nc /usr/sbin/iptables /usr/sbin/ip /usr/bin/ps; do
  chroot "$ROOTFS" test -e "$f" || die "rootfs lacks $f"
done
python_version=$(chroot "$ROOTFS" /usr/bin/python3 -c 'import sys; print("%d.%d.%d" % sys.version_info[:3])')
log "rootfs: python $python_version, $(chroot "$ROOTFS" dpkg-query -W -f='${Version}' zookeeper | sed 's/^/zookeeper /'), $(chroot "$ROOTFS" dpkg-query -W -f='.' | wc -c) packages"

# apt sources inside the image: the same mirror, with updates and security.
cat >"$ROOTFS/etc/apt/sources.list" <<SRC
deb $MIRROR $SUITE main
deb $MIRROR $SUITE-updates main
deb ${MIRROR%/debian*}/debian-security $SUITE-security main
SRC

log "docker import (excluding apt caches, docs, man pages, locales) -> $TAG"
tar -C "$ROOTFS" -c --numeric-owner \
    --exclude='./var/cache/apt/*.bin' --exclude='./var/cache/apt/archives/*.deb' \
    --exclude='./var/cache/apt/archives/partial/*' --exclude='./var/lib/apt/lists/*' \
    --exclude='./usr/share/doc/*' --exclude='./usr/share/man/*' --exclude='./usr/share/info/*' \
    --exclude='./usr/share/locale/*' --exclude='./usr/share/icons/*' --exclude='./usr/share/lintian/*' \
    --exclude='./var/log/*' --exclude='./debootstrap' \
    --exclude='./proc/*' --exclude='./sys/*' --exclude='./dev/*' . \
  | docker import \
      --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
      --change 'ENV LANG=C.UTF-8' \
      --change 'CMD ["/bin/bash"]' \
      -m "debootstrap $SUITE minbase + $PACKAGES from $MIRROR" \
      - "$TAG" >/dev/null \
  || die "docker import failed"
t2=$(date +%s)
log "imported $TAG in $((t2 - t1)) s: $(docker image inspect -f '{{.Size}}' "$TAG" | awk '{printf "%.0f MB", $1/1e6}')"
docker run --rm "$TAG" sh -c 'python3 --version && java -version 2>&1 | head -n1' >&2 || die "smoke test of $TAG failed"
log "done ($((t2 - t0)) s total)"
