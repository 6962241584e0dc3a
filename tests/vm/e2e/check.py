#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Assertions of the VM end-to-end scenario (stdlib only).

drivewatch runs in the guest; a real Prometheus on the host scrapes it.  The
subcommands read what Prometheus holds (HTTP query API) and what the guest
shipped (nvme-cli JSON, the daemon's log), and print one line per finding.
Exit status 0 when the assertion holds, 1 when it fails (the output says what
differs, with both values), 2 on a usage or infrastructure error.

  health --prom URL --dump DIR --not-before T [--timeout S] [--docs FILE]
      Assertion 1: every Identify/SMART/Identify Namespace value drivewatch
      exports equals nvme-cli's JSON in DIR (dw_health_dump in the guest),
      after unit conversion, for every controller in DIR/manifest.  Waits
      (up to S) until Prometheus holds, for every controller, a health probe
      run that started at or after guest Unix time T, then compares at that
      instant.  With --docs, fails if the "Health probe" section of
      docs/metrics.md names a metric this check does not know.
  same-smart DIR1 DIR2
      The SMART logs in DIR2 (read after the comparison) equal those in DIR1
      (read before): no I/O moved the counters while we compared.
  metrics --prom URL --docs FILE [--config GUEST_TOML]
      Assertion 4: every drivewatch_* metric named in docs/metrics.md is in
      Prometheus, except the ones QEMU cannot produce (NOT_FROM_QEMU) or this
      setup does not (NOT_IN_THIS_SETUP, and metrics documented only for a
      probe the guest config disables), which must be absent, as must the
      ABSENT_SERIES; nothing outside the contract is exported.
  cw --prom URL --serial SERIAL --want N [--also SERIAL=N ...] [--timeout S]
      Assertion 3: wait until drivewatch_critical_warning_raw{serial} == N
      and every drivewatch_critical_warning{serial,bit} series matches N's
      bits (and the --also drives show their values).  Prints the seconds
      waited; on timeout prints every series involved.
  log --file SERVICE_LOG [--hotplug SERIAL] [--cycles N]
      Assertion 5 (log part): no line at level error, no unparsable line
      (except KNOWN_FOREIGN_LINES around hot-plug), no warning repeated; each
      distinct hot-plug warning of SERIAL (vanished, a probe failing on it)
      may appear up to 2*N times (before and after a re-plug).
"""
import argparse
import json
import os
import re
import sys
import time
from collections import Counter, OrderedDict

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import vmctl  # noqa: E402  (tests/vm/vmctl.py: the Prometheus client)

DATA_UNIT_BYTES = 512000
KELVIN_AT_0C = 273.15
# Fractional values (°C, ratios) may differ from ours in the last bits of
# the double; a wrong conversion (e.g. -273 instead of -273.15) is 0.15 off.
FRACTION_TOLERANCE = 1e-9

# Metrics of docs/metrics.md that QEMU 7.2's emulated controller cannot
# produce, and why.  Assertion 4 checks that they are absent (so this list
# stays honest: if QEMU or drivewatch starts producing one, the test says so).
NOT_FROM_QEMU = OrderedDict([
    # health probe
    ("drivewatch_nvm_capacity_bytes",
     "Identify Controller TNVMCAP is 0 (QEMU 7.2 reports no NVM capacity); 0 means not reported"),
    ("drivewatch_nvm_unallocated_capacity_bytes",
     "exported only when TNVMCAP is reported, and it is 0"),
    ("drivewatch_energy_consumed_joules_total",
     "SMART bytes 239:232 (Operational Lifetime Energy Consumed) are reserved, 0, in QEMU 7.2"),
    ("drivewatch_interval_power_watts",
     "SMART bytes 243:240 (Interval Power Measurement) are 0 in QEMU 7.2: not reported"),
    # power probe
    ("drivewatch_apst_enabled",
     "no APST: Identify APSTA is 0 and Get Features 0Ch fails with 0x4002; exported only with APST"),
    ("drivewatch_apst_idle_time_seconds",
     "no APST (as above), so no APST table"),
    ("drivewatch_power_state_idle_power_watts",
     "QEMU's one power state descriptor reports no idle power (IPS = 00b)"),
    ("drivewatch_power_state_active_power_watts",
     "QEMU's one power state descriptor reports no active power (APS = 00b)"),
    # self-test probe: Identify OACS bit 4 is clear (no Device Self-test)
    ] + [(m, "no device self-test: Identify OACS bit 4 is clear (tests/vm/smartd)") for m in (
        "drivewatch_self_test_in_progress", "drivewatch_self_test_completion_ratio",
        "drivewatch_self_test_last_result", "drivewatch_self_test_last_power_on_seconds",
        "drivewatch_self_test_last_seen_timestamp_seconds", "drivewatch_self_test_failures_total",
        "drivewatch_self_test_started_total", "drivewatch_self_test_failing_lba",
        "drivewatch_self_test_failing_segment")] + [
    # error log probe
    ("drivewatch_error_log_new_entries_total",
     "QEMU 7.2's Error Information log stays empty (one zero entry), so no new entry is ever counted"),
    ("drivewatch_error_log_newest_seen_timestamp_seconds",
     "exported only when the error log holds an entry, and QEMU's is empty"),
    # persistent event log probe: Identify LPA bit 4 is clear
    ] + [(m, "no persistent event log: Identify LPA bit 4 is clear (tests/vm/smartd)") for m in (
        "drivewatch_persistent_event_log_events_total", "drivewatch_persistent_event_log_events",
        "drivewatch_persistent_event_log_thermal_excursion_celsius",
        "drivewatch_persistent_event_log_thermal_excursion_threshold_celsius",
        "drivewatch_persistent_event_log_thermal_excursion_timestamp_seconds",
        "drivewatch_persistent_event_log_last_processed_timestamp_seconds",
        "drivewatch_persistent_event_log_decode_problems")] + [
    # ocp_smart probe: QEMU 7.2 answers Get Log Page C0h with Invalid Field
    ] + [(m, "no OCP SMART extended log: C0h is answered Invalid Field (tests/vm/smartd)") for m in (
        "drivewatch_ocp_smart_extended_info",
        "drivewatch_ocp_physical_media_written_bytes_total",
        "drivewatch_ocp_physical_media_read_bytes_total", "drivewatch_ocp_bad_nand_blocks",
        "drivewatch_ocp_bad_nand_blocks_normalized", "drivewatch_ocp_xor_recoveries_total",
        "drivewatch_ocp_uncorrectable_read_errors_total", "drivewatch_ocp_soft_ecc_errors_total",
        "drivewatch_ocp_end_to_end_errors_total", "drivewatch_ocp_system_data_used_ratio",
        "drivewatch_ocp_refreshes_total", "drivewatch_ocp_user_data_erase_count",
        "drivewatch_ocp_thermal_throttling_events_total", "drivewatch_ocp_thermal_throttling_status",
        "drivewatch_ocp_pcie_correctable_errors_total", "drivewatch_ocp_incomplete_shutdowns_total",
        "drivewatch_ocp_free_blocks_ratio", "drivewatch_ocp_capacitor_health_ratio")
])
# Documented metrics this setup does not produce for reasons other than
# QEMU; also asserted absent.
NOT_IN_THIS_SETUP = OrderedDict([
    ("drivewatch_hwmon_temperature_celsius",
     "only when admin passthrough is refused (no CAP_SYS_ADMIN); the e2e guest runs as root (tests/vm/privilege covers it)"),
    ("drivewatch_hwmon_temperature_threshold_celsius",
     "only when admin passthrough is refused (no CAP_SYS_ADMIN); the e2e guest runs as root (tests/vm/privilege covers it)"),
    ("drivewatch_power_meter_success",
     "only for a drive with an external power meter ([probes.power] meters); the guest config has none"),
    ("drivewatch_power_at_load_watts",
     "needs the read latency probe's 10-IOPS turns, and the guest config switches it off (tests/vm/power covers it)"),
    ("drivewatch_phase_state",
     "only with [[aging.phases]] configured; the e2e guest has none (tests/run/phase_test.sh and tests/integration cover them)"),
    ("drivewatch_phase_progress_ratio",
     "only with [[aging.phases]] configured; the e2e guest has none (tests/run/phase_test.sh and tests/integration cover them)"),
    ("drivewatch_phase_current_throughput_bytes_per_second",
     "only with [[aging.phases]] configured; the e2e guest has none (tests/run/phase_test.sh and tests/integration cover them)"),
    ("drivewatch_phase_last_run_timestamp_seconds",
     "only with [[aging.phases]] configured; the e2e guest has none (tests/run/phase_test.sh and tests/integration cover them)"),
    ("drivewatch_phase_last_run_duration_seconds",
     "only with [[aging.phases]] configured; the e2e guest has none (tests/run/phase_test.sh and tests/integration cover them)"),
    ("drivewatch_phase_last_run_success",
     "only with [[aging.phases]] configured; the e2e guest has none (tests/run/phase_test.sh and tests/integration cover them)"),
    ("drivewatch_phase_runs_total",
     "only with [[aging.phases]] configured; the e2e guest has none (tests/run/phase_test.sh and tests/integration cover them)"),
    ("drivewatch_phase_last_completed_timestamp_seconds",
     "only with [[aging.phases]] configured; the e2e guest has none (tests/run/phase_test.sh and tests/integration cover them)"),
    ("drivewatch_phase_result_bytes",
     "only with [[aging.phases]] configured; the e2e guest has none (tests/run/phase_test.sh and tests/integration cover them)"),
    ("drivewatch_phase_result_bytes_per_second",
     "only with [[aging.phases]] configured; the e2e guest has none (tests/run/phase_test.sh and tests/integration cover them)"),
    ("drivewatch_phase_result_iops",
     "only with [[aging.phases]] configured; the e2e guest has none (tests/run/phase_test.sh and tests/integration cover them)"),
    ("drivewatch_phase_result_ios",
     "only with a replay phase run; the e2e guest has none (tests/run/replay_test.sh and tests/vm/liveproof cover it)"),
    ("drivewatch_phase_result_operations",
     "only with a sqlite or pgbench phase run; the e2e guest has none (tests/run/app_phase_test.sh covers them)"),
    ("drivewatch_phase_result_operations_per_second",
     "only with a sqlite or pgbench phase run; the e2e guest has none (tests/run/app_phase_test.sh covers them)"),
    ("drivewatch_phase_result_seconds",
     "only with [[aging.phases]] configured; the e2e guest has none (tests/run/phase_test.sh and tests/integration cover them)"),
    ("drivewatch_phase_result_ratio",
     "only with [[aging.phases]] configured; the e2e guest has none (tests/run/phase_test.sh and tests/integration cover them)"),
    ("drivewatch_endurance_host_written_bytes",
     "only with an endurance phase's test begun; the e2e guest has none (tests/integration/endurance_wear_test.cc covers them)"),
    ("drivewatch_endurance_drive_writes",
     "only with an endurance phase's test begun; the e2e guest has none (tests/integration/endurance_wear_test.cc covers them)"),
    ("drivewatch_endurance_ended",
     "only with an endurance phase's test begun; the e2e guest has none (tests/integration/endurance_wear_test.cc covers them)"),
    ("drivewatch_endurance_last_pass_percentage_used_ratio",
     "only with an endurance phase's test begun; the e2e guest has none (tests/integration/endurance_wear_test.cc covers them)"),
    ("drivewatch_endurance_last_pass_write_amplification_ratio",
     "only with an endurance phase's test begun; the e2e guest has none (tests/integration/endurance_wear_test.cc covers them)"),
    ("drivewatch_phase_result_watts",
     "only with a power-states phase run; the e2e guest has none (tests/integration/power_states_test.cc covers it)"),
    ("drivewatch_retention_study_info",
     "only with a retention study in the state directory; the e2e guest has none (tests/vm/retention covers them)"),
    ("drivewatch_retention_study_damaged",
     "only with a retention study in the state directory; the e2e guest has none (tests/vm/liveproof and tests/run/retention_damage_test.sh cover it)"),
    ("drivewatch_retention_age_seconds",
     "only with a retention study in the state directory; the e2e guest has none (tests/vm/retention covers them)"),
    ("drivewatch_retention_powered_on_seconds",
     "only with a retention study in the state directory; the e2e guest has none (tests/vm/retention covers them)"),
    ("drivewatch_retention_powered_off_seconds",
     "only with a retention study in the state directory; the e2e guest has none (tests/vm/retention covers them)"),
    ("drivewatch_retention_powered_on_equivalent_seconds",
     "only with a retention study in the state directory; the e2e guest has none (tests/vm/retention covers them)"),
    ("drivewatch_retention_equivalent_age_seconds",
     "only with a retention study in the state directory; the e2e guest has none (tests/vm/retention covers them)"),
    ("drivewatch_retention_last_verify_timestamp_seconds",
     "only with a retention study in the state directory; the e2e guest has none (tests/vm/retention covers them)"),
    ("drivewatch_retention_verifies_total",
     "only with a retention study in the state directory; the e2e guest has none (tests/vm/retention covers them)"),
    ("drivewatch_retention_blocks_verified",
     "only with a retention study in the state directory; the e2e guest has none (tests/vm/retention covers them)"),
    ("drivewatch_retention_bad_blocks",
     "only with a retention study in the state directory; the e2e guest has none (tests/vm/retention covers them)"),
    ("drivewatch_retention_read_latency_seconds",
     "only with a retention study in the state directory; the e2e guest has none (tests/vm/retention covers them)"),
    ("drivewatch_retention_reads_over_ratio",
     "only with a retention study in the state directory; the e2e guest has none (tests/vm/retention covers them)"),
    ("drivewatch_retention_smart_delta",
     "only with a retention study in the state directory; the e2e guest has none (tests/vm/retention covers them)"),
])
# Series (not whole metrics) QEMU cannot produce: must be absent.
ABSENT_SERIES = OrderedDict([
    ('drivewatch_temperature_celsius{sensor!="composite"}',
     "QEMU 7.2 implements no Temperature Sensor 1-8 (SMART bytes 215:200 are 0)"),
    ('drivewatch_temperature_threshold_celsius{threshold=~"over|under",sensor!="composite"}',
     "no Temperature Sensor 1-8, so no feature 04h thresholds for them"),
    ('drivewatch_temperature_threshold_celsius{threshold=~"tmt1|tmt2|mntmt|mxtmt"}',
     "no host controlled thermal management (Identify HCTMA is 0; Get Features 10h fails with 0x4002)"),
    ('drivewatch_idle_power_watts{source!="psd_estimate"}',
     "no meter configured and no Interval Power Measurement: the power state descriptor estimate only"),
])

CRITICAL_WARNING_BITS = ["available_spare", "temperature", "reliability", "read_only",
                         "volatile_memory_backup", "persistent_memory_region"]


# ---------------------------------------------------------------- conversions
def ident(v):
    return int(v)


def kelvin(v):
    return float(int(v)) - KELVIN_AT_0C


def percent(v):
    return int(v) / 100.0


def data_units(v):
    return int(v) * DATA_UNIT_BYTES


def minutes(v):
    return int(v) * 60


def hours(v):
    return int(v) * 3600


# SMART log (nvme smart-log -o json, nvme-cli 2.3 keys) -> drivewatch.
# (metric, extra labels, nvme-cli key, conversion, how it is described)
SMART_FIELDS = [
    ("drivewatch_critical_warning_raw", {}, "critical_warning", ident, ""),
    ("drivewatch_endurance_group_critical_warning_raw", {}, "endurance_grp_critical_warning_summary", ident, ""),
    ("drivewatch_temperature_celsius", {"sensor": "composite"}, "temperature", kelvin, "K - 273.15"),
    ("drivewatch_available_spare_ratio", {}, "avail_spare", percent, "% / 100"),
    ("drivewatch_available_spare_threshold_ratio", {}, "spare_thresh", percent, "% / 100"),
    ("drivewatch_percentage_used_ratio", {}, "percent_used", percent, "% / 100"),
    ("drivewatch_data_read_bytes_total", {}, "data_units_read", data_units, "units x 512000"),
    ("drivewatch_data_written_bytes_total", {}, "data_units_written", data_units, "units x 512000"),
    ("drivewatch_host_read_commands_total", {}, "host_read_commands", ident, ""),
    ("drivewatch_host_write_commands_total", {}, "host_write_commands", ident, ""),
    ("drivewatch_controller_busy_seconds_total", {}, "controller_busy_time", minutes, "min x 60"),
    ("drivewatch_power_cycles_total", {}, "power_cycles", ident, ""),
    ("drivewatch_power_on_seconds_total", {}, "power_on_hours", hours, "h x 3600"),
    ("drivewatch_unsafe_shutdowns_total", {}, "unsafe_shutdowns", ident, ""),
    ("drivewatch_media_errors_total", {}, "media_errors", ident, ""),
    ("drivewatch_error_log_entries_total", {}, "num_err_log_entries", ident, ""),
    ("drivewatch_temperature_above_threshold_seconds_total", {"threshold": "wctemp"}, "warning_temp_time", minutes, "min x 60"),
    ("drivewatch_temperature_above_threshold_seconds_total", {"threshold": "cctemp"}, "critical_comp_time", minutes, "min x 60"),
    ("drivewatch_thermal_management_transitions_total", {"threshold": "tmt1"}, "thm_temp1_trans_count", ident, ""),
    ("drivewatch_thermal_management_transitions_total", {"threshold": "tmt2"}, "thm_temp2_trans_count", ident, ""),
    ("drivewatch_thermal_management_seconds_total", {"threshold": "tmt1"}, "thm_temp1_total_time", ident, ""),
    ("drivewatch_thermal_management_seconds_total", {"threshold": "tmt2"}, "thm_temp2_total_time", ident, ""),
]
# Identify Controller (nvme id-ctrl -o json) -> drivewatch.
ID_CTRL_FIELDS = [
    ("drivewatch_power_states", {}, "npss", lambda v: int(v) + 1, "NPSS + 1"),
    ("drivewatch_error_log_capacity_entries", {}, "elpe", lambda v: int(v) + 1, "ELPE + 1"),
]
NAMESPACE_METRICS = ["drivewatch_namespace_identify_success", "drivewatch_namespace_size_bytes",
                     "drivewatch_namespace_capacity_bytes", "drivewatch_namespace_utilization_bytes",
                     "drivewatch_namespace_logical_block_size_bytes"]
# Every metric of the health probe this check compares (or proves absent).
KNOWN_HEALTH_METRICS = ({m for m, *_ in SMART_FIELDS} | {m for m, *_ in ID_CTRL_FIELDS} |
                        set(NAMESPACE_METRICS) |
                        {"drivewatch_controller_info", "drivewatch_critical_warning",
                         "drivewatch_temperature_threshold_celsius", "drivewatch_nvm_capacity_bytes",
                         "drivewatch_nvm_unallocated_capacity_bytes",
                         "drivewatch_energy_consumed_joules_total", "drivewatch_interval_power_watts"})


# ---------------------------------------------------------------- helpers
def doc_metrics(path, section=None):
    """Backticked drivewatch_* names in docs/metrics.md (in one '## ' section)."""
    text = open(path, encoding="utf-8").read()
    if section is not None:
        m = re.search(r"^## %s.*?$(.*?)(?=^## |\Z)" % re.escape(section), text, re.M | re.S)
        if not m:
            raise SystemExit("check.py: no '## %s' section in %s" % (section, path))
        text = m.group(1)
    return set(re.findall(r"`(drivewatch_[a-z0-9_]+)`", text))


def doc_sections(path):
    """{'## ' heading: backticked drivewatch_* names under it (subsections included)}."""
    text = open(path, encoding="utf-8").read()
    out = OrderedDict()
    for m in re.finditer(r"^## (.*?)$(.*?)(?=^## |\Z)", text, re.M | re.S):
        out[m.group(1)] = set(re.findall(r"`(drivewatch_[a-z0-9_]+)`", m.group(1) + m.group(2)))
    return out


def disabled_probe_metrics(docs, config):
    """Metrics documented only in the sections of probes the guest config
    disables ("## ... (`[probes.NAME]`)" headings): {metric: probe}."""
    if not config:
        return {}
    import tomllib
    with open(config, "rb") as f:
        probes = tomllib.load(f).get("probes", {})
    disabled = [name for name, t in probes.items() if isinstance(t, dict) and t.get("enabled") is False]
    sections = doc_sections(docs)
    out = {}
    for name in disabled:
        tag = "`[probes.%s]" % name
        inside = set().union(*[ms for h, ms in sections.items() if tag in h] or [set()])
        outside = set().union(*[ms for h, ms in sections.items() if tag not in h] or [set()])
        for m in inside - outside:
            out[m] = name
    return out


def strip(labels):
    return {k: v for k, v in labels.items() if k not in ("__name__", "job", "instance")}


def fmt(v):
    if isinstance(v, float) and v.is_integer() and abs(v) < 1e18:
        return "%d" % v
    return repr(v)


def read_manifest(d):
    ctrls, nss = OrderedDict(), []
    with open(os.path.join(d, "manifest")) as f:
        for line in f:
            w = line.split()
            if w and w[0] == "ctrl":
                ctrls[w[1]] = {"name": w[2], "transport": w[3] if len(w) > 3 else "",
                               "address": w[4] if len(w) > 4 else ""}
            elif w and w[0] == "ns":
                nss.append({"serial": w[1], "nsid": w[2], "block": w[3]})
    return ctrls, nss


def load(d, name):
    with open(os.path.join(d, name)) as f:
        return json.load(f)


class Findings:
    def __init__(self, title):
        self.title = title
        self.bad = []
        self.ok = 0
        self.equal = []

    def check(self, what, got, want, source=""):
        """got: float from Prometheus or None; want: the expected value.
        Integers (counters, bytes, sizes) must be exact; fractional values
        (°C, ratios) within FRACTION_TOLERANCE, as K - 273.15 in doubles and
        the nearest double to the exact decimal differ in the last bit."""
        if got is None:
            self.bad.append("%s: missing in Prometheus; nvme-cli %s -> expected %s" % (what, source, fmt(float(want))))
        elif (got != float(want) if isinstance(want, int) or float(want).is_integer()
              else abs(got - want) > FRACTION_TOLERANCE):
            self.bad.append("%s: drivewatch %s, nvme-cli %s -> expected %s" % (what, fmt(got), source, fmt(float(want))))
        else:
            self.ok += 1
            self.equal.append("%s = %s (nvme-cli %s)" % (what, fmt(got), source))

    def fail(self, msg):
        self.bad.append(msg)

    def good(self, msg):
        self.ok += 1
        self.equal.append(msg)

    def report(self):
        for e in self.equal:
            print("equal %s" % e)
        for b in self.bad:
            print("MISMATCH %s" % b)
        if self.bad:
            print("FAIL %s: %d mismatches, %d values equal" % (self.title, len(self.bad), self.ok))
            return 1
        print("OK %s: %d values equal" % (self.title, self.ok))
        return 0


# ---------------------------------------------------------------- health
def cmd_health(a):
    prom = vmctl.Prom(a.prom)
    ctrls, nss = read_manifest(a.dump)
    f = Findings("health values match nvme-cli (dump %s)" % os.path.basename(a.dump.rstrip("/")))
    if a.docs:
        unknown = doc_metrics(a.docs, "Health probe") - KNOWN_HEALTH_METRICS
        for m in sorted(unknown):
            f.fail("%s is in the Health probe section of docs/metrics.md but check.py has no "
                   "nvme-cli comparison for it: add one (or to NOT_FROM_QEMU)" % m)
    if not ctrls:
        print("FAIL: the dump lists no controller")
        return 1

    # Wait until every controller has a health run that started after the dump.
    deadline = time.monotonic() + a.timeout
    while True:
        at = time.time()
        fresh, stale = {}, []
        for sn in ctrls:
            ts = prom.value('drivewatch_probe_last_success_timestamp_seconds{probe="health",serial="%s"}' % sn, at)
            dur = prom.value('drivewatch_probe_duration_seconds{probe="health",serial="%s"}' % sn, at)
            if ts is None or dur is None or ts - dur < a.not_before:
                stale.append("%s: last success %s, duration %s" % (sn, ts, dur))
            else:
                fresh[sn] = (ts, dur)
        if not stale:
            break
        if time.monotonic() > deadline:
            print("FAIL: no health probe run started after the nvme-cli dump (guest time %d) within %ds: %s"
                  % (a.not_before, a.timeout, "; ".join(stale)))
            return 1
        time.sleep(0.2)
    print("comparing at %.3f; runs compared: %s" % (at, ", ".join(
        "%s started %.2f s after the dump" % (sn, ts - dur - a.not_before) for sn, (ts, dur) in fresh.items())))

    series = {}
    for labels, v in prom.query('{__name__=~"drivewatch_.+"}', at):
        series.setdefault(labels["__name__"], []).append((strip(labels), v))

    def get(metric, labels):
        hits = [v for l, v in series.get(metric, []) if l == labels]
        if len(hits) > 1:
            f.fail("%s%s: %d series" % (metric, labels, len(hits)))
        return hits[0] if hits else None

    def labelsets(metric, sn):
        return [l for l, _ in series.get(metric, []) if l.get("serial") == sn]

    # The controllers drivewatch reports are exactly those nvme-cli saw.
    reported = {l.get("serial") for l, _ in series.get("drivewatch_controller_info", [])}
    if reported != set(ctrls):
        f.fail("drivewatch_controller_info serials %s, the guest's controllers %s" % (sorted(reported), sorted(ctrls)))

    for sn, c in ctrls.items():
        smart = load(a.dump, "smart-log-%s.json" % sn)
        idc = load(a.dump, "id-ctrl-%s.json" % sn)
        who = "serial=%s (%s)" % (sn, c["name"])

        # drive_info: the kernel name drivewatch reports is the guest's.
        info = labelsets("drivewatch_drive_info", sn)
        want_info = {"serial": sn, "kernel_name": c["name"], "model": idc["mn"].strip(),
                     "firmware": idc["fr"].strip(), "transport": c["transport"], "address": c["address"]}
        if info != [want_info]:
            f.fail("%s drivewatch_drive_info labels %s, guest sysfs/nvme-cli say %s" % (who, info, want_info))
        else:
            f.good("%s drivewatch_drive_info labels %s (guest sysfs, nvme-cli mn/fr)" % (who, info[0]))

        # Identify Controller
        ver = int(idc["ver"])
        version = "" if ver == 0 else "%d.%d" % (ver >> 16, (ver >> 8) & 0xff) + (".%d" % (ver & 0xff) if ver & 0xff else "")
        want = {"serial": sn, "model": idc["mn"].strip(), "firmware": idc["fr"].strip(),
                "vid": "0x%04x" % int(idc["vid"]), "ssvid": "0x%04x" % int(idc["ssvid"]),
                "ieee_oui": "%06x" % int(idc["ieee"]), "cntlid": str(int(idc["cntlid"])),
                "nvme_version": version}
        got = [(l, v) for l, v in series.get("drivewatch_controller_info", []) if l.get("serial") == sn]
        if [l for l, _ in got] != [want] or [v for _, v in got] != [1.0]:
            f.fail("%s drivewatch_controller_info %s, nvme-cli id-ctrl (sn/mn/fr/vid/ssvid/ieee/cntlid/ver=%#x) -> expected labels %s value 1"
                   % (who, [(l, fmt(v)) for l, v in got] or "missing", ver, want))
        else:
            f.good("%s drivewatch_controller_info labels %s (nvme-cli id-ctrl, ver=%#x)" % (who, want, ver))
        if idc["sn"].strip() != sn:
            f.fail("%s nvme-cli id-ctrl sn %r differs from sysfs serial" % (who, idc["sn"]))
        for metric, extra, key, conv, how in ID_CTRL_FIELDS:
            f.check("%s %s%s" % (who, metric, extra or ""), get(metric, dict(serial=sn, **extra)),
                    conv(idc[key]), "%s=%s%s" % (key, idc[key], " (%s)" % how if how else ""))
        for th in ("wctemp", "cctemp"):
            k = int(idc[th])
            what = "%s drivewatch_temperature_threshold_celsius{threshold=%s}" % (who, th)
            got1 = get("drivewatch_temperature_threshold_celsius", {"serial": sn, "threshold": th})
            if k == 0:
                if got1 is not None:
                    f.fail("%s: %s, but nvme-cli %s=0 (not reported): expected absent" % (what, fmt(got1), th))
                else:
                    f.good("%s absent (nvme-cli %s=0, not reported)" % (what, th))
            else:
                f.check(what, got1, kelvin(k), "%s=%d (K - 273.15)" % (th, k))
        tnvmcap, unvmcap = int(idc["tnvmcap"]), int(idc["unvmcap"])
        for metric, want_v, src in (("drivewatch_nvm_capacity_bytes", tnvmcap, "tnvmcap=%d" % tnvmcap),
                                    ("drivewatch_nvm_unallocated_capacity_bytes", unvmcap, "unvmcap=%d" % unvmcap)):
            got1 = get(metric, {"serial": sn})
            if tnvmcap == 0:
                if got1 is not None:
                    f.fail("%s %s: %s, but nvme-cli tnvmcap=0 (not reported): expected absent" % (who, metric, fmt(got1)))
                else:
                    f.good("%s %s absent (nvme-cli tnvmcap=0, not reported)" % (who, metric))
            else:
                f.check("%s %s" % (who, metric), got1, want_v, src)

        # SMART / health log
        for metric, extra, key, conv, how in SMART_FIELDS:
            if key not in smart:
                f.fail("%s nvme-cli smart-log has no %r" % (who, key))
                continue
            f.check("%s %s%s" % (who, metric, extra or ""), get(metric, dict(serial=sn, **extra)),
                    conv(smart[key]), "%s=%s%s" % (key, smart[key], " (%s)" % how if how else ""))
        cw = int(smart["critical_warning"])
        for i, bit in enumerate(CRITICAL_WARNING_BITS):
            f.check("%s drivewatch_critical_warning{bit=%s}" % (who, bit),
                    get("drivewatch_critical_warning", {"serial": sn, "bit": bit}),
                    (cw >> i) & 1, "critical_warning=%#x bit %d" % (cw, i))
        # Temperature sensors 1-8: nvme-cli prints the non-zero ones.
        want_sensors = {str(i): kelvin(smart["temperature_sensor_%d" % i])
                        for i in range(1, 9) if int(smart.get("temperature_sensor_%d" % i, 0)) != 0}
        got_sensors = {l["sensor"] for l in labelsets("drivewatch_temperature_celsius", sn)} - {"composite"}
        if got_sensors != set(want_sensors):
            f.fail("%s drivewatch_temperature_celsius sensors %s, nvme-cli reports sensors %s"
                   % (who, sorted(got_sensors), sorted(want_sensors)))
        for s, k in want_sensors.items():
            f.check("%s drivewatch_temperature_celsius{sensor=%s}" % (who, s),
                    get("drivewatch_temperature_celsius", {"serial": sn, "sensor": s}), k,
                    "temperature_sensor_%s" % s)
        # Not reported by QEMU -> absent (see NOT_FROM_QEMU).
        for metric in ("drivewatch_energy_consumed_joules_total", "drivewatch_interval_power_watts"):
            if labelsets(metric, sn):
                f.fail("%s %s present, but QEMU does not report it (SMART bytes 232+ are 0)" % (who, metric))

        # Identify Namespace, per nsid
        ns_here = [n for n in nss if n["serial"] == sn]
        want_nsids = {n["nsid"] for n in ns_here}
        for metric in NAMESPACE_METRICS:
            got_nsids = {l.get("nsid") for l in labelsets(metric, sn)}
            if got_nsids != want_nsids:
                f.fail("%s %s nsids %s, the guest's namespaces %s" % (who, metric, sorted(got_nsids), sorted(want_nsids)))
        for n in ns_here:
            ns = load(a.dump, "id-ns-%s-n%s.json" % (sn, n["nsid"]))
            flbas = int(ns["flbas"])
            idx = (flbas & 0xf) | (((flbas >> 5) & 0x3) << 4)
            ds = int(ns["lbafs"][idx]["ds"])
            lab = {"serial": sn, "nsid": n["nsid"]}
            nwho = "%s nsid=%s (%s)" % (who, n["nsid"], n["block"])
            f.check("%s drivewatch_namespace_identify_success" % nwho,
                    get("drivewatch_namespace_identify_success", lab), 1, "id-ns succeeded")
            for metric, key in (("drivewatch_namespace_size_bytes", "nsze"),
                                ("drivewatch_namespace_capacity_bytes", "ncap"),
                                ("drivewatch_namespace_utilization_bytes", "nuse")):
                f.check("%s %s" % (nwho, metric), get(metric, lab), int(ns[key]) << ds,
                        "%s=%s x 2^%d (flbas=%d -> lbaf %d ds=%d)" % (key, ns[key], ds, flbas, idx, ds))
            f.check("%s drivewatch_namespace_logical_block_size_bytes" % nwho,
                    get("drivewatch_namespace_logical_block_size_bytes", lab), 1 << ds,
                    "lbafs[%d].ds=%d (2^ds)" % (idx, ds))
    return f.report()


def cmd_same_smart(a):
    c1, _ = read_manifest(a.dir1)
    c2, _ = read_manifest(a.dir2)
    bad = []
    if list(c1) != list(c2):
        bad.append("controllers before %s, after %s" % (list(c1), list(c2)))
    for sn in c1:
        if sn not in c2:
            continue
        s1, s2 = load(a.dir1, "smart-log-%s.json" % sn), load(a.dir2, "smart-log-%s.json" % sn)
        for k in sorted(set(s1) | set(s2)):
            if s1.get(k) != s2.get(k):
                bad.append("%s %s: %s before the comparison, %s after" % (sn, k, s1.get(k), s2.get(k)))
    for b in bad:
        print("CHANGED %s" % b)
    if bad:
        print("FAIL: the SMART logs changed while drivewatch's values were compared "
              "(I/O or a state change in the window; the comparison is not of one state)")
        return 1
    print("OK SMART logs unchanged across the comparison (%s)" % ", ".join(c1))
    return 0


# ---------------------------------------------------------------- metrics
def cmd_metrics(a):
    prom = vmctl.Prom(a.prom)
    at = time.time()
    documented = doc_metrics(a.docs)
    present = {l["__name__"] for l, _ in prom.query('count by (__name__) ({__name__=~"drivewatch_.+"})', at)}
    bad = []
    absent = OrderedDict(list(NOT_FROM_QEMU.items()) + list(NOT_IN_THIS_SETUP.items()))
    off = disabled_probe_metrics(a.docs, a.config)
    for m, probe in sorted(off.items()):
        absent.setdefault(m, "documented only for the %s probe, which the guest config disables" % probe)
    for m in sorted(documented - present - set(absent)):
        bad.append("MISSING %s: in docs/metrics.md, not in Prometheus (and not in NOT_FROM_QEMU / NOT_IN_THIS_SETUP)" % m)
    for m in sorted(set(absent) & present):
        bad.append("PRESENT %s: listed as not produced here (%s) but Prometheus has it: update the list"
                   % (m, absent[m]))
    for m in sorted(set(absent) - documented):
        bad.append("STALE %s: in NOT_FROM_QEMU / NOT_IN_THIS_SETUP but not in docs/metrics.md" % m)
    for m in sorted(present - documented):
        bad.append("UNDOCUMENTED %s: exported, but not in docs/metrics.md (the contract)" % m)
    for sel, why in ABSENT_SERIES.items():
        r = prom.query(sel, at)
        if r:
            bad.append("PRESENT %s (%s): %s" % (sel, why, vmctl.fmt_result(r)))
    up = prom.value('up{job="drivewatch"}', at)
    if up != 1.0:
        bad.append('UP up{job="drivewatch"} = %s, expected 1' % up)
    for b in bad:
        print(b)
    print("documented %d, present %d; asserted absent: not producible by QEMU: %s; not in this setup: %s; "
          "of disabled probes: %s; series: %s"
          % (len(documented), len(present), ", ".join(NOT_FROM_QEMU), ", ".join(NOT_IN_THIS_SETUP),
             ", ".join("%s (%d metrics)" % (p, sum(1 for v in off.values() if v == p)) for p in sorted(set(off.values())))
             or "none", ", ".join(ABSENT_SERIES)))
    if bad:
        print("FAIL metrics: %d problems" % len(bad))
        return 1
    print("OK metrics: all %d producible documented metrics present, up == 1" % len(documented - set(absent)))
    return 0


# ---------------------------------------------------------------- cw
def cmd_cw(a):
    prom = vmctl.Prom(a.prom)
    want = {a.serial: a.want}
    for x in a.also:
        sn, v = x.split("=")
        want[sn] = int(v, 0)
    t0 = time.monotonic()
    while True:
        problems = []
        raw = {l.get("serial"): v for l, v in prom.query("drivewatch_critical_warning_raw")}
        bits = {(l.get("serial"), l.get("bit")): v for l, v in prom.query("drivewatch_critical_warning")}
        for sn, w in want.items():
            if raw.get(sn) != float(w):
                problems.append("drivewatch_critical_warning_raw{serial=%s} = %s, want %#x" % (sn, raw.get(sn), w))
            for i, bit in enumerate(CRITICAL_WARNING_BITS):
                got = bits.get((sn, bit))
                if got != float((w >> i) & 1):
                    problems.append("drivewatch_critical_warning{serial=%s,bit=%s} = %s, want %d" % (sn, bit, got, (w >> i) & 1))
        waited = time.monotonic() - t0
        if not problems:
            print("%.2f" % waited)
            return 0
        if waited > a.timeout:
            print("FAIL critical warning %#x on %s not in Prometheus within %.1fs: %s"
                  % (a.want, a.serial, a.timeout, "; ".join(problems)))
            return 1
        time.sleep(0.1)


# ---------------------------------------------------------------- log
# Lines the daemon's libraries write to its stderr themselves, outside
# drivewatch's logger (no timestamp, no level), that are known and harmless
# around a hot-plug.  Tolerated only in runs with a hot-plug, at most twice
# per cycle; anything else outside the log format fails.
KNOWN_FOREIGN_LINES = [
    (re.compile(r"^failed to lookup subsystem for controller nvme\d+$"),
     "libnvme 1.3 logs this at LOG_ERR when a scan races a controller appearing in "
     "/sys/class/nvme before its subsystem link (later libnvme logs it at debug); "
     "drivewatch skips the controller for that one scan. drivewatch passes libnvme "
     "stderr (nvme_create_root(nullptr, LOG_WARNING)), so it bypasses its logger"),
]
LOG_LINE = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z) (debug|info|warn|error): (.*)$")


def cmd_log(a):
    lines = open(a.file, encoding="utf-8", errors="replace").read().splitlines()
    levels, warns, bad, other, foreign = Counter(), Counter(), [], [], Counter()
    for line in lines:
        m = LOG_LINE.match(line)
        if not m:
            if line.strip():
                other.append(line)
            continue
        levels[m.group(2)] += 1
        if m.group(2) == "error":
            bad.append("ERROR line: %s" % line)
        elif m.group(2) == "warn":
            warns[m.group(3)] += 1
    hot = []
    if a.hotplug:
        s = re.escape(a.hotplug)
        hot = [re.compile(r"drive serial=%s \(.*\) vanished; " % s),
               re.compile(r"probe \w+ on drive serial=%s \(.*\) failed: " % s)]
    expected = 0
    for msg, n in warns.items():
        if any(p.match(msg) for p in hot):
            expected += n
            print("expected (hot-plug) warning x%d: %s" % (n, msg))
            if n > 2 * a.cycles:
                bad.append("warning repeated %d times (more than %d for %d hot-plug cycles): %s" % (n, 2 * a.cycles, a.cycles, msg))
        else:
            print("warning x%d: %s" % (n, msg))
            if n > 1:
                bad.append("warning repeated %d times: %s" % (n, msg))
    for line in other:
        known = [why for pat, why in KNOWN_FOREIGN_LINES if pat.match(line)]
        if known and a.hotplug:
            foreign[line] += 1
            print("KNOWN ISSUE (allowed around hot-plug): %r: %s" % (line, known[0]))
        else:
            bad.append("line not in drivewatch's log format (library output?): %s" % line)
    for line, n in foreign.items():
        if n > 2 * a.cycles:
            bad.append("known foreign line repeated %d times (more than %d for %d hot-plug cycles): %s" % (n, 2 * a.cycles, a.cycles, line))
    for b in bad:
        print(b)
    print("log: %d lines, levels %s, %d distinct warnings (%d expected around hot-plug)"
          % (len(lines), dict(levels), len(warns), expected))
    if bad:
        print("FAIL log: %d problems" % len(bad))
        return 1
    print("OK log: no error lines, no repeated warnings")
    return 0


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    h = sub.add_parser("health")
    h.add_argument("--prom", required=True)
    h.add_argument("--dump", required=True)
    h.add_argument("--not-before", type=float, required=True)
    h.add_argument("--timeout", type=float, default=30)
    h.add_argument("--docs")
    s = sub.add_parser("same-smart")
    s.add_argument("dir1")
    s.add_argument("dir2")
    m = sub.add_parser("metrics")
    m.add_argument("--prom", required=True)
    m.add_argument("--docs", required=True)
    m.add_argument("--config", help="the guest's drivewatch.toml: metrics documented only for probes it disables must be absent")
    c = sub.add_parser("cw")
    c.add_argument("--prom", required=True)
    c.add_argument("--serial", required=True)
    c.add_argument("--want", type=lambda x: int(x, 0), required=True)
    c.add_argument("--also", action="append", default=[])
    c.add_argument("--timeout", type=float, default=10)
    lg = sub.add_parser("log")
    lg.add_argument("--file", required=True)
    lg.add_argument("--hotplug")
    lg.add_argument("--cycles", type=int, default=1)
    a = p.parse_args()
    try:
        return {"health": cmd_health, "same-smart": cmd_same_smart, "metrics": cmd_metrics,
                "cw": cmd_cw, "log": cmd_log}[a.cmd](a)
    except (RuntimeError, OSError, KeyError, ValueError) as e:
        print("ERROR check.py %s: %s: %s" % (a.cmd, type(e).__name__, e))
        return 2


if __name__ == "__main__":
    sys.exit(main())
