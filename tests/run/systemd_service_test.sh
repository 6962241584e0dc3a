#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The shipped unit under a real systemd: this machine's own root file
# system, under an overlay whose upper layer is a tmpfs (nothing is written
# below it), boots in systemd-nspawn with drivewatch installed by
# `cmake --install` and its generated unit unchanged. The container shares
# the host's network, so the host scrapes the daemon with curl, and its
# processes are the host's to read in /proc.
#   1  the unit alone: the daemon runs as root with CAP_SYS_ADMIN (the NVMe
#      admin commands) and no other capability, under seccomp and
#      no_new_privs;
#   2  with the drop-ins systemd/phases.conf and systemd/pgbench.conf (and
#      the target directory's ReadWritePaths= line): those four
#      capabilities more, and a scheduled pgbench phase completes (its
#      server as the postgres account, JIT off) on a directory of an ext4
#      file system on a loop device, its results exported;
#   3  nothing of the run is left (no server, no work directory, no record),
#      and the unit's journal has no warning.
# Root (loop devices, mounts, nspawn); ~15 s.
#   usage: systemd_service_test.sh BUILD_DIR
set -euo pipefail
build=$(realpath "$1")
root="" upper="" mnt="" loopdev="" nspawn="" images=""
on_exit() {
  if [[ -n $nspawn ]] && kill -0 "$nspawn" 2>/dev/null; then
    kill -TERM "$nspawn" 2>/dev/null || true
    for _ in $(seq 300); do kill -0 "$nspawn" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$nspawn" 2>/dev/null || true
  fi
  for m in "$mnt" "$root" "$upper"; do
    [[ -n $m ]] && { umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true; }
  done
  [[ -n $loopdev ]] && losetup -d "$loopdev" 2>/dev/null || true
  [[ -n $images ]] && rm -rf "$images"
}
source "$(dirname "$0")/lib.sh"
[[ $(id -u) == 0 ]] || { echo "SKIP: needs root for mounts and systemd-nspawn"; exit 77; }
command -v systemd-nspawn >/dev/null ||
  fail "no systemd-nspawn (scripts/install-deps.sh --tests installs systemd-container)"
[[ -x /lib/systemd/systemd ]] || fail "no systemd (scripts/install-deps.sh --tests installs it)"
machine=dw-service-$$

# The target's file system: ext4 on a loop device, given to the container
# at /srv/scratch. Its image is outside /tmp and /var/tmp, which the unit
# makes private (PrivateTmp=): the interlocks must see a loop device's
# backing file to tell which bytes it reaches.
images=$(mktemp -d /srv/dw-systemd-service-test.XXXXXX)
truncate -s 512M "$images/fs.img"
mkfs.ext4 -q -F "$images/fs.img" >/dev/null
loopdev=$(losetup --show -f "$images/fs.img")
chmod 755 "$work"
mnt=$work/mnt
mkdir -p "$mnt"
mount "$loopdev" "$mnt"

# The container's root: / below, a tmpfs above.
upper=$work/upper
root=$work/root
mkdir -p "$upper" "$root"
mount -t tmpfs -o size=512M tmpfs "$upper"
mkdir -p "$upper/upper" "$upper/work"
mount -t overlay overlay -o "lowerdir=/,upperdir=$upper/upper,workdir=$upper/work" "$root"

prefix=/opt/drivewatch
units=$root/etc/systemd/system
DESTDIR=$root cmake --install "$build" --prefix "$prefix" >/dev/null
mkdir -p "$units/drivewatch.service.d" "$root/srv/scratch"
cp "$root$prefix/lib/systemd/system/drivewatch.service" "$units/"
# Booted into a target of its own: the daemon and what it needs, none of
# the services this machine has enabled.
printf '[Unit]\nDescription=drivewatch under its shipped unit\nWants=drivewatch.service\n' \
  >"$units/dw-test.target"
# The port: picked now, the container shares the host's network.
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
url=http://127.0.0.1:$port/metrics
config=$root$prefix/etc/drivewatch/drivewatch.toml
cat >"$config" <<TOML
[web]
listen_address = "127.0.0.1:$port"
[probes.read_latency]
enabled = false
[[aging.targets]]
name = "scratch"
directory = "/srv/scratch"
file_size = "16MiB"
free_space_reserve = 0.05
TOML

daemon=""
journal() {  # the unit's journal, read through the container's root
  journalctl -q --no-pager --root="/proc/$daemon/root" -u drivewatch.service 2>&1 |
    tail -n "${1:-30}"
}
boot() {  # the container, until the daemon serves: sets nspawn and daemon
  systemd-nspawn -q -D "$root" --boot --register=no --keep-unit -M "$machine" \
    --bind="$mnt:/srv/scratch" -- systemd.unit=dw-test.target >"$work/nspawn.log" 2>&1 &
  nspawn=$!
  daemon=""
  for _ in $(seq 600); do
    kill -0 "$nspawn" 2>/dev/null || fail "the container stopped: $(tail -20 "$work/nspawn.log")"
    [[ -n $daemon ]] || daemon=$(pgrep -f "^$prefix/bin/drivewatch " | head -1 || true)
    [[ -n $daemon ]] && curl -fsS "$url" -o "$work/metrics.txt" 2>/dev/null && return 0
    sleep 0.1
  done
  fail "the daemon did not serve within 60 s: $(tail -20 "$work/nspawn.log")"
}
halt() {  # the container powered off (nspawn passes SIGTERM on as a halt)
  kill -TERM "$nspawn"
  for _ in $(seq 300); do kill -0 "$nspawn" 2>/dev/null || { nspawn=""; return 0; }; sleep 0.1; done
  fail "the container did not power off within 30 s"
}
check_caps() {  # HEX WHAT: the daemon's effective capabilities, and its sandbox
  local caps
  caps=$(awk '/^CapEff:/ {print $2}' "/proc/$daemon/status")
  [[ $caps == "$1" ]] || fail "the daemon's effective capabilities are $caps, expected $1 ($2)"
  [[ $(awk '/^Uid:/ {print $2}' "/proc/$daemon/status") == 0 ]] || fail "the daemon does not run as root"
  grep -q '^NoNewPrivs:[[:space:]]*1' "/proc/$daemon/status" || fail "NoNewPrivileges= is not applied"
  grep -q '^Seccomp:[[:space:]]*2' "/proc/$daemon/status" || fail "SystemCallFilter= is not applied"
}

# --- 1. the unit alone: CAP_SYS_ADMIN and nothing else --------------------------
boot
check_caps "$(printf '%016x' $((1 << 21)))" "CAP_SYS_ADMIN alone"
halt
pass "1 the shipped unit: root with CAP_SYS_ADMIN alone, seccomp and no_new_privs on"

# --- 2. with the drop-ins, a scheduled pgbench phase -------------------------
for dropin in phases pgbench; do
  cp "$root$prefix/share/drivewatch/systemd/$dropin.conf" "$units/drivewatch.service.d/"
done
printf '[Service]\nReadWritePaths=/srv/scratch\n' >"$units/drivewatch.service.d/scratch.conf"
cat >>"$config" <<TOML
[[aging.phases]]
name = "tpcb"
kind = "pgbench"
target = "scratch"
scale = 1
clients = 2
run_time = "3s"
interval = "30d"
TOML
"$root$prefix/bin/drivewatch" check-config "$config" >/dev/null ||
  fail "check-config refused the test's config"
boot
# CAP_SYS_ADMIN, CAP_SETUID, CAP_SETGID, CAP_CHOWN, CAP_KILL
check_caps "$(printf '%016x' $((1 << 21 | 1 << 7 | 1 << 6 | 1 << 0 | 1 << 5)))" \
  "CAP_SYS_ADMIN and the drop-in's CAP_SETUID, CAP_SETGID, CAP_CHOWN, CAP_KILL"
done_pattern='drivewatch_phase_result_operations_per_second\{.*phase="tpcb".*\}'
for i in $(seq 1800); do
  kill -0 "$nspawn" 2>/dev/null || fail "the container stopped: $(tail -20 "$work/nspawn.log")"
  curl -fsS "$url" -o "$work/metrics.txt" 2>/dev/null &&
    grep -Eq "$done_pattern" "$work/metrics.txt" && break
  if ((i % 20 == 0)) && journal 100 | grep -Eq 'phase tpcb refused|error: phase tpcb'; then
    fail "the phase did not run under the unit; its journal: $(journal)"
  fi
  sleep 0.1
done
grep -Eq "$done_pattern" "$work/metrics.txt" ||
  fail "no pgbench result was exported within 180 s; the unit's journal: $(journal)"


python3 - "$work/metrics.txt" <<'PY' || fail "pgbench's results: $(grep 'phase="tpcb"' "$work/metrics.txt" | head)"
import re, sys
text = open(sys.argv[1]).read()
def value(name, **labels):
    for line in text.splitlines():
        if line.startswith(name + "{") and all('%s="%s"' % kv in line for kv in labels.items()) \
                and 'phase="tpcb"' in line:
            return float(line.rsplit(" ", 1)[1])
    raise SystemExit("no %s %s" % (name, labels))
assert value("drivewatch_phase_result_operations_per_second", measure="transaction") > 0
assert value("drivewatch_phase_result_operations", measure="fsync") > 0
print("ok: pgbench under the unit: %.0f TPS, %d WAL fsyncs" % (
    value("drivewatch_phase_result_operations_per_second", measure="transaction"),
    value("drivewatch_phase_result_operations", measure="fsync")))
PY
pass "2 with the drop-ins, a scheduled pgbench phase completes under the unit"

# --- 3. nothing left -----------------------------------------------------------
for _ in $(seq 100); do
  [[ ! -e $mnt/drivewatch-work-scratch ]] && ! pgrep -u postgres -f "$mnt|/srv/scratch" >/dev/null && break
  sleep 0.1
done
[[ ! -e $mnt/drivewatch-work-scratch ]] ||
  fail "the work directory is still there: $(ls -la "$mnt/drivewatch-work-scratch"); $(journal)"
! pgrep -u postgres -f "/srv/scratch" >/dev/null ||
  fail "a process of the run still runs: $(pgrep -a -u postgres -f /srv/scratch)"
[[ ! -e /proc/$daemon/root/var/lib/drivewatch/work/scratch.json ]] || fail "its record is still there"
if journal 200 | grep -E '(^|[ :])(error|warn): ' >"$work/warnings.txt"; then
  fail "the unit's journal has warnings or errors: $(cat "$work/warnings.txt")"
fi
pass "3 nothing of the run is left, and the journal has no warning"
