# SPDX-License-Identifier: Apache-2.0
# Guest side of the "aging" VM scenario (host side: tests/vm/aging/host.sh).
# Sourced by /init (busybox ash, set -e, /etc/dwvm/lib.sh loaded).
#
# No daemon: `drivewatch phase run` runs each heavy phase by hand, with a
# config built per run from /etc/drivewatch/aging.toml (aging/drivewatch.toml)
# plus one [[aging.targets]] table naming the block device found here. Each
# run's stdout (the history record) and stderr go to the host as
# NAME.json / NAME.err, and a "run NAME RC START END" marker (guest uptime).
# On the host's word:
#   s1            DWSN0001's namespace, configured with serial WRONGSN, then
#                 with namespace 2: both must be refused
#   s2-unplugged  (after the host's device_del of DWSN0001's controller) wait
#                 until the kernel dropped it
#   s2-plugged    (after the host's device_add of DWSN0005) wait for its
#                 namespace, then run a target that names serial DWSN0001 and
#                 the path DWSN0005's namespace now has
#   s3            fill DWSN0003's 1 GiB namespace under slc_throttle's cgroup
#                 write limits: the fast one until the fill has written the
#                 trigger's bytes, the slow one after (the SLC cache model;
#                 its samples go to the host as trigger-samples.txt)
#   s4            a longer fill of it, under the slow limit (the host sets a
#                 critical warning)
#   s5            the power-states phase on it (QEMU's single power state)
#   s7            the paced perf cell on DWSN0006 (every read stalls) with
#                 fio's same job beside it on the same namespace (s7-fio-clat.log,
#                 s7-fio-lat.log: every read, with its completion time)
#   finish        send `drivewatch history --format json`

AGING_FILL_PERCENT=${DWVM_AGING_FILL_PERCENT:-90}
AGING_NEW_SERIAL=${DWVM_AGING_NEW_SERIAL:-DWSN0005}
AGING_FAST_BPS=${DWVM_AGING_FAST_BPS:-67108864}
AGING_SLOW_BPS=${DWVM_AGING_SLOW_BPS:-20971520}
AGING_TRIGGER_BYTES=${DWVM_AGING_TRIGGER_BYTES:-536870912}
mkdir -p /var/lib/drivewatch

# ag_config NAME DEVICE SERIAL NSID: /tmp/NAME.toml
ag_config() {
	sed "s/@FILL_PERCENT@/$AGING_FILL_PERCENT/" /etc/drivewatch/aging.toml >"/tmp/$1.toml"
	cat >>"/tmp/$1.toml" <<EOF

[[aging.targets]]
name = "scratch"
block_device = "$2"
serial = "$3"
namespace = $4
destroy_data = true
EOF
}

# ag_run NAME PHASE: run the phase with /tmp/NAME.toml, send the outputs.
ag_run() {
	_t0=$(dw_uptime)
	_rc=0
	drivewatch phase run "$2" --config.file="/tmp/$1.toml" >"/tmp/$1.json" 2>"/tmp/$1.err" || _rc=$?
	_t1=$(dw_uptime)
	dw_mark run "$1 $_rc $_t0 $_t1"
	dw_send_file "$1.json" "/tmp/$1.json"
	dw_send_file "$1.err" "/tmp/$1.err"
	dw_send_file "$1.toml" "/tmp/$1.toml"
}

# First namespace block device of the controller with this serial.
ag_ns() {
	_c=$(dw_ctrl_by_serial "$1") || return 1
	dw_ns_of_ctrl "$_c" | head -n 1
}

ag_has_ns() { _n=$(ag_ns "$1") && [ -n "$_n" ] && [ -b "/dev/$_n" ]; }

c1=$(dw_ctrl_by_serial DWSN0001) || { dw_fail "aging no controller DWSN0001"; exit 1; }
ns1=$(ag_ns DWSN0001)
c3=$(dw_ctrl_by_serial DWSN0003) || { dw_fail "aging no controller DWSN0003"; exit 1; }
ns3=$(ag_ns DWSN0003)
dw_mark aging-devices "DWSN0001=$c1/$ns1 DWSN0003=$c3/$ns3 nsid1=$(dw_attr "/sys/block/$ns1/nsid") size3=$(dw_attr "/sys/block/$ns3/size")"

# ---------------------------------------------------------------- S1
dw_wait_host s1 120
ag_config s1-wrongsn "/dev/$ns1" WRONGSN 1
ag_run s1-wrongsn fill
ag_config s1-ns2 "/dev/$ns1" DWSN0001 2
ag_run s1-ns2 fill
dw_mark s1-done

# ---------------------------------------------------------------- S2
dw_wait_host s2-unplugged 60
if ! dw_poll 20 eval '! dw_ctrl_by_serial DWSN0001 >/dev/null'; then
	dw_fail "aging DWSN0001 still in sysfs 20 s after device_del"
	exit 1
fi
dw_mark s2-gone "$(ls /sys/block | tr '\n' ' ')"
dw_wait_host s2-plugged 60
if ! dw_poll 30 ag_has_ns "$AGING_NEW_SERIAL"; then
	dw_fail "aging no namespace of $AGING_NEW_SERIAL 30 s after device_add: $(ls /sys/block | tr '\n' ' ')"
	exit 1
fi
c5=$(dw_ctrl_by_serial "$AGING_NEW_SERIAL")
ns5=$(ag_ns "$AGING_NEW_SERIAL")
# The config still says DWSN0001; its block_device is the path that now
# holds the other drive (the same name when the kernel re-used it).
dw_mark s2-new "$c5/$ns5 was=$c1/$ns1 nsid=$(dw_attr "/sys/block/$ns5/nsid")"
ag_config s2-renamed "/dev/$ns5" DWSN0001 1
ag_run s2-renamed fill
dw_mark s2-done

# ---------------------------------------------------------------- S3
# The SLC cache model is the kernel's blk-throttle (cgroup v2 io.max) on
# DWSN0003's namespace, run by slc_throttle (aging/slc_throttle.cc): this
# shell, and so the fill it starts, runs in the cgroup dw-fast (the fast
# limit) until the fill has written the trigger's bytes; slc_throttle then
# moves them to dw-slow (the slow limit), where S4's fill runs too. Only
# writes to that namespace are limited.
mkdir -p /sys/fs/cgroup
mount -t cgroup2 none /sys/fs/cgroup
echo +io >/sys/fs/cgroup/cgroup.subtree_control
mkdir -p /sys/fs/cgroup/dw-fast /sys/fs/cgroup/dw-slow
# "0" is the writing process: this subshell of /init ($$ would be PID 1).
echo 0 >/sys/fs/cgroup/dw-fast/cgroup.procs
ag_config s3 "/dev/$ns3" DWSN0003 1
dw_wait_host s3 60
slc_throttle "$ns3" /sys/fs/cgroup/dw-fast /sys/fs/cgroup/dw-slow "$AGING_FAST_BPS" "$AGING_SLOW_BPS" \
	"$AGING_TRIGGER_BYTES" 4 120 /tmp/trigger-samples.txt /dev/console >/tmp/slc_throttle.out 2>/tmp/slc_throttle.err &
_slc=$!
if ! dw_poll 20 grep -q '^ready' /tmp/slc_throttle.out; then
	dw_fail "aging slc_throttle not ready: $(head -c 300 /tmp/slc_throttle.err | tr '\n' ' ')"
	exit 1
fi
dw_mark slc-ready "$(cat /tmp/slc_throttle.out) fast $(tr '\n' ' ' </sys/fs/cgroup/dw-fast/io.max)slow $(tr '\n' ' ' </sys/fs/cgroup/dw-slow/io.max)in $(cat /proc/self/cgroup)"
ag_run s3 slcfill
_rc=0
wait "$_slc" || _rc=$?
dw_mark slc-throttle "$_rc $(head -c 300 /tmp/slc_throttle.err | tr '\n' ' ')"
[ -f /tmp/trigger-samples.txt ] && dw_send_file trigger-samples.txt /tmp/trigger-samples.txt
dw_mark s3-done

# ---------------------------------------------------------------- S4
ag_config s4 "/dev/$ns3" DWSN0003 1
dw_wait_host s4 60
ag_run s4 longfill
dw_mark s4-done

# ---------------------------------------------------------------- S5
ag_config s5 "/dev/$ns3" DWSN0003 1
dw_wait_host s5 60
ag_run s5 pstates
dw_mark s5-done

# ---------------------------------------------------------------- S7
dw_wait_host s7 60
if ! dw_poll 30 ag_has_ns DWSN0006; then
	dw_fail "aging no namespace of DWSN0006: $(ls /sys/block | tr '\n' ' ')"
	exit 1
fi
ns6=$(ag_ns DWSN0006)
ag_config s7 "/dev/$ns6" DWSN0006 1
# fio runs fio's form of the phase's cell (io_uring, O_DIRECT, 4 KiB random
# reads at queue depth 1, paced at 100 IOPS) on the same namespace, started
# first and stopped (SIGINT) only once the phase has ended, so that its reads
# cover the whole of the cell's. It logs every read's clat and lat with its
# completion time (guest clock, as the record's times): the host compares
# only the reads that completed while the cell ran. The phase's own start
# (loading, the interlocks' reads of the stalled namespace) and fio's start
# and end share this guest's one CPU with the other's reads; those reads are
# outside the window.
# stall_witness (aging/stall_witness.cc) logs every time the guest as a
# whole stood still for over 5 ms meanwhile: the host allows each p99 that
# much more (each is one side's slowest read, which a stall lengthens by an
# amount that depends on when the read was due).
stall_witness 5 /tmp/s7-stalls.txt 2>/tmp/s7-stalls.err &
_witness=$!
_rc=0
fio --name=stall --filename="/dev/$ns6" --thread --ioengine=io_uring --direct=1 \
	--rw=randread --bs=4k --iodepth=1 --rate_iops=100 --time_based=1 --runtime=300 \
	--norandommap --randrepeat=0 --write_lat_log=/tmp/s7-fio --log_avg_msec=0 \
	--log_unix_epoch=1 --output-format=json --output=/tmp/s7-fio.json \
	>/tmp/s7-fio.err 2>&1 &
_fio=$!
ag_run s7 stall
kill -INT "$_fio" 2>/dev/null || _rc=$?
wait "$_fio" || true
dw_mark fio-rc "$_rc"
kill -INT "$_witness" 2>/dev/null || true
wait "$_witness" || dw_mark witness-rc "$? $(head -c 200 /tmp/s7-stalls.err)"
dw_send_file s7-stalls.txt /tmp/s7-stalls.txt
dw_send_file s7-fio.json /tmp/s7-fio.json
dw_send_file s7-fio.err /tmp/s7-fio.err
dw_send_file s7-fio-clat.log /tmp/s7-fio_clat.1.log
dw_send_file s7-fio-lat.log /tmp/s7-fio_lat.1.log
dw_mark s7-done

# ---------------------------------------------------------------- history
dw_wait_host finish 60
_rc=0
drivewatch history --config.file=/tmp/s3.toml --format json >/tmp/history.jsonl 2>/tmp/history.err || _rc=$?
dw_mark history-rc "$_rc $(head -c 200 /tmp/history.err | tr '\n' ' ')"
dw_send_file history.jsonl /tmp/history.jsonl
ls -lR /var/lib/drivewatch >/tmp/state.txt 2>&1 || true
dw_send_file state.txt /tmp/state.txt
dw_mark aging-done
