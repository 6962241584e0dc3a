# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
# Host side of the "retention" VM scenario (guest side: retention/guest.sh).
# Source after tests/vm/lib.sh, then call retention_run OUTDIR WORKDIR.
#
# One full "power-off" cycle of a data-retention study, on disk images that
# persist across two boots of the guest (all in WORKDIR):
#   rt0.img  512 MiB raw, DWSN0001's namespace: the study "vmstudy"
#            (256 MiB from 16 MiB: LBAs 4096..69631 in 4 KiB blocks)
#   rt1.img  64 MiB raw, DWSN0002's namespace: the tiny study "other"
#            (4 MiB from 16 MiB: LBAs 4096..5119)
#   state.img 64 MiB ext4 made here, virtio-blk /dev/vda in the guest,
#            mounted at /var/lib/drivewatch (drivewatch's state) in both boots
# This scenario brings its own disks: while it boots, lib.sh's vm_disks is
# replaced by rt_disks (restored afterwards).
#
# Boot 1 (OUTDIR/boot1): c0 DWSN0001 then c1 DWSN0002 on the PCI bus.
#   `drivewatch phase run rw` and `ow` by hand (no daemon); QMP blockstats
#   wr_bytes read; then the guest syncs, unmounts the state and powers off.
#   R1 rw and ow exit 0, outcome completed, both studies active, baseline
#      clean; vmstudy's written_bytes = its region = QEMU's wr_bytes of c0
# With the guest off, retention.py corrupt damages rt0.img (see its doc):
#   3 flipped bytes and a zeroed block (wrong_content), a block copied over
#   another (misplaced), other's block at the same LBA (stale); and boot 2
#   puts a blkdebug rule under c0 that fails reads of one LBA (unreadable).
#   The exact expected verdicts: OUTDIR/expected.json.
# Boot 2 (OUTDIR/boot2): c1 DWSN0002 first on the PCI bus, so DWSN0001 may
#   get another kernel name; the guest writes the config with the new path.
#   The daemon runs the verify rv at once (interval, never ran); a real
#   Prometheus scrapes it every second.
#   R2 drivewatch_phase_runs_total{phase="rv",outcome="completed"} 1 and
#      drivewatch_phase_result_bytes{phase="rv",measure="bad"} = the bad
#      blocks x 4096 reach Prometheus; rw's completed run (boot 1, from the
#      history on the state disk) is there too
#   R3 the verify found exactly the expected bad blocks, by class and LBA
#      (with first_difference, found_lba, found_study), nothing else
#   R4 smart_delta.power_cycles and power_on_hours equal the difference of
#      nvme-cli's SMART logs of the two boots (QEMU 7.2 reports power
#      cycles 0 and power-on hours since its process started, so a power
#      cycle is not seen: measured, reported, not faked)
#   R5 identity by serial: the kernel names of DWSN0001 in both boots are
#      reported; the verify on the (possibly) renamed device is the study's
#   R6 drivewatch_retention_* in Prometheus, when this binary exports them:
#      bad_blocks by class, blocks_verified, age, last verify time, read
#      latency series for the baseline and the last verify
#   R7 `retention report vmstudy` as text, json and html (OUTDIR/report.*):
#      exit 0, the json has the verify's counts, the html is a page
# Results: OUTDIR/assertions.txt, OUTDIR/measurements.txt, OUTDIR/expected.json,
# OUTDIR/report.{txt,json,html}, OUTDIR/study-*.json, OUTDIR/prom-retention.txt,
# per boot console.log, qemu.*, files/.

RETENTION_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
RT_IO_BLOCKS=32                 # the phases' block_size 128KiB / 4 KiB
RT_UNREADABLE_LBA=$((4096 + 60000))

rt_py() { dw_python "$RETENTION_DIR/retention.py" "$@"; }
rt_get() { rt_py get "$@" 2>/dev/null || true; }
rt_run_marker() { vm_markers | sed -n "s/^DWVM-MARK: run $1 //p" | head -n 1; }
rt_cli_rc() { vm_markers | sed -n "s/^DWVM-MARK: cli $1 //p" | head -n 1; }
rt_awk() { awk "BEGIN{$1}" </dev/null; }
# rt_wr QDEV: QEMU's wr_bytes for the drive of device QDEV.
rt_wr() {
	vm_qmp '{"execute":"query-blockstats"}' | dw_python -c '
import json, sys
for e in json.loads(sys.stdin.readline())["return"]:
    if e.get("qdev") == sys.argv[1] or e.get("qdev", "").endswith("/" + sys.argv[1]):
        print(e["stats"]["wr_bytes"]); break' "$1"
}
# rt_smart FILE FIELD: a field of nvme-cli's smart-log JSON.
rt_smart() { rt_get "$1" "$2"; }

# rt_disks BOOT: the persistent images (created once) and the device
# arguments of that boot. Replaces lib.sh's vm_disks while we boot.
rt_disks() {
	local w=$RT_WORK boot=$1 n0
	if [[ ! -f $w/rt0.img ]]; then
		truncate -s 512M "$w/rt0.img" && truncate -s 64M "$w/rt1.img" && truncate -s 64M "$w/state.img" ||
			{ dw_die disks "truncate in $w"; return 1; }
		mkfs.ext4 -q -F -L dwstate "$w/state.img" || { dw_die disks "mkfs.ext4 $w/state.img"; return 1; }
	fi
	DW_VM_DEVICE_ARGS=(
		-blockdev "driver=file,filename=$w/rt0.img,node-name=n0-file"
		-blockdev "driver=file,filename=$w/rt1.img,node-name=n1-file"
		-blockdev "driver=raw,file=n1-file,node-name=n1"
		-blockdev "driver=file,filename=$w/state.img,node-name=st-file"
		-blockdev "driver=raw,file=st-file,node-name=st"
		-device "virtio-blk-pci,drive=st,id=vst"
	)
	n0=n0-file
	if ((boot == 2)); then
		# Reads covering that LBA's first sector fail with EIO in QEMU's
		# block layer (the NVMe controller answers Unrecovered Read Error).
		printf '[inject-error]\nevent = "read_aio"\nerrno = "5"\nsector = "%d"\n' \
			$((RT_UNREADABLE_LBA * 8)) >"$w/blkdebug.conf"
		DW_VM_DEVICE_ARGS+=(-blockdev "driver=blkdebug,node-name=n0-dbg,config=$w/blkdebug.conf,image=n0-file")
		n0=n0-dbg
	fi
	DW_VM_DEVICE_ARGS+=(-blockdev "driver=raw,file=$n0,node-name=n0")
	if ((boot == 1)); then
		DW_VM_DEVICE_ARGS+=(-device "nvme,id=c0,serial=DWSN0001,drive=n0" -device "nvme,id=c1,serial=DWSN0002,drive=n1")
	else
		DW_VM_DEVICE_ARGS+=(-device "nvme,id=c1,serial=DWSN0002,drive=n1" -device "nvme,id=c0,serial=DWSN0001,drive=n0")
	fi
	DW_VM_NCTRL=2
	DW_VM_NNS=2
}

# rt_boot BOOT OUTDIR: vm_start with rt_disks instead of lib.sh's vm_disks.
rt_boot() {
	local boot=$1 out=$2 saved rc=0
	saved=$(declare -f vm_disks)
	# shellcheck disable=SC2317
	vm_disks() { rt_disks "$RT_BOOTNO"; }
	RT_BOOTNO=$boot
	DW_VM_APPEND="${DW_VM_APPEND:-} DWVM_RT_BOOT=$boot" vm_start "$out" "$RT_WORK/retention.cpio.gz" || rc=$?
	eval "$saved"
	return $rc
}

# ---------------------------------------------------------------- boot 1
retention_boot1() {
	local out=$RT_OUT/boot1 m rc t0 wr0 wr1 st
	t0=$(dw_now)
	rt_boot 1 "$out" || return 1
	RT_DEV1=$(vm_wait_marker rt-devices 120) || return 1
	vm_measure "boot 1: QEMU start -> guest ready (s)" "$(dw_elapsed "$VM_T0")"
	vm_measure "boot 1: devices" "$RT_DEV1"
	vm_wait_marker boot1-written 240 >/dev/null || return 1
	wr0=$(rt_wr c0)
	wr1=$(rt_wr c1)
	vm_wait_marker wait-host-poweroff 30 >/dev/null || return 1
	vm_send poweroff
	vm_wait_marker state-unmounted 60 >/dev/null || return 1
	vm_measure "boot 1: QEMU start -> exit (s)" "$(vm_wait_exit 60)" || return 1
	vm_extract_files "$VM_LOG" "$out/files" >"$out/files.list" || true
	cp "$out/files/study-vmstudy-b1.json" "$out/files/study-other-b1.json" "$RT_OUT/" 2>/dev/null || true
	local ok=1 name
	for name in rw ow; do
		m=$(rt_run_marker "$name")
		rc=${m%% *}
		vm_measure "boot 1: $name exit, outcome, duration (s)" "$rc $(rt_get "$out/files/$name.json" outcome) $(rt_get "$out/files/$name.json" duration_seconds)"
		if [[ $rc != 0 || $(rt_get "$out/files/$name.json" outcome) != completed ]]; then
			vm_fail "R1 write" "$name exited '$rc', outcome '$(rt_get "$out/files/$name.json" outcome)', reason '$(rt_get "$out/files/$name.json" reason)'; stderr: $(tail -n 3 "$out/files/$name.err" 2>/dev/null | tr '\n' '|')"
			ok=0
		fi
	done
	local s=$out/files/study-vmstudy-b1.json
	vm_measure "boot 1: rw results" "$(rt_get "$out/files/rw.json" results)"
	vm_measure "boot 1: vmstudy id, state, region" "$(rt_get "$s" id) $(rt_get "$s" state) $(rt_get "$s" region)"
	vm_measure "boot 1: vmstudy smart_at_write" "$(rt_get "$s" smart_at_write)"
	vm_measure "boot 1: vmstudy baseline bad, quantiles (s)" "$(rt_get "$s" baseline.bad) $(rt_get "$s" baseline.quantiles)"
	vm_measure "boot 1: other id, state, region" "$(rt_get "$out/files/study-other-b1.json" id) $(rt_get "$out/files/study-other-b1.json" state) $(rt_get "$out/files/study-other-b1.json" region)"
	vm_measure "boot 1: QEMU wr_bytes c0 (DWSN0001) / c1 (DWSN0002)" "$wr0 / $wr1"
	for st in "$s" "$out/files/study-other-b1.json"; do
		if [[ $(rt_get "$st" state) != active ]]; then
			vm_fail "R1 write" "${st##*/}: state '$(rt_get "$st" state)', wanted active (reason '$(rt_get "$st" reason)')"
			ok=0
		fi
	done
	if [[ $(rt_get "$s" baseline.bad) != '{"misplaced": 0, "stale": 0, "unreadable": 0, "wrong_content": 0}' ]]; then
		vm_fail "R1 write" "vmstudy's baseline is not clean: $(rt_get "$s" baseline.bad)"
		ok=0
	fi
	if [[ -z $(rt_get "$s" smart_at_write.power_cycles) ]]; then
		vm_fail "R1 write" "vmstudy has no smart_at_write.power_cycles: $(rt_get "$s" smart_at_write)"
		ok=0
	fi
	local written
	written=$(rt_get "$out/files/rw.json" results.written_bytes)
	if [[ $written != $((256 << 20)) || $wr0 != "$written" ]]; then
		vm_fail "R1 write" "rw wrote '$written' bytes by its record, QEMU counted '$wr0' on c0; the region is $((256 << 20))"
		ok=0
	fi
	((ok)) && vm_pass "R1 write" "rw and ow completed, studies vmstudy ($(rt_get "$s" id)) and other active, baseline clean, $written bytes written = QEMU's wr_bytes of c0"
	vm_measure "boot 1 wall (s)" "$(dw_elapsed "$t0")"
	[[ -s $s && -s $out/files/study-other-b1.json ]] || { dw_die retention "boot 1 sent no study files"; return 1; }
}

# ---------------------------------------------------------------- corruption
retention_corrupt() {
	local t0
	t0=$(dw_now)
	vm_running && { dw_die retention "the guest is still running"; return 1; }
	rt_py corrupt "$RT_WORK/rt0.img" "$RT_WORK/rt1.img" "$RT_OUT/study-vmstudy-b1.json" \
		"$RT_OUT/study-other-b1.json" "$RT_OUT/expected.json" "$RT_UNREADABLE_LBA" "$RT_IO_BLOCKS" \
		>"$RT_OUT/corruption.txt" || { dw_die retention "retention.py corrupt failed"; return 1; }
	sed 's/^/[retention] corrupt: /' "$RT_OUT/corruption.txt" >&2
	vm_measure "corruption on the host, guest off (s)" "$(dw_elapsed "$t0")"
	vm_measure "expected bad blocks" "$(rt_get "$RT_OUT/expected.json" bad)"
}

# ---------------------------------------------------------------- boot 2
retention_boot2() {
	local out=$RT_OUT/boot2 t0 tv waited m ok=1 exp_bad s e v got
	t0=$(dw_now)
	rt_boot 2 "$out" || return 1
	prom_start "$out" "127.0.0.1:$VM_HOSTPORT" 1s || return 1
	RT_DEV2=$(vm_wait_marker rt-devices 120) || return 1
	vm_measure "boot 2: devices" "$RT_DEV2"
	vm_wait_marker service-up 60 >/dev/null || return 1
	vm_measure "boot 2: QEMU start -> daemon listening (s)" "$(dw_elapsed "$VM_T0")"
	prom_wait_up 60 || return 1
	tv=$(dw_now)
	exp_bad=$(($(rt_get "$RT_OUT/expected.json" bad | dw_python -c 'import json,sys; print(sum(json.load(sys.stdin).values()))') * 4096))
	if waited=$(prom_wait 'drivewatch_phase_runs_total{phase="rv",outcome="completed"}' 1 180); then
		vm_measure "boot 2: Prometheus up -> rv completed in Prometheus (s)" "${waited%% *}"
	else
		vm_fail "R2 metrics" "drivewatch_phase_runs_total{phase=\"rv\",outcome=\"completed\"} did not reach 1 within 180 s: $(prom_query '{__name__=~"drivewatch_phase_runs_total|drivewatch_phase_state",phase="rv"}' | head -c 600)"
		ok=0
	fi
	vm_measure "boot 2: QEMU start -> rv completed in Prometheus (s)" "$(dw_elapsed "$VM_T0")"
	sleep 2 # one more scrape, so every series of the run is in
	{
		echo "# drivewatch_phase_* and drivewatch_retention_* in Prometheus after the verify"
		prom_query '{__name__=~"drivewatch_phase_.*|drivewatch_retention_.*"}' |
			dw_python -c '
import json, sys
for r in sorted(json.load(sys.stdin)["data"]["result"], key=lambda r: sorted(r["metric"].items())):
    m = dict(r["metric"]); n = m.pop("__name__"); m.pop("job", None); m.pop("instance", None)
    print("%s{%s} %s" % (n, ",".join("%s=\"%s\"" % kv for kv in sorted(m.items())), r["value"][1]))'
	} >"$RT_OUT/prom-metrics.txt" 2>&1 || true
	v=$(prom_value 'drivewatch_phase_result_bytes{phase="rv",measure="bad"}' 2>/dev/null) || v=
	vm_measure "boot 2: phase_result_bytes{rv,bad} / expected" "$v / $exp_bad"
	if [[ $v != "$exp_bad" ]]; then
		vm_fail "R2 metrics" "drivewatch_phase_result_bytes{phase=\"rv\",measure=\"bad\"} = '$v', expected $exp_bad"
		ok=0
	fi
	v=$(prom_value 'drivewatch_phase_result_bytes{phase="rv",measure="verified"}' 2>/dev/null) || v=
	vm_measure "boot 2: phase_result_bytes{rv,verified}" "$v"
	v=$(prom_value 'drivewatch_phase_runs_total{phase="rw",outcome="completed"}' 2>/dev/null) || v=
	vm_measure "boot 2: runs_total{rw,completed} (boot 1's run, from the state disk)" "$v"
	if [[ $v != 1 ]]; then
		vm_fail "R2 metrics" "drivewatch_phase_runs_total{phase=\"rw\",outcome=\"completed\"} = '$v': boot 1's run is not in the history on the state disk"
		ok=0
	fi
	m=$(prom_value 'sum(drivewatch_phase_runs_total{phase="rv",outcome!="completed"})' 2>/dev/null) || m=
	vm_measure "boot 2: rv runs not completed (runs_total, outcome != completed)" "$m"
	((ok)) && vm_pass "R2 metrics" "rv completed (runs_total 1), result_bytes{measure=bad} $exp_bad, rw's boot-1 run counted"
	retention_prom_retention
	vm_wait_marker wait-host-verified 30 >/dev/null || return 1
	vm_send verified
	vm_wait_marker state-unmounted 120 >/dev/null || return 1
	vm_measure "boot 2: QEMU start -> exit (s)" "$(vm_wait_exit 60)" || return 1
	prom_stop
	vm_extract_files "$VM_LOG" "$out/files" >"$out/files.list" || true
	s=$out/files/study-vmstudy-b2.json
	cp "$s" "$RT_OUT/" 2>/dev/null || true
	vm_measure "boot 2: daemon rss/hwm kB, cpu s" "$(vm_markers | sed -n 's/^DWVM-MARK: daemon-rss //p') / $(vm_markers | sed -n 's/^DWVM-MARK: daemon-hwm //p'), $(vm_markers | sed -n 's/^DWVM-MARK: daemon-cpu //p')"
	vm_measure "boot 2: service exit" "$(vm_markers | sed -n 's/^DWVM-MARK: service-exit //p')"
	retention_check_history "$out/files/history.jsonl"
	retention_check_verify "$s"
	retention_check_report "$out/files"
	vm_measure "boot 2 wall (s)" "$(dw_elapsed "$t0")"
}

# R6: the retention series, if this drivewatch has them.
retention_prom_retention() {
	local names ok=1 c want got n
	names=$(grep -o '^drivewatch_retention_[a-z_]*' "$RT_OUT/prom-metrics.txt" | sort -u | tr '\n' ' ')
	vm_measure "boot 2: drivewatch_retention_* names in Prometheus" "${names:-none}"
	if [[ -z $names ]]; then
		vm_measure "R6 retention metrics" "not exported by this binary: skipped"
		printf 'SKIP R6 retention metrics: no drivewatch_retention_* series in Prometheus\n' >>"$RT_OUT/assertions.txt"
		return 0
	fi
	grep '^drivewatch_retention_' "$RT_OUT/prom-metrics.txt" >"$RT_OUT/prom-retention.txt" || true
	for c in unreadable wrong_content misplaced stale; do
		want=$(rt_get "$RT_OUT/expected.json" "bad.$c")
		got=$(prom_value "drivewatch_retention_bad_blocks{study=\"vmstudy\",class=\"$c\",read=\"last_verify\"}" 2>/dev/null) || got=
		if [[ $got != "$want" ]]; then
			vm_fail "R6 retention metrics" "drivewatch_retention_bad_blocks{study=\"vmstudy\",class=\"$c\",read=\"last_verify\"} = '$got', expected $want"
			ok=0
		fi
		got=$(prom_value "drivewatch_retention_bad_blocks{study=\"vmstudy\",class=\"$c\",read=\"baseline\"}" 2>/dev/null) || got=
		if [[ $got != 0 ]]; then
			vm_fail "R6 retention metrics" "drivewatch_retention_bad_blocks{study=\"vmstudy\",class=\"$c\",read=\"baseline\"} = '$got', expected 0"
			ok=0
		fi
	done
	got=$(prom_value 'drivewatch_retention_smart_delta{study="vmstudy",counter="power_cycles"}' 2>/dev/null) || got=
	vm_measure "boot 2: drivewatch_retention_smart_delta{power_cycles}" "${got:-absent}"
	got=$(prom_value 'drivewatch_retention_blocks_verified{study="vmstudy"}' 2>/dev/null) || got=
	want=$(rt_get "$RT_OUT/expected.json" blocks)
	if [[ $got != "$want" ]]; then
		vm_fail "R6 retention metrics" "drivewatch_retention_blocks_verified{study=\"vmstudy\"} = '$got', expected $want"
		ok=0
	fi
	for n in drivewatch_retention_age_seconds drivewatch_retention_last_verify_timestamp_seconds; do
		got=$(prom_value "$n{study=\"vmstudy\",serial=\"DWSN0001\",target=\"scratch\"}" 2>/dev/null) || got=
		vm_measure "boot 2: $n{vmstudy}" "${got:-absent}"
		if [[ -z $got ]]; then
			vm_fail "R6 retention metrics" "$n{study=\"vmstudy\",serial=\"DWSN0001\",target=\"scratch\"} is absent"
			ok=0
		fi
	done
	for want in baseline last_verify; do
		n=$(prom_query "count(drivewatch_retention_read_latency_seconds{study=\"vmstudy\",read=\"$want\"})" |
			dw_python "$DW_VM_DIR/vmctl.py" jsonpath data.result.0.value.1)
		vm_measure "boot 2: read_latency_seconds{read=$want} series" "${n:-0}"
		if [[ -z $n || $n == 0 ]]; then
			vm_fail "R6 retention metrics" "no drivewatch_retention_read_latency_seconds{study=\"vmstudy\",read=\"$want\"}"
			ok=0
		fi
	done
	((ok)) && vm_pass "R6 retention metrics" "bad_blocks by class, blocks_verified, age, last verify time and read latency (baseline, last_verify) for vmstudy in Prometheus"
	return 0
}

# Every run in the history; a verify run that did not complete is a
# drivewatch issue worth seeing (it costs the study a whole interval) but
# not a failure of this scenario: see the "ISSUE" lines.
retention_check_history() {
	local h=$1 line
	[[ -s $h ]] || { vm_fail "R2 metrics" "no history.jsonl from boot 2"; return 0; }
	while IFS= read -r line; do
		vm_measure "history" "$line"
		if [[ $line == rv\ * && $line != *" completed "* ]]; then
			printf 'ISSUE (drivewatch, not failed here): a scheduled verify did not complete: %s\n' "$line" >>"$RT_OUT/assertions.txt"
			vm_log "ISSUE: a scheduled verify did not complete: $line"
		fi
	done < <(dw_python -c '
import json, sys
for l in open(sys.argv[1]):
    r = json.loads(l)
    print("%s %s %s %.2fs %s" % (r["phase"], r["device"], r["outcome"], r["duration_seconds"], r.get("reason", "")))' "$h")
}

# R3, R4, R5 from the study file boot 2 sent.
retention_check_verify() {
	local s=$1 out sd a b p1 p2 h1 h2 ok=1
	if [[ ! -s $s ]]; then
		vm_fail "R3 verdicts" "boot 2 sent no study file"
		return 0
	fi
	vm_measure "boot 2: verifies, last outcome" "$(rt_get "$s" verifies | dw_python -c 'import json,sys; print(len(json.load(sys.stdin)))') $(rt_get "$s" verifies.-1.outcome)"
	vm_measure "boot 2: last verify bad" "$(rt_get "$s" verifies.-1.bad)"
	vm_measure "boot 2: last verify ranges" "$(rt_get "$s" verifies.-1.ranges)"
	vm_measure "boot 2: last verify quantiles (s)" "$(rt_get "$s" verifies.-1.quantiles)"
	vm_measure "boot 2: last verify delta_vs_baseline" "$(rt_get "$s" verifies.-1.delta_vs_baseline)"
	vm_measure "boot 2: last verify duration (s)" "$(rt_awk "printf \"%.2f\", $(rt_get "$s" verifies.-1.end) - $(rt_get "$s" verifies.-1.start)")"
	vm_measure "boot 2: ages wall / powered on / off / equivalent (s)" "$(rt_get "$s" verifies.-1.age_seconds) / $(rt_get "$s" verifies.-1.powered_on_seconds) / $(rt_get "$s" verifies.-1.powered_off_seconds) / $(rt_get "$s" verifies.-1.equivalent_age_seconds)"
	if out=$(rt_py check "$s" "$RT_OUT/expected.json" 2>&1); then
		vm_pass "R3 verdicts" "the verify found exactly the $(rt_get "$RT_OUT/expected.json" bad) bad blocks put there, at the expected LBAs, with first_difference / found_lba / found_study"
	else
		vm_fail "R3 verdicts" "$(tr '\n' '|' <<<"$out")"
	fi
	# R4: drivewatch's SMART deltas against nvme-cli's two logs.
	sd=$(rt_get "$s" verifies.-1.smart_delta)
	a=$RT_OUT/boot1/files/smart-b1-written-DWSN0001.json
	b=$RT_OUT/boot2/files/smart-b2-verified-DWSN0001.json
	p1=$(rt_smart "$a" power_cycles)
	p2=$(rt_smart "$b" power_cycles)
	h1=$(rt_smart "$a" power_on_hours)
	h2=$(rt_smart "$b" power_on_hours)
	vm_measure "R4 smart_at_write (drivewatch)" "$(rt_get "$s" smart_at_write)"
	vm_measure "R4 verify's smart (drivewatch)" "$(rt_get "$s" verifies.-1.smart)"
	vm_measure "R4 smart_delta (drivewatch)" "$sd"
	vm_measure "R4 nvme-cli DWSN0001 power_cycles boot 1 / boot 2" "$p1 / $p2"
	vm_measure "R4 nvme-cli DWSN0001 power_on_hours boot 1 / boot 2" "$h1 / $h2"
	vm_measure "R4 nvme-cli DWSN0001 unsafe_shutdowns boot 1 / boot 2" "$(rt_smart "$a" unsafe_shutdowns) / $(rt_smart "$b" unsafe_shutdowns)"
	vm_measure "R4 nvme-cli DWSN0001 media_errors boot 1 / boot 2" "$(rt_smart "$a" media_errors) / $(rt_smart "$b" media_errors)"
	vm_measure "R4 nvme-cli DWSN0001 num_err_log_entries boot 1 / boot 2" "$(rt_smart "$a" num_err_log_entries) / $(rt_smart "$b" num_err_log_entries)"
	if [[ -z $p1 || -z $p2 || $(rt_get "$s" verifies.-1.smart_delta.power_cycles) != $((p2 - p1)) ]]; then
		vm_fail "R4 SMART delta" "smart_delta.power_cycles '$(rt_get "$s" verifies.-1.smart_delta.power_cycles)', nvme-cli says $p1 -> $p2"
		ok=0
	fi
	if [[ -z $h1 || -z $h2 || $(rt_get "$s" verifies.-1.smart_delta.power_on_hours) != $((h2 - h1)) ]]; then
		vm_fail "R4 SMART delta" "smart_delta.power_on_hours '$(rt_get "$s" verifies.-1.smart_delta.power_on_hours)', nvme-cli says $h1 -> $h2"
		ok=0
	fi
	if ((ok)); then
		if [[ $((p2 - p1)) == 1 ]]; then
			vm_pass "R4 SMART delta" "power_cycles delta 1 = nvme-cli's $p1 -> $p2 (the power cycle is seen)"
		else
			vm_pass "R4 SMART delta" "smart_delta.power_cycles $((p2 - p1)) = nvme-cli's $p1 -> $p2, power_on_hours $((h2 - h1)) = $h1 -> $h2. NOTE: QEMU 7.2's emulated controller does not count power cycles and restarts power-on hours with each QEMU process, so the power-off between the boots is NOT visible in SMART here; a real drive would show power_cycles +1"
		fi
	fi
	# R5: identity by serial across the renaming.
	local n1 n2
	n1=$(sed -n 's/.*DWSN0001=\([^ ]*\).*/\1/p' <<<"$RT_DEV1")
	n2=$(sed -n 's/.*DWSN0001=\([^ ]*\).*/\1/p' <<<"$RT_DEV2")
	vm_measure "R5 DWSN0001 controller/namespace boot 1 -> boot 2" "$n1 -> $n2"
	vm_measure "R5 boot 2 config's scratch block_device" "$(sed -n 's/^block_device = //p' "$RT_OUT/boot2/files/rt-2.toml" 2>/dev/null | head -n 1)"
	if [[ $(rt_get "$s" verifies.-1.outcome) == completed && $(rt_get "$s" serial) == DWSN0001 ]]; then
		if [[ ${n1#*/} != "${n2#*/}" ]]; then
			vm_pass "R5 identity" "DWSN0001's namespace moved from /dev/${n1#*/} to /dev/${n2#*/}; the verify on the new path found the study (serial DWSN0001)"
		else
			vm_pass "R5 identity" "the verify found the study on DWSN0001; NOTE: the kernel gave DWSN0001 the same name /dev/${n2#*/} in both boots despite the reversed PCI order, so the rename was not exercised"
		fi
	else
		vm_fail "R5 identity" "no completed verify of vmstudy on DWSN0001 in boot 2 (outcome '$(rt_get "$s" verifies.-1.outcome)')"
	fi
}

# R7: the report in three formats.
retention_check_report() {
	local f=$1 ok=1 fmt rc
	for fmt in txt json html; do
		rc=$(rt_cli_rc "report.$fmt")
		cp "$f/report.$fmt" "$RT_OUT/report.$fmt" 2>/dev/null || true
		vm_measure "R7 report --format=${fmt/txt/text}: exit, bytes" "${rc#* } $(stat -c %s "$f/report.$fmt" 2>/dev/null)"
		if [[ ${rc#* } != 0 || ! -s $f/report.$fmt ]]; then
			vm_fail "R7 report" "retention report vmstudy --format=${fmt/txt/text}: exit '${rc#* }', $(stat -c %s "$f/report.$fmt" 2>/dev/null) bytes; stderr: $(head -c 300 "$f/report.$fmt.err" 2>/dev/null)"
			ok=0
		fi
	done
	if [[ -s $f/report.json ]] && ! grep -q '"wrong_content"' "$f/report.json"; then
		vm_fail "R7 report" "report.json does not mention wrong_content"
		ok=0
	fi
	if [[ -s $f/report.html ]] && ! grep -qi '<html' "$f/report.html"; then
		vm_fail "R7 report" "report.html is not an HTML page"
		ok=0
	fi
	if [[ -s $f/report.html ]] && ! grep -q 'vmstudy' "$f/report.html"; then
		vm_fail "R7 report" "report.html does not name the study"
		ok=0
	fi
	vm_measure "R7 retention list (boot 2)" "$(tr '\n' '|' <"$f/list-b2.txt" 2>/dev/null)"
	((ok)) && vm_pass "R7 report" "text, json and html rendered in the guest (artefacts report.txt, report.json, report.html)"
	return 0
}

# ---------------------------------------------------------------- driver
retention_run() {
	vm_assert_init retention "$1"
	RT_OUT=$VM_ASSERT_OUT
	RT_WORK=$2
	local t0 err
	t0=$(dw_now)
	[[ -n ${DRIVEWATCH_BIN:-} && -x $DRIVEWATCH_BIN ]] ||
		{ dw_die retention "DRIVEWATCH_BIN='${DRIVEWATCH_BIN:-}' is not an executable (build the drivewatch target)"; return 1; }
	command -v mkfs.ext4 >/dev/null || dw_need_pkgs e2fsprogs || return 1
	sed -e 's#@SCRATCH_DEV@#/dev/nvme0n1#' -e 's#@OTHER_DEV@#/dev/nvme1n1#' \
		"$RETENTION_DIR/drivewatch.toml" >"$RT_OUT/drivewatch.toml"
	err=$("$DRIVEWATCH_BIN" check-config "$RT_OUT/drivewatch.toml" 2>&1) ||
		{ dw_die retention "check-config of the guest config: $err"; return 1; }
	# shellcheck disable=SC2016 # expanded in the guest
	DW_VM_EXTRA_FILES="${DW_VM_EXTRA_FILES:-} $RETENTION_DIR/drivewatch.toml:/etc/drivewatch/retention.toml" \
		DW_VM_EXTRA_MODULES="${DW_VM_EXTRA_MODULES:-} virtio_blk crc32c_generic ext4" \
		vm_build_initramfs "$RT_WORK/retention.cpio.gz" "$RETENTION_DIR/guest.sh" \
		'exec drivewatch --config.file=/tmp/rt.toml --web.listen-address=0.0.0.0:${DWVM_PORT:-9647}' || return 1
	retention_boot1 || return 1
	retention_corrupt || return 1
	retention_boot2 || return 1
	vm_measure "retention scenario wall time (s)" "$(dw_elapsed "$t0")"
	vm_assert_result
}
