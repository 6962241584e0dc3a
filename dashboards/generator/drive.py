# SPDX-License-Identifier: Apache-2.0
import os
from common import *

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "grafana", "drivewatch-drive.json")
S = sel()
COMPOSITE = sel('sensor="composite"')
SENSORS = sel('sensor!="composite"')
THRESH = sel('threshold=~"wctemp|cctemp|tmt1|tmt2"')
L = "{{instance}} {{serial}}"
W1H = sel('window="1h"')
P999 = sel('percentile="99.9", window="1h"')
ERASE_MAX = sel('bound="max"')
ERASE_MIN = sel('bound="min"')

b = Builder()
tsopt = ts_options()

b.row("Drive")
b.panel("table", "Identity", 24, 4,
        [table_target(f"max by (instance, serial, kernel_name, model, firmware, transport, address) (drivewatch_drive_info{S})", "A"),
         table_target(f"max by (instance, serial) (drivewatch_drive_up{S})", "B"),
         table_target(f"max by (instance, serial) (drivewatch_nvm_capacity_bytes{S})", "C"),
         table_target(f"max by (instance, serial) (drivewatch_power_on_seconds_total{S})", "D"),
         table_target(f"max by (instance, serial) (drivewatch_power_cycles_total{S})", "E"),
         table_target(f"max by (instance, serial) (drivewatch_unsafe_shutdowns_total{S})", "F")],
        description="drivewatch_drive_info joined on (instance, serial) with presence, capacity and lifetime counters.",
        options={"showHeader": True, "cellHeight": "sm"},
        thresholds=thresholds(("green", None)),
        overrides=[
            override("Present", ("mappings", [{"type": "value", "options": {
                "1": {"text": "up", "color": "green", "index": 0},
                "0": {"text": "gone", "color": "red", "index": 1}}}]),
                ("custom.cellOptions", {"type": "color-text"})),
            override("Capacity", ("unit", "bytes")),
            override("Powered on", ("unit", "dtdurations")),
            override("Power cycles", ("unit", "none")),
            override("Unsafe shutdowns", ("unit", "none")),
        ],
        transformations=[
            {"id": "merge", "options": {}},
            {"id": "organize", "options": {
                "excludeByName": {"Time": True, "Value #A": True},
                "indexByName": {n: i for i, n in enumerate(
                    ["instance", "serial", "model", "firmware", "kernel_name", "transport", "address",
                     "Value #B", "Value #C", "Value #D", "Value #E", "Value #F"])},
                "renameByName": {"instance": "Host", "serial": "Serial", "model": "Model",
                                 "firmware": "Firmware", "kernel_name": "Device", "transport": "Transport",
                                 "address": "Address", "Value #B": "Present", "Value #C": "Capacity",
                                 "Value #D": "Powered on", "Value #E": "Power cycles",
                                 "Value #F": "Unsafe shutdowns"}}},
        ])

b.row("Temperature and throttling")
dashed = ("custom.lineStyle", {"fill": "dash", "dash": [10, 10]})
b.panel("timeseries", "Temperature and thresholds", 16, 10,
        [target(f"drivewatch_temperature_celsius{COMPOSITE}", f"{L} composite", "A"),
         target(f"drivewatch_temperature_celsius{SENSORS}", f"{L} sensor {{{{sensor}}}}", "B"),
         target(f"drivewatch_temperature_threshold_celsius{THRESH}", f"{L} {{{{threshold}}}}", "C")],
        description="Composite temperature and sensors 1–8, with the warning (WCTEMP) and critical (CCTEMP) "
                    "composite thresholds and the host controlled thermal management thresholds TMT1 "
                    "(light throttling) and TMT2 (heavy throttling), where the drive reports them.",
        unit="celsius", custom=ts_custom(), options=tsopt,
        overrides=[
            override(".* sensor .*", ("custom.lineWidth", 1), ("custom.fillOpacity", 0), regex=True),
            override(".* wctemp$", ("color", {"mode": "fixed", "fixedColor": "orange"}), dashed, regex=True),
            override(".* cctemp$", ("color", {"mode": "fixed", "fixedColor": "red"}), dashed, regex=True),
            override(".* tmt1$", ("color", {"mode": "fixed", "fixedColor": "yellow"}), dashed, regex=True),
            override(".* tmt2$", ("color", {"mode": "fixed", "fixedColor": "purple"}), dashed, regex=True),
            override(".* composite$", ("custom.lineWidth", 2), regex=True),
        ])
b.panel("timeseries", "Throttle level", 8, 10,
        [target(f"drivewatch_thermal_throttling{S}", L)],
        description="drivewatch_thermal_throttling: 0 none, 1 light (TMT1), 2 heavy (TMT2), "
                    "the highest host controlled thermal management level seen in the last minute. "
                    "Vendor firmware throttling that is not HCTM reads 0: see 'Time above WCTEMP / CCTEMP'.",
        unit="none", min=0, max=2, decimals=0, custom=ts_custom(interp="stepAfter", fill=20),
        options=tsopt,
        mappings=[{"type": "value", "options": {"0": {"text": "none", "index": 0},
                                                 "1": {"text": "light (TMT1)", "index": 1},
                                                 "2": {"text": "heavy (TMT2)", "index": 2}}}])
b.panel("timeseries", "Throttle transitions", 8, 8,
        [target(f"increase(drivewatch_thermal_management_transitions_total{S}[$__rate_interval])",
                f"{L} {{{{threshold}}}}")],
        description="Times host controlled thermal management started throttling at TMT1 / TMT2.",
        unit="none", min=0, custom=ts_custom(draw="bars", fill=80, stack=True), options=tsopt)
b.panel("timeseries", "Throttle time per day", 8, 8,
        [target(f"drivewatch:thermal_throttle_seconds:increase1d{S}", f"{L} TMT1 + TMT2 (24 h)", "A"),
         target(f"increase(drivewatch_thermal_management_seconds_total{S}[$__rate_interval])",
                f"{L} {{{{threshold}}}} per interval", "B")],
        description="Seconds throttled by host controlled thermal management: the preceding 24 h "
                    "(recording rule) and per graph interval by threshold.",
        unit="s", min=0, custom=ts_custom(), options=tsopt)
b.panel("timeseries", "Time above WCTEMP / CCTEMP", 8, 8,
        [target(f"increase(drivewatch_temperature_above_threshold_seconds_total{S}[$__rate_interval])",
                f"{L} {{{{threshold}}}}")],
        description="Operational time with the composite temperature at or above WCTEMP (below CCTEMP) "
                    "and at or above CCTEMP, per graph interval. Most client drives throttle on their own here.",
        unit="s", min=0, custom=ts_custom(draw="bars", fill=80, stack=True), options=tsopt)

b.row("Power")
b.panel("timeseries", "Power state", 8, 8,
        [target(f"drivewatch_current_power_state{S}", f"{L} power state", "A"),
         target(f"drivewatch_apst_enabled{S}", f"{L} APST enabled", "B")],
        description="Power state at each run of the power probe (a snapshot: with APST the drive moves "
                    "faster than the probe samples), and whether APST is enabled.",
        unit="none", decimals=0, min=0, custom=ts_custom(interp="stepAfter"), options=tsopt)
b.panel("timeseries", "Power draw by source", 16, 8,
        [target(f"drivewatch_power_at_load_watts{S}", f"{L} at {{{{rate}}}} IOPS ({{{{source}}}})", "A"),
         target(f"drivewatch_idle_power_watts{S}", f"{L} idle ({{{{source}}}})", "B"),
         target(f"drivewatch_interval_power_watts{S}", f"{L} drive interval power (drive)", "C")],
        description="Time-weighted power over the last clean 10-IOPS and idle windows; the source says whether "
                    "it is a measurement (meter, drive) or an estimate from the power state descriptors "
                    "(psd_estimate). Interval power: the drive's own last-second average.",
        unit="watt", min=0, custom=ts_custom(interp="stepAfter"), options=tsopt,
        overrides=[override(".*psd_estimate.*", dashed, regex=True)])

b.row("Read latency")
b.panel("heatmap", "Read latency distribution", 12, 10,
        [target(f"sum by (le) (increase(drivewatch_read_latency_seconds_bucket{S}[$__rate_interval]))",
                "{{le}}", format="heatmap")],
        description="Reads per latency bucket (drivewatch_read_latency_seconds histogram, all rates and "
                    "namespaces of the selected drives). Buckets 10 µs … 10 s in 1-2-5 steps.",
        options={"calculate": False, "cellGap": 1,
                 "color": {"mode": "scheme", "scheme": "Oranges", "scale": "exponential",
                           "exponent": 0.5, "steps": 64, "fill": "dark-orange", "reverse": False},
                 "yAxis": {"axisPlacement": "left", "unit": "s", "reverse": False},
                 "rowsFrame": {"layout": "auto"},
                 "filterValues": {"le": 1e-9},
                 "showValue": "never",
                 "tooltip": {"mode": "single", "yHistogram": True, "showColorScale": False},
                 "legend": {"show": True},
                 "exemplars": {"color": "rgba(255,0,255,0.7)"}},
        custom={"hideFrom": {"legend": False, "tooltip": False, "viz": False},
                "scaleDistribution": {"type": "linear"}})
b.panel("timeseries", "Read latency percentiles by rate (1 h window)", 12, 10,
        [target(f'drivewatch_read_latency_window_seconds{W1H}\n'
                "  and on (instance, serial, nsid, target, rate, window, percentile)\n"
                f'  drivewatch_read_latency_window_enough_samples{W1H} == 1',
                f"{L} ns{{{{nsid}}}} {{{{rate}}}} IOPS p{{{{percentile}}}}", "A"),
         target(f'drivewatch_read_latency_window_max_seconds{W1H}',
                f"{L} ns{{{{nsid}}}} {{{{rate}}}} IOPS max", "B")],
        description="p50 / p99 / p99.9 at each probe rate over the 1-hour window, shown only when at least "
                    "ten reads lie beyond the percentile (drivewatch_read_latency_window_enough_samples), and "
                    "the slowest read.",
        unit="s", custom=dict(ts_custom(), scaleDistribution={"type": "log", "log": 10}), options=tsopt,
        overrides=[override(".* max$", dashed, regex=True)])
b.panel("timeseries", "Read latency p99.9 from the histogram, by rate", 12, 8,
        [target("histogram_quantile(0.999,\n  sum by (instance, serial, rate, le) "
                f"(rate(drivewatch_read_latency_seconds_bucket{S}[$__rate_interval])))",
                f"{L} {{{{rate}}}} IOPS p99.9", "A"),
         target("histogram_quantile(0.5,\n  sum by (instance, serial, rate, le) "
                f"(rate(drivewatch_read_latency_seconds_bucket{S}[$__rate_interval])))",
                f"{L} {{{{rate}}}} IOPS p50", "B")],
        description="Quantiles over the graph interval from the Prometheus histogram (buckets in 1-2-5 steps: "
                    "interpolated within a factor of about 2). The window gauges above are exact to 0.78%.",
        unit="s", custom=dict(ts_custom(), scaleDistribution={"type": "log", "log": 10}), options=tsopt)
b.panel("timeseries", "Read latency by idle gap (p99.9, 1 h window)", 12, 8,
        [target(f'drivewatch_read_latency_idle_gap_seconds{P999}',
                f"{L} ns{{{{nsid}}}} gap {{{{idle_gap}}}}")],
        description="p99.9 by the idle time before the read, all rates together: short gaps (0-1ms, 1-10ms) "
                    "measure media and controller; long gaps (100ms-1s and beyond) include the wake-up from "
                    "a low-power (APST) state.",
        unit="s", custom=dict(ts_custom(), scaleDistribution={"type": "log", "log": 10}), options=tsopt)
b.panel("timeseries", "Read errors, timeouts and skipped reads", 12, 8,
        [target(f"increase(drivewatch_read_errors_total{S}[$__rate_interval])", f"{L} error {{{{error}}}}", "A"),
         target(f"increase(drivewatch_read_timeouts_total{S}[$__rate_interval])", f"{L} timeouts", "B"),
         target(f"increase(drivewatch_read_latency_skipped_arrivals_total{S}[$__rate_interval])",
                f"{L} {{{{rate}}}} IOPS skipped", "C")],
        description="Failed reads by errno, reads that timed out, and scheduled reads skipped because the previous one ran late.",
        unit="none", min=0, custom=ts_custom(draw="bars", fill=80, stack=True), options=tsopt)
b.panel("timeseries", "Read target up / paused", 12, 8,
        [target(f"drivewatch_read_latency_target_up{S}", f"{L} ns{{{{nsid}}}} up", "A"),
         target(f"drivewatch_read_latency_paused{S}", f"{L} ns{{{{nsid}}}} paused (heavy phase)", "B")],
        description="1 while the read target is open; paused is 1 while a heavy phase has paused the probe on the drive.",
        unit="none", min=0, max=1, decimals=0, custom=ts_custom(interp="stepAfter"), options=tsopt)

b.row("Writes and wear")
b.panel("timeseries", "Data written and read per day", 12, 8,
        [target(f"drivewatch:data_written_bytes:rate1d{S}", f"{L} written", "A"),
         target(f"drivewatch:data_read_bytes:rate1d{S}", f"{L} read", "B")],
        description="Bytes the host wrote and read over the preceding 24 h (recording rules drivewatch:data_written_bytes:rate1d, drivewatch:data_read_bytes:rate1d).",
        unit="bytes", min=0, custom=ts_custom(), options=tsopt)
b.panel("timeseries", "Drive writes per day (DWPD)", 12, 8,
        [target(f"drivewatch:drive_writes_per_day:rate1d{S}", f"{L} DWPD", "A")],
        description="Bytes written per day divided by the drive's capacity (drivewatch_nvm_capacity_bytes); compare "
                    "with the DWPD the drive is rated for (recording rule drivewatch:drive_writes_per_day:rate1d).",
        unit="none", decimals=3, min=0, custom=ts_custom(), options=tsopt)
b.panel("timeseries", "Percentage used, with wear-out forecast", 16, 9,
        [target(f"drivewatch_percentage_used_ratio{S}", f"{L} used", "A", interval="1h"),
         target(f"predict_linear(drivewatch_percentage_used_ratio{S}[30d], 365 * 86400)",
                f"{L} forecast 1 year ahead (30 d trend)", "B", interval="1h"),
         target(f"drivewatch_available_spare_ratio{S}", f"{L} available spare", "C", interval="1h"),
         target(f"drivewatch_available_spare_threshold_ratio{S}", f"{L} spare threshold", "D", interval="1h")],
        description="The drive's percentage-used estimate (1 = rated endurance reached, updated about hourly) with "
                    "a linear forecast one year ahead from the last 30 days, and the available spare with its threshold.",
        unit="percentunit", min=0, custom=ts_custom(interp="stepAfter"), options=tsopt,
        overrides=[override(".* forecast .*", dashed, regex=True),
                   override(".* spare threshold$", dashed, ("color", {"mode": "fixed", "fixedColor": "red"}), regex=True)],
        thresholds=thresholds(("green", None), ("red", 1)))
b.panel("stat", "Time to rated wear-out (30 d trend)", 8, 9,
        [target(f"(1 - drivewatch_percentage_used_ratio{S})\n  / (deriv(drivewatch_percentage_used_ratio{S}[30d]) > 0)",
                L, instant=True, range=False)],
        description="When percentage used reaches 100% at the slope of the last 30 days; empty when it did not move.",
        unit="dtdurations", options=stat_options(color_mode="value"),
        thresholds=thresholds(("red", None), ("orange", 31536000), ("green", 94608000)))

b.panel("timeseries", "Write amplification (OCP C0h)", 12, 8,
        [target(f"drivewatch:write_amplification:rate1h{S}", f"{L} WAF", "A")],
        description="NAND bytes written per host byte written over the last hour (recording rule "
                    "drivewatch:write_amplification:rate1h: OCP log C0h Physical Media Units Written over SMART Data "
                    "Units Written). Only drives with log C0h, and only over hours with host writes; per controller.",
        unit="none", decimals=2, min=0, custom=ts_custom(), options=tsopt)
b.panel("timeseries", "User data erase counts and spread (OCP C0h)", 12, 8,
        [target(f"drivewatch_ocp_user_data_erase_count{ERASE_MAX}", f"{L} max", "A"),
         target(f"drivewatch_ocp_user_data_erase_count{ERASE_MIN}", f"{L} min", "B"),
         target(f"max by (instance, serial) (drivewatch_ocp_user_data_erase_count{ERASE_MAX})\n"
                f"  - max by (instance, serial) (drivewatch_ocp_user_data_erase_count{ERASE_MIN})",
                f"{L} spread", "C")],
        description="Erase cycles of the most and least erased user data block (OCP log C0h User Data Erase "
                    "Counts) and their difference: a spread that keeps growing means wear is leveled unevenly.",
        unit="none", decimals=0, min=0, custom=ts_custom(interp="stepAfter"), options=tsopt,
        overrides=[override(".* spread$", dashed, regex=True)])
b.panel("timeseries", "Bad NAND blocks (OCP C0h)", 12, 8,
        [target(f"drivewatch_ocp_bad_nand_blocks{S}", f"{L} {{{{area}}}}", "A")],
        description="Bad NAND blocks, user and system area (OCP log C0h raw counts); alert "
                    "DrivewatchBadNandBlocksGrowing fires when one grew in the last day.",
        unit="none", decimals=0, min=0, custom=ts_custom(interp="stepAfter"), options=tsopt)

b.row("Errors and self-tests")
b.panel("timeseries", "Media errors and error-log entries (lifetime)", 12, 8,
        [target(f"drivewatch_media_errors_total{S}", f"{L} media errors", "A"),
         target(f"drivewatch_error_log_entries_total{S}", f"{L} error-log entries", "B")],
        description="Unrecovered data integrity errors and Error Information log entries over the drive's life.",
        unit="none", min=0, decimals=0, custom=ts_custom(interp="stepAfter"), options=tsopt)
b.panel("timeseries", "New error-log entries by status", 12, 8,
        [target(f"sum by (instance, serial, sct, status) (increase(drivewatch_error_log_new_entries_total{S}[$__rate_interval]))",
                f"{L} {{{{sct}}}} / {{{{status}}}}", "A"),
         target(f"increase(drivewatch_error_log_missed_entries_total{S}[$__rate_interval])", f"{L} missed", "B")],
        description="Error Information log entries new since drivewatch first saw the drive, by status code type "
                    "and status, and entries that left the ring before they were read.",
        unit="none", min=0, custom=ts_custom(draw="bars", fill=80, stack=True), options=tsopt)
b.panel("table", "Self-test results", 12, 7,
        [table_target(f"max by (instance, serial, type, result) (drivewatch_self_test_last_result{S})", "A"),
         table_target(f"max by (instance, serial, type) (drivewatch_self_test_last_seen_timestamp_seconds{S}) * 1000", "B"),
         table_target(f"max by (instance, serial, type) (drivewatch_self_test_last_power_on_seconds{S})", "C"),
         table_target(f"max by (instance, serial, type) (drivewatch_self_test_failures_total{S})", "D")],
        description="The newest result of each self-test type in log 06h, when drivewatch first saw it, the "
                    "drive's power-on time at the test, and failures counted since drivewatch first saw the drive.",
        options={"showHeader": True, "cellHeight": "sm"},
        thresholds=thresholds(("green", None)),
        overrides=[
            override("Result", ("mappings", [
                {"type": "value", "options": {"passed": {"color": "green", "index": 0}}},
                {"type": "regex", "options": {"pattern": "fatal_error|failed_.*",
                                              "result": {"color": "red", "index": 1}}},
                {"type": "regex", "options": {"pattern": "aborted.*",
                                              "result": {"color": "orange", "index": 2}}}]),
                ("custom.cellOptions", {"type": "color-text"})),
            override("First seen", ("unit", "dateTimeAsIso")),
            override("Power-on time", ("unit", "dtdurations")),
            override("Failures", ("unit", "none"),
                     ("thresholds", thresholds(("green", None), ("red", 1))),
                     ("custom.cellOptions", {"type": "color-text"})),
        ],
        transformations=[
            {"id": "merge", "options": {}},
            {"id": "organize", "options": {
                "excludeByName": {"Time": True, "Value #A": True},
                "indexByName": {n: i for i, n in enumerate(
                    ["instance", "serial", "type", "result", "Value #B", "Value #C", "Value #D"])},
                "renameByName": {"instance": "Host", "serial": "Serial", "type": "Type", "result": "Result",
                                 "Value #B": "First seen", "Value #C": "Power-on time",
                                 "Value #D": "Failures"}}},
        ])
b.panel("timeseries", "Self-test progress", 12, 7,
        [target(f"drivewatch_self_test_completion_ratio{S}", f"{L} running test", "A"),
         target(f"increase(drivewatch_self_test_started_total{S}[$__rate_interval])", f"{L} {{{{type}}}} started", "B")],
        description="Completion of the running self-test, and tests drivewatch started on its schedule.",
        unit="percentunit", min=0, custom=ts_custom(), options=tsopt,
        overrides=[override(".* started$", ("unit", "none"), ("custom.drawStyle", "bars"), regex=True)])
b.panel("timeseries", "Critical warning bits", 12, 7,
        [target(f"drivewatch_critical_warning{S} > 0", f"{L} {{{{bit}}}}", "A"),
         target(f"drivewatch_endurance_group_critical_warning_raw{S} > 0", f"{L} endurance group", "B")],
        description="Critical Warning bits that are set (spare, temperature, reliability, read-only, volatile "
                    "memory backup, PMR) and the Endurance Group Critical Warning Summary. Empty is good.",
        unit="none", min=0, custom=ts_custom(interp="stepAfter", draw="line", fill=30), options=tsopt,
        color={"mode": "fixed", "fixedColor": "red"})

b.row("Probe health")
b.panel("state-timeline", "Probe success", 12, 8,
        [target(f"drivewatch_probe_success{S}", f"{L} {{{{probe}}}}")],
        description="1 when the last run of the probe on the drive succeeded (drivewatch_probe_success).",
        unit="none", options={"showValue": "never", "mergeValues": True, "alignValue": "left",
                              "rowHeight": 0.9, "legend": {"showLegend": False, "displayMode": "list", "placement": "bottom"},
                              "tooltip": {"mode": "single", "sort": "none"}},
        custom={"fillOpacity": 80, "lineWidth": 0},
        mappings=[{"type": "value", "options": {"1": {"text": "ok", "color": "green", "index": 0},
                                                 "0": {"text": "failed", "color": "red", "index": 1}}}],
        thresholds=thresholds(("red", None), ("green", 1)))
b.panel("timeseries", "Probe run time and age of last success", 12, 8,
        [target(f"drivewatch_probe_duration_seconds{S}", f"{L} {{{{probe}}}} duration", "A"),
         target(f"time() - drivewatch_probe_last_success_timestamp_seconds{S}", f"{L} {{{{probe}}}} since success", "B")],
        description="Wall time of each probe's last run, and how long ago it last succeeded.",
        unit="s", custom=dict(ts_custom(), scaleDistribution={"type": "log", "log": 10}), options=tsopt,
        overrides=[override(".* since success$", dashed, regex=True)])

dash = dashboard("drivewatch-drive", "drivewatch / Drive detail",
                 "One drive (or a few): temperature and throttling, power, read latency, writes and wear, errors, self-tests and probe health.",
                 b.panels, variables(), time_from="now-7d")
write(OUT, dash)
