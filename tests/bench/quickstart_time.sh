#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# README command 1 on a fresh Debian 12 system, timed from `git clone` to
# the first successful scrape of /metrics. The fresh system is a debootstrap
# chroot (built once and cached as a tarball; not timed), unpacked anew for
# every round so that apt installs everything from the mirror each time.
# Prints each round's wall time and the CPU time the chroot's processes
# used (the machine is shared: CPU time is the steadier number), then the
# medians. Not run by ctest.
#   usage (root): tests/bench/quickstart_time.sh [ROUNDS] [WORKDIR]
#   e.g.          tests/bench/quickstart_time.sh 3 /var/tmp/dw-quickstart
# MIRROR overrides the Debian mirror (default: the first URIs/deb line of
# this machine's apt sources).
set -euo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
rounds=${1:-1}
work=${2:-/var/tmp/dw-quickstart}
[[ $(id -u) -eq 0 ]] || { echo "quickstart_time.sh: must run as root (debootstrap, chroot)" >&2; exit 1; }
command -v debootstrap >/dev/null || { echo "quickstart_time.sh: needs debootstrap (apt-get install debootstrap)" >&2; exit 1; }
mirror=${MIRROR:-$(grep -rhoE '^(URIs:|deb) +https?://[^ ]+/debian/?( |$)' \
  /etc/apt/sources.list /etc/apt/sources.list.d/ 2>/dev/null | awk 'NR == 1 {print $2}' || true)}
mirror=${mirror:-http://deb.debian.org/debian}
mkdir -p "$work"
base="$work/bookworm-base.tar"
if [[ ! -f $base ]]; then
  echo "quickstart_time.sh: debootstrap bookworm from $mirror (once; not timed)"
  rm -rf "$work/base"
  # git and ca-certificates: what `git clone` itself needs on a new machine.
  debootstrap --include=git,ca-certificates bookworm "$work/base" "$mirror" >"$work/debootstrap.log"
  tar -C "$work/base" -cf "$base" .
  rm -rf "$work/base"
fi
# What is cloned: the committed HEAD of this checkout, as a bundle.
git -C "$src" bundle create "$work/drivewatch.bundle" HEAD 2>/dev/null

root=""
runner=""
cleanup() {
  if [[ -n $runner ]] && kill -0 "$runner" 2>/dev/null; then
    kill -- -"$runner" 2>/dev/null || true
    wait "$runner" 2>/dev/null || true
  fi
  if [[ -n $root ]]; then
    for m in dev/pts dev sys proc; do umount -l "$root/$m" 2>/dev/null || true; done
    rm -rf --one-file-system "$root"
  fi
}
trap cleanup EXIT

walls=()
cpus=()
for ((r = 1; r <= rounds; r++)); do
  root="$work/root"
  rm -rf --one-file-system "$root"
  mkdir -p "$root"
  tar -C "$root" -xf "$base"
  cat >"$root/etc/apt/sources.list" <<EOF
deb $mirror bookworm main
deb $mirror bookworm-updates main
deb ${mirror%/debian*}/debian-security bookworm-security main
EOF
  cp /etc/resolv.conf "$root/etc/resolv.conf"
  printf '#!/bin/sh\nexit 101\n' >"$root/usr/sbin/policy-rc.d"  # no daemons started by apt
  chmod +x "$root/usr/sbin/policy-rc.d"
  cp "$work/drivewatch.bundle" "$root/root/"
  mount -t proc proc "$root/proc"
  mount --rbind /sys "$root/sys"
  mount --bind /dev "$root/dev"
  mount --bind /dev/pts "$root/dev/pts"
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  log="$work/round$r.log"
  start=$(date +%s.%N)
  setsid chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root \
    bash -c "TIMEFORMAT='quickstart cpu %U user %S sys'; time { cd /root && \
      git clone -q drivewatch.bundle drivewatch && cd drivewatch && \
      scripts/quickstart.sh --web.listen-address=127.0.0.1:$port; }" \
    >"$log" 2>&1 &
  runner=$!
  until curl -sf "http://127.0.0.1:$port/metrics" 2>/dev/null | grep -q '^drivewatch_'; do
    if ! kill -0 "$runner" 2>/dev/null; then
      echo "quickstart_time.sh: round $r: quickstart.sh exited before /metrics answered; $log says:" >&2
      tail -20 "$log" >&2
      exit 1
    fi
    sleep 0.5
  done
  wall=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN {print b - a}')
  # CPU time of everything the round ran (clone, apt, compiler, daemon):
  # bash's `time` prints it once the daemon, alone in this session, has
  # stopped on SIGTERM.
  daemon=$(pgrep -s "$runner" -x drivewatch || true)
  [[ -n $daemon ]] && kill -TERM "$daemon"
  wait "$runner" 2>/dev/null || true
  runner=""
  cpu=$(awk '/^quickstart cpu/ {print $3 + $5}' "$log")
  printf 'round %d: clone to first scrape %.1f s wall, %s s CPU (user+sys)\n' "$r" "$wall" "${cpu:-?}"
  walls+=("$wall")
  cpus+=("${cpu:-0}")
  for m in dev/pts dev sys proc; do umount -l "$root/$m" 2>/dev/null || true; done
  rm -rf --one-file-system "$root"
  root=""
done
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
printf 'median over %d rounds: %.1f s wall, %s s CPU; nproc %s, load before the last round %s\n' \
  "$rounds" "$(median "${walls[@]}")" "$(median "${cpus[@]}")" "$(nproc)" "$(cut -d' ' -f1-3 /proc/loadavg)"
