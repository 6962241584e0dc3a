#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The application kinds (sqlite, and pgbench against a real PostgreSQL
# server) through the real binary, on a directory of an ext4 file system
# on a loop device: run by hand and on a schedule (the daemon exports the
# results, scraped with real curl); the run's work directory made through
# the interlocks and removed after a completed run, an aborted one and a
# crash (a server the crash left running stopped first, and the leftover
# left in place, the run refused, when it cannot be); and each refusal,
# with what it protects left as it was:
#   1  something at the work directory's path that drivewatch did not make;
#   2  the free-space reserve;
#   3  a retention study holding the target's file;
#   4  a block device target (check-config exits 2);
#   5  PostgreSQL's binaries missing (check-config exits 2, naming the
#      package).
# Root (loop devices, mount); ~60 s.
#   usage: app_phase_test.sh DRIVEWATCH_BINARY
set -euo pipefail
bin=$(realpath "$1")
mnt=""
loopdev=""
on_exit() {
  [[ -n $mnt ]] && { umount "$mnt" 2>/dev/null || umount -l "$mnt" 2>/dev/null || true; }
  [[ -n $loopdev ]] && losetup -d "$loopdev" 2>/dev/null || true
}
source "$(dirname "$0")/lib.sh"
[[ $(id -u) == 0 ]] || { echo "SKIP: needs root for loop devices"; exit 77; }
json() { python3 -c "import json,sys; r=json.load(sys.stdin); print($1)"; }

# The PostgreSQL server runs as the postgres account: it must reach the
# target's directory.
chmod 755 "$work"
truncate -s 512M "$work/fs.img"
mkfs.ext4 -q -F "$work/fs.img" >/dev/null
loopdev=$(losetup --show -f "$work/fs.img")
mnt=$work/mnt
mkdir -p "$mnt"
mount "$loopdev" "$mnt"
mkdir -p "$mnt/aging" "$mnt/aging2"
# The target's directory and the state directory: the daemon, at the end,
# gets its own of each (a state directory knows only the files it made).
dir=$mnt/aging
state=$work/state
workdir=$dir/drivewatch-work-scratch

# A config with the target on the loop device's file system; extra phase
# lines on stdin.
config() {  # FILE RESERVE
  {
    printf '[state]\ndirectory = "%s"\nstudy_register = "%s"\n' "$state" "$work/register"
    printf '[probes.read_latency]\nenabled = false\n'
    printf '[[aging.targets]]\nname = "scratch"\ndirectory = "%s"\nfile_size = "16MiB"\n' "$dir"
    printf 'free_space_reserve = %s\n' "$2"
    printf '[[aging.phases]]\nname = "inserts"\nkind = "sqlite"\ntarget = "scratch"\n'
    printf 'threads = 2\ninserts = 200\n'
    cat
  } >"$1"
}
run_phase() {  # CONFIG PHASE: the record in $work/PHASE.json, exit status in $rc
  set +e
  "$bin" phase run "$2" --config.file="$1" >"$work/$2.json" 2>"$work/$2.err"
  rc=$?
  set -e
}
no_workdir() {  # WHEN
  [[ ! -e $workdir ]] || fail "$1: the work directory is still there: $(ls -la "$workdir")"
  [[ ! -e $state/work/scratch.json ]] || fail "$1: its record is still there"
}

config "$work/dw.toml" 0.05 <<'TOML'
[[aging.phases]]
name = "many"
kind = "sqlite"
target = "scratch"
inserts = 100000
synchronous = "full"
max_duration = "2s"
[[aging.phases]]
name = "tpcb"
kind = "pgbench"
target = "scratch"
scale = 1
clients = 2
run_time = "2s"
[[aging.phases]]
name = "tpcb-long"
kind = "pgbench"
target = "scratch"
scale = 1
clients = 2
run_time = "10m"
TOML
# The study's phase is in a config of its own: one config with both is
# refused by check-config (a writing phase on a study's target).
{
  sed -n '1,/^free_space_reserve/p' "$work/dw.toml"
  printf '[[aging.phases]]\nname = "study"\nkind = "retention-write"\ntarget = "scratch"\n'
  printf 'study = "app-test"\n'
} >"$work/study.toml"
"$bin" check-config "$work/dw.toml" >/dev/null || fail "check-config refused the config"

# --- by hand: completed, every row in, the work directory gone -------------
run_phase "$work/dw.toml" inserts
((rc == 0)) || fail "phase run inserts exited $rc: $(cat "$work/inserts.err")"
[[ $(json 'r["outcome"]' <"$work/inserts.json") == completed ]] || fail "inserts: $(cat "$work/inserts.json")"
[[ $(json 'r["results"]["insert_operations"]' <"$work/inserts.json") == 400 ]] ||
  fail "not 400 rows: $(cat "$work/inserts.json")"
json 'r["results"]["commit_p99_9_seconds"] > 0 and r["results"]["insert_operations_per_second"] > 0' \
  <"$work/inserts.json" | grep -q True || fail "no commit latency or rate: $(cat "$work/inserts.json")"
no_workdir "after a completed run"
pass "sqlite by hand: 2 threads x 200 inserts completed, commit latency measured, work directory removed"

# --- aborted by max_duration: the work directory goes too -------------------
run_phase "$work/dw.toml" many
[[ $(json 'r["outcome"]' <"$work/many.json") == aborted ]] || fail "many: $(cat "$work/many.json")"
json 'r["results"]["insert_operations"] > 0' <"$work/many.json" | grep -q True ||
  fail "an aborted run keeps no results: $(cat "$work/many.json")"
no_workdir "after an aborted run"
pass "an aborted run keeps its results, and its work directory is removed"

# --- SIGKILL: the next run removes what the crash left ----------------------
"$bin" phase run many --config.file="$work/dw.toml" >/dev/null 2>&1 &
pid=$!
for _ in $(seq 100); do
  [[ -e $workdir/thread-0.db-wal ]] && break
  sleep 0.1
done
[[ -e $workdir/thread-0.db-wal ]] || fail "the run never made its database"
kill -KILL "$pid"
wait "$pid" 2>/dev/null || true
pid=""
[[ -d $workdir && -e $state/work/scratch.json ]] || fail "the crash left no work directory to recover"
# What the removal must not follow: a symbolic link in it to a file outside.
echo "outside" >"$work/outside.txt"
ln -s "$work/outside.txt" "$workdir/link"
ln -s "$work" "$workdir/dirlink"
run_phase "$work/dw.toml" inserts
((rc == 0)) || fail "the run after a crash exited $rc: $(cat "$work/inserts.err")"
no_workdir "after the run that followed a crash"
[[ $(cat "$work/outside.txt") == outside ]] || fail "the removal followed a symbolic link"
[[ $(json 'r["outcome"]' <"$work/inserts.json") == completed ]] || fail "after a crash: $(cat "$work/inserts.json")"
pass "a crashed run's work directory is removed by the next run on its target, links not followed"

# --- pgbench by hand: a private server, its results, nothing left running ----
run_phase "$work/dw.toml" tpcb
((rc == 0)) || fail "phase run tpcb exited $rc: $(cat "$work/tpcb.err")"
[[ $(json 'r["outcome"]' <"$work/tpcb.json") == completed ]] || fail "tpcb: $(cat "$work/tpcb.json")"
json 'r["results"]["transaction_operations_per_second"] > 0 and r["results"]["fsync_operations"] >= r["results"]["transaction_operations"] > 0 and r["results"]["latency_p99_seconds"] > 0' \
  <"$work/tpcb.json" | grep -q True || fail "pgbench results: $(cat "$work/tpcb.json")"
no_workdir "after a pgbench run"
! pgrep -f "$workdir" >/dev/null || fail "something of the run still runs: $(pgrep -af "$workdir")"
pass "pgbench by hand: completed on its own server, TPS, latency and WAL fsyncs, nothing left"

# --- a crash while the server runs: the next run stops it, then removes ----
"$bin" phase run tpcb-long --config.file="$work/dw.toml" >/dev/null 2>&1 &
pid=$!
for _ in $(seq 300); do
  [[ -e $workdir/tx.$(pgrep -f "pgbench .*--log-prefix=$workdir" | head -1) ]] && break
  sleep 0.1
done
pgrep -f "pgbench .*--log-prefix=$workdir" >/dev/null || fail "pgbench never started: $(cat "$workdir/tools.log" 2>/dev/null | tail -3)"
kill -KILL "$pid"
{ wait "$pid"; } 2>/dev/null || true
pid=""
[[ -e $workdir/cluster/postmaster.pid ]] || fail "no server left running by the crash"
# A release that fails (no pg_ctl to stop the server with, here) leaves the
# leftover in place, server and all: the next run is refused, not made
# after removing it around the running server.
config "$work/sqlite-only.toml" 0.05 </dev/null
set +e
unshare -m bash -c "mount -t tmpfs none /usr/lib/postgresql &&
  '$bin' phase run inserts --config.file='$work/sqlite-only.toml'" >/dev/null 2>"$work/norelease.err"
rc=$?
set -e
((rc == 2)) || fail "a failed release: exit $rc: $(cat "$work/norelease.err")"
grep -q "cannot release the work directory $workdir of a pgbench run: a PostgreSQL server may still run" \
  "$work/norelease.err" || fail "the failed release is not logged: $(cat "$work/norelease.err")"
grep -q "$workdir: refusing to write: an earlier run's work directory is still there: its release failed" \
  "$work/norelease.err" || fail "no refusal after a failed release: $(cat "$work/norelease.err")"
[[ -e $workdir/cluster/postmaster.pid && -e $state/work/scratch.json ]] ||
  fail "the leftover was removed although its server could not be stopped"
pgrep -f "$workdir" >/dev/null || fail "the crashed run's server is gone although nothing stopped it"
pass "a leftover whose release fails is left in place, server running, and the run refused"
run_phase "$work/dw.toml" inserts
((rc == 0)) || fail "the run after a crash exited $rc: $(cat "$work/inserts.err")"
no_workdir "after the run that followed a pgbench crash"
for _ in $(seq 100); do pgrep -f "$workdir" >/dev/null || break; sleep 0.1; done
! pgrep -f "$workdir" >/dev/null || fail "the crashed run's server still runs: $(pgrep -af "$workdir")"
pass "a server a crash left running is stopped, and its work directory removed, by the next run"

# --- 1. a directory drivewatch did not make at the work directory's path -----
mkdir "$workdir"
echo "somebody's data" >"$workdir/keep.txt"
run_phase "$work/dw.toml" inserts
((rc == 2)) || fail "someone else's directory: exit $rc"
grep -q "$workdir: refusing to write: it exists, but drivewatch did not make it" "$work/inserts.err" ||
  fail "refusal: $(cat "$work/inserts.err")"
[[ $(cat "$workdir/keep.txt") == "somebody's data" ]] || fail "someone else's file was touched"
rm -r "$workdir"
pass "1 a directory drivewatch did not make is refused and left as it was"

# --- 2. the free-space reserve ----------------------------------------------
# A reserve the target's file (made already) meets, but 2 x (200 x 256 B +
# 8 MiB) more would not.
reserve=$(python3 -c "
import os; v = os.statvfs('$mnt')
print((v.f_bavail * v.f_frsize - 8 * 2**20) / (v.f_blocks * v.f_frsize))")
config "$work/tight.toml" "$reserve" </dev/null
run_phase "$work/tight.toml" inserts
((rc == 2)) || fail "reserve: exit $rc: $(cat "$work/inserts.err")"
grep -q "$workdir: refusing to write: a sqlite run's .* of data would leave .* below the reserve" \
  "$work/inserts.err" || fail "reserve refusal: $(cat "$work/inserts.err")"
[[ ! -e $workdir ]] || fail "a refused run made its work directory"
pass "2 a run that would break the free-space reserve is refused before anything is made"

# --- 3. a retention study holding the target's file ---------------------------
run_phase "$work/study.toml" study
[[ $(json 'r["outcome"]' <"$work/study.json") == completed ]] || fail "study: $(cat "$work/study.json")"
before=$(sha256sum <"$dir/drivewatch-aging-scratch.dat")
run_phase "$work/dw.toml" inserts
((rc == 2)) || fail "study: exit $rc: $(cat "$work/inserts.err")"
grep -q 'refusing to write: .*retention study "app-test"' "$work/inserts.err" ||
  fail "study refusal: $(cat "$work/inserts.err")"
[[ $(sha256sum <"$dir/drivewatch-aging-scratch.dat") == "$before" ]] || fail "the study's file changed"
[[ ! -e $workdir ]] || fail "a refused run made its work directory"
"$bin" retention end app-test --config.file="$work/study.toml" >/dev/null 2>&1 ||
  fail "retention end app-test"
pass "3 a retention study on the target's file refuses the run; the study's bytes are unchanged"

# --- 4. a block device target ----------------------------------------------
cat >"$work/block.toml" <<TOML
[state]
directory = "$state"
[[aging.targets]]
name = "raw"
block_device = "$loopdev"
serial = "loop:$work/fs.img"
destroy_data = true
[[aging.phases]]
name = "inserts"
kind = "sqlite"
target = "raw"
TOML
set +e
"$bin" check-config "$work/block.toml" >/dev/null 2>"$work/block.err"
rc=$?
set -e
((rc == 2)) || fail "block device target: check-config exit $rc"
grep -q 'phase kind "sqlite" runs an application on a file system, but target "raw" is the block device' \
  "$work/block.err" || fail "block target: $(cat "$work/block.err")"
pass "4 a sqlite phase on a block device target is a config error"

# --- 5. PostgreSQL's binaries missing ---------------------------------------
set +e
unshare -m bash -c "mount -t tmpfs none /usr/lib/postgresql &&
  '$bin' check-config '$work/dw.toml'" >/dev/null 2>"$work/nopg.err"
rc=$?
set -e
((rc == 2)) || fail "no PostgreSQL: check-config exit $rc: $(cat "$work/nopg.err")"
grep -q 'phase "tpcb" (kind "pgbench"): no PostgreSQL server binaries .* (expected Debian.s package postgresql-15' \
  "$work/nopg.err" || fail "no PostgreSQL: $(cat "$work/nopg.err")"
pass "5 missing PostgreSQL binaries: check-config exits 2 and names the package"

# --- on a schedule: the daemon runs it and exports its results --------------
dir=$mnt/aging2
state=$work/state2
workdir=$dir/drivewatch-work-scratch
config "$work/daemon.toml" 0.05 <<'TOML'
interval = "30d"
[[aging.phases]]
name = "tpcb"
kind = "pgbench"
target = "scratch"
scale = 1
clients = 2
run_time = "2s"
interval = "30d"
TOML
start_daemon "$work/daemon.log" --config.file="$work/daemon.toml"
scrape_until 60 'drivewatch_phase_runs_total\{.*outcome="completed".*phase="inserts".*\} [1-9]' \
  'drivewatch_phase_result_operations_per_second\{.*measure="insert".*phase="inserts".*\}' ||
  fail "the daemon did not run the due sqlite phase: $(tail -5 "$work/daemon.log")"
grep -q 'drivewatch_phase_result_operations{.*measure="insert".*phase="inserts".*} 400' \
  "$work/metrics.txt" || fail "no insert count: $(grep phase_result "$work/metrics.txt" | head -5)"
grep -q 'drivewatch_phase_result_seconds{.*measure="commit_p99_9".*phase="inserts".*}' \
  "$work/metrics.txt" || fail "no commit latency metric"
scrape_until 60 'drivewatch_phase_result_operations_per_second\{.*measure="transaction".*phase="tpcb".*\}' \
  'drivewatch_phase_result_operations\{.*measure="fsync".*phase="tpcb".*\}' ||
  fail "the daemon did not run the due pgbench phase: $(tail -5 "$work/daemon.log")"
if command -v promtool >/dev/null; then
  promtool check metrics <"$work/metrics.txt" || fail "promtool check metrics"
fi
stop_daemon
no_workdir "after the daemon's run"
pass "the daemon runs the scheduled sqlite and pgbench phases and exports their results (promtool clean)"
