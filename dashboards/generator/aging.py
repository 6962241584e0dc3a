# SPDX-License-Identifier: Apache-2.0
import os
from common import *

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "grafana", "drivewatch-aging.json")


def ph(extra=""):
    return "{" + (extra + ", " if extra else "") + 'instance=~"$instance", serial=~"$serial", phase=~"$phase"}'


def st(extra=""):
    return "{" + (extra + ", " if extra else "") + 'instance=~"$instance", serial=~"$serial", study=~"$study"}'


P = "{{instance}} {{target}} {{phase}}"
STUDY = "{{instance}} {{study}}"
PH_KEYS = "instance, phase, kind, target, serial"
ST_KEYS = "instance, study, serial, target"

extra_vars = [
    query_variable("phase", "Phase",
                   'label_values(drivewatch_phase_state{instance=~"$instance", serial=~"$serial"}, phase)'),
    query_variable("study", "Retention study",
                   'label_values(drivewatch_retention_study_info{instance=~"$instance", serial=~"$serial"}, study)'),
]

b = Builder()
tsopt = ts_options()
step = ts_custom(interp="stepAfter", points="auto")
dashed = ("custom.lineStyle", {"fill": "dash", "dash": [10, 10]})
LONG = "A result only changes when a run completes; the series is read back from drivewatch's history after a restart, so the graph spans as far back as Prometheus keeps data."


def result_panel(title, w, metric, selector, legend, description, **kw):
    """A result of completed runs, read back from the history: one step per run."""
    kw.setdefault("custom", step)
    b.panel("timeseries", title, w, 8,
            [target(metric + ph(selector), legend, interval="1h")],
            description=description + " " + LONG, options=tsopt, **kw)


b.row("Heavy phases now")
b.panel("table", "Phases", 24, 8,
        [table_target(f"max by ({PH_KEYS}, state) (drivewatch_phase_state{ph()} == 1)", "A"),
         table_target(f"max by ({PH_KEYS}) (drivewatch_phase_progress_ratio{ph()})", "B"),
         table_target(f"max by ({PH_KEYS}) (drivewatch_phase_current_throughput_bytes_per_second{ph()})", "C"),
         table_target(f"max by ({PH_KEYS}) (drivewatch_phase_last_run_timestamp_seconds{ph()}) * 1000", "D"),
         table_target(f"max by ({PH_KEYS}) (drivewatch_phase_last_run_duration_seconds{ph()})", "E"),
         table_target(f"max by ({PH_KEYS}) (drivewatch_phase_last_run_success{ph()})", "F"),
         table_target(f"max by ({PH_KEYS}) (drivewatch_phase_last_completed_timestamp_seconds{ph()}) * 1000", "G"),
         table_target(f'sum by ({PH_KEYS}) (drivewatch_phase_runs_total{ph()})', "H")],
        description="Every configured heavy phase: its state, the running phase's progress and throughput, and the last run.",
        options={"showHeader": True, "cellHeight": "sm"},
        thresholds=thresholds(("green", None)),
        overrides=[
            override("State", ("mappings", [{"type": "value", "options": {
                "idle": {"color": "text", "index": 0}, "running": {"color": "blue", "index": 1},
                "aborted": {"color": "red", "index": 2}}}]), ("custom.cellOptions", {"type": "color-text"})),
            override("Progress", ("unit", "percentunit"), ("min", 0), ("max", 1),
                     ("custom.cellOptions", {"type": "gauge", "mode": "basic", "valueDisplayMode": "text"})),
            override("Throughput", ("unit", "Bps")),
            override("Last run ended", ("unit", "dateTimeFromNow")),
            override("Last run took", ("unit", "dtdurations")),
            override("Last run", ("mappings", [{"type": "value", "options": {
                "1": {"text": "completed", "color": "green", "index": 0},
                "0": {"text": "not completed", "color": "red", "index": 1}}}]),
                ("custom.cellOptions", {"type": "color-text"})),
            override("Last completed", ("unit", "dateTimeFromNow")),
            override("Runs", ("unit", "none")),
        ],
        transformations=[
            {"id": "merge", "options": {}},
            {"id": "organize", "options": {
                "excludeByName": {"Time": True, "Value #A": True},
                "indexByName": {n: i for i, n in enumerate(
                    ["instance", "target", "serial", "phase", "kind", "state"] +
                    [f"Value #{r}" for r in "BCDEFGH"])},
                "renameByName": {"instance": "Host", "target": "Target", "serial": "Serial", "phase": "Phase",
                                 "kind": "Kind", "state": "State", "Value #B": "Progress",
                                 "Value #C": "Throughput", "Value #D": "Last run ended",
                                 "Value #E": "Last run took", "Value #F": "Last run",
                                 "Value #G": "Last completed", "Value #H": "Runs"}}},
        ])
b.panel("timeseries", "Progress of running phases", 8, 8,
        [target(f"drivewatch_phase_progress_ratio{ph()} > 0", P)],
        description="How far each running phase is (0 when not running: hidden).",
        unit="percentunit", min=0, max=1, custom=ts_custom(), options=tsopt)
b.panel("timeseries", "Current throughput", 8, 8,
        [target(f"drivewatch_phase_current_throughput_bytes_per_second{ph()}", P)],
        description="What each running phase moved in its last second (all operations).",
        unit="Bps", min=0, custom=ts_custom(), options=tsopt)
b.panel("timeseries", "Runs by outcome", 8, 8,
        [target(f"sum by (instance, target, phase, outcome) (increase(drivewatch_phase_runs_total{ph()}[$__rate_interval]))",
                f"{P} {{{{outcome}}}}")],
        description="Runs recorded in the history per graph interval, by outcome (completed, aborted, refused, failed, interrupted).",
        unit="none", min=0, custom=ts_custom(draw="bars", fill=80, stack=True), options=tsopt,
        overrides=[override(".* completed$", ("color", {"mode": "fixed", "fixedColor": "green"}), regex=True),
                   override(".* (aborted|failed|interrupted)$", ("color", {"mode": "fixed", "fixedColor": "red"}), regex=True),
                   override(".* refused$", ("color", {"mode": "fixed", "fixedColor": "orange"}), regex=True)])

b.row("SLC cache (fill)")
result_panel("SLC cache size", 12, "drivewatch_phase_result_bytes", 'kind="fill", measure=~"slc_cache|slc_cache_lower_bound"', f"{P} {{{{measure}}}}",
             "SLC cache found by each completed fill: slc_cache where the throughput dropped, "
             "slc_cache_lower_bound when it did not (the cache is at least what was written).",
             unit="bytes", min=0,
             overrides=[override(".* slc_cache_lower_bound$", dashed, regex=True)])
result_panel("Fill write throughput before and after the cache", 12, "drivewatch_phase_result_bytes_per_second", 'kind="fill"', f"{P} {{{{measure}}}}",
             "Sequential write throughput of each completed fill: before and after the SLC cache ran out, and the mean.",
             unit="Bps", min=0)
result_panel("Time to exhaust the SLC cache", 12, "drivewatch_phase_result_seconds", 'kind="fill", measure="slc_exhausted_after"', P,
             "Seconds of sequential writing until the throughput dropped.",
             unit="s", min=0)
b.panel("timeseries", "Fill write latency p99.9 and fill level", 12, 8,
        [target('drivewatch_phase_result_seconds' + ph('kind="fill", measure="write_p99_9"'),
                f"{P} write p99.9", "A", interval="1h"),
         target('drivewatch_phase_result_ratio' + ph('kind="fill", measure="fill"'),
                f"{P} fill level", "B", interval="1h")],
        description="Write latency p99.9 of each completed fill, and the fill level it reached. " + LONG,
        unit="s", min=0, custom=step, options=tsopt,
        overrides=[override(".* fill level$", ("unit", "percentunit"), ("custom.axisPlacement", "right"), dashed, regex=True)])

b.row("Performance at fill level (perf)")
result_panel("Sequential throughput", 12, "drivewatch_phase_result_bytes_per_second", 'kind="perf"', f"{P} {{{{measure}}}}",
             "Sequential read and write (128 KiB) of each completed perf run, at the fill level shown below.",
             unit="Bps", min=0)
result_panel("Random and mixed IOPS", 12, "drivewatch_phase_result_iops", 'kind="perf"', f"{P} {{{{measure}}}}",
             "Random 4 KiB read and write IOPS and the mixed 90/10 and 50/50 workloads of each completed perf run.",
             unit="iops", min=0)
result_panel("Latency (QD1 and mixed)", 12, "drivewatch_phase_result_seconds", 'kind="perf"', f"{P} {{{{measure}}}}",
             "QD1 random read/write p50 and p99.9 and the mixed workloads' p99.9 of each completed perf run.",
             unit="s", custom=dict(step, scaleDistribution={"type": "log", "log": 10}))
result_panel("Fill level of the perf runs", 12, "drivewatch_phase_result_ratio", 'kind="perf", measure="fill"', P,
             "The fill level (from the last completed fill) each perf run measured at.",
             unit="percentunit", min=0, max=1)

b.row("Trim and reclaim")
result_panel("Trim efficiency", 8, "drivewatch_phase_result_ratio", 'kind="trim", measure="trim_efficiency"', P,
             "Write throughput after the deallocate divided by before it.",
             unit="percentunit", min=0,
             thresholds=thresholds(("red", None), ("orange", 0.5), ("green", 0.9)))
result_panel("Write throughput before and after trim", 8, "drivewatch_phase_result_bytes_per_second", 'kind="trim"', f"{P} {{{{measure}}}}",
             "Sequential write over the first 10% of the filled target before and after deallocating it.",
             unit="Bps", min=0)
result_panel("Deallocate latency", 8, "drivewatch_phase_result_seconds", 'kind="trim"', f"{P} {{{{measure}}}}",
             "Mean, p99 and max latency of the 2 MiB deallocate commands.",
             unit="s", min=0)
result_panel("Reclaim: fast stage after each idle time (bytes)", 8, "drivewatch_phase_result_bytes", 'kind="reclaim", measure=~"idle_.*_fast_stage.*"', f"{P} {{{{measure}}}}",
             "How much the drive wrote at full speed after idling 1, 2, 3, 4 min: how much SLC cache it "
             "reclaimed. *_lower_bound: the write ended before the throughput dropped.",
             unit="bytes", min=0,
             overrides=[override(".*_lower_bound$", dashed, regex=True)])
result_panel("Reclaim: fast stage after each idle time (seconds)", 8, "drivewatch_phase_result_seconds", 'kind="reclaim", measure=~"idle_.*_fast_stage.*"', f"{P} {{{{measure}}}}",
             "How long the write after each idle time ran at full speed.",
             unit="s", min=0,
             overrides=[override(".*_lower_bound$", dashed, regex=True)])
result_panel("Reclaim: fast and slow throughput", 8, "drivewatch_phase_result_bytes_per_second", 'kind="reclaim"', f"{P} {{{{measure}}}}",
             "Write throughput in the fast stage and after it, for each idle time.",
             unit="Bps", min=0)

b.row("Test report: the last run of each measure (drivewatch report)")
REPORT = ("The last completed run of each phase, as `drivewatch report` lays it out (docs/report.md); "
          "the report puts it beside the drive's first run and a baseline drive.")


def last_run(title, w, metric, selector, unit, description, **kw):
    """A bar per measure of each phase's last completed run (an instant query)."""
    b.panel("bargauge", title, w, kw.pop("h", 8),
            [target(f"max by (instance, target, phase, measure) ({metric}{ph(selector)})",
                    "{{phase}} {{measure}}", instant=True, range=False)],
            description=description + " " + REPORT, unit=unit,
            options={"orientation": "horizontal", "displayMode": "gradient", "valueMode": "color",
                     "namePlacement": "left", "showUnfilled": True, "sizing": "auto",
                     "reduceOptions": {"calcs": ["lastNotNull"], "fields": "", "values": False}},
            **kw)


last_run("SLC cache found by the last fill", 8, "drivewatch_phase_result_bytes",
         'kind="fill", measure=~"slc_cache|slc_cache_lower_bound"', "bytes",
         "The SLC cache each fill phase (one per fill level) found: slc_cache where the write speed dropped, "
         "slc_cache_lower_bound when it did not (the cache is at least what was written, or there is none).",
         min=0, thresholds=thresholds(("blue", None)))
last_run("Fill: write speed in the cache and after it", 8, "drivewatch_phase_result_bytes_per_second",
         'kind="fill", measure=~"before_cache|after_cache|write_mean"', "Bps",
         "Sequential write speed of the last fill before and after its SLC cache ran out, and its mean.",
         min=0, thresholds=thresholds(("blue", None)))
last_run("Reclaim: data written at full speed after each idle", 8, "drivewatch_phase_result_bytes",
         'kind="reclaim", measure=~"idle_.*_fast_stage(_lower_bound)?"', "bytes",
         "The reclaim loops of the last reclaim run: how much the write after each idle time ran at full speed "
         "(_lower_bound: it never slowed down). The longer the idle, the more the drive reclaimed.",
         min=0, thresholds=thresholds(("blue", None)))
last_run("Perf cells: throughput", 8, "drivewatch_phase_result_bytes_per_second", 'kind="perf"', "Bps",
         "Each perf cell's throughput in the last run of each perf phase (one phase per fill level or preset; "
         "the Phoronix preset's cells are measured in MB/s as OpenBenchmarking prints them).",
         min=0, h=10, thresholds=thresholds(("blue", None)))
last_run("Perf cells: IOPS", 8, "drivewatch_phase_result_iops", 'kind="perf"', "iops",
         "Each perf cell's I/Os per second in the last run of each perf phase.",
         min=0, h=10, thresholds=thresholds(("blue", None)))
last_run("Latency p99.9: QD1, low load and mixed", 8, "drivewatch_phase_result_seconds",
         'kind="perf", measure=~".*p99_9"', "s",
         "The p99.9 latency of each perf cell (QD1, low fixed rates, mixes) in the last run. The report's rule: "
         "latencies over 300 ms are detrimental (red).",
         min=0, h=10, thresholds=thresholds(("green", None), ("orange", 0.1), ("red", 0.3)))
last_run("Workload replay: duration", 8, "drivewatch_phase_result_seconds",
         'kind="replay", measure="replay_duration"', "s",
         "How long the last replay of the trace took (the reference report's workload-replay figure): the "
         "shorter, the better.", min=0, h=6, thresholds=thresholds(("blue", None)))
last_run("Workload replay: latency", 8, "drivewatch_phase_result_seconds",
         'kind="replay", measure=~".*_p(50|99|99_9)"', "s",
         "Read, write and trim latency percentiles of the last replay; over 300 ms is detrimental (red).",
         min=0, h=6, thresholds=thresholds(("green", None), ("orange", 0.1), ("red", 0.3)))
last_run("SQLite: inserts per second", 8, "drivewatch_phase_result_operations_per_second",
         'kind="sqlite", measure="insert"', "suffix: rows/s",
         "Rows the last run of each sqlite phase inserted per second, every thread's, each insert its own "
         "transaction (Phoronix's pts/sqlite): the more, the better.",
         min=0, h=6, thresholds=thresholds(("blue", None)))
last_run("SQLite: commit latency", 8, "drivewatch_phase_result_seconds",
         'kind="sqlite", measure=~"commit_(p50|p99|p99_9)"', "s",
         "Commit latency percentiles of the last sqlite run: each autocommitted INSERT timed around the "
         "statement that commits it (with synchronous = full, a flush of the drive each).",
         min=0, h=6, thresholds=thresholds(("green", None), ("orange", 0.1), ("red", 0.3)))
last_run("pgbench: transactions per second", 8, "drivewatch_phase_result_operations_per_second",
         'kind="pgbench", measure="transaction"', "suffix: TPS",
         "Transactions per second of the last run of each pgbench phase (PostgreSQL's TPC-B-like or "
         "select-only transactions, Phoronix's pts/pgbench): the more, the better.",
         min=0, h=6, thresholds=thresholds(("blue", None)))
last_run("pgbench: transaction latency", 8, "drivewatch_phase_result_seconds",
         'kind="pgbench", measure=~"latency_(p50|p99|p99_9)"', "s",
         "Transaction latency percentiles of the last pgbench run, from its per-transaction log.",
         min=0, h=6, thresholds=thresholds(("green", None), ("orange", 0.1), ("red", 0.3)))
last_run("Trim efficiency of the last run", 8, "drivewatch_phase_result_ratio", 'kind="trim", measure="trim_efficiency"',
         "suffix:×",
         "Write speed after the deallocate over before it, in the last trim run: 0.9 or more keeps or gives "
         "back the speed (above 1: faster, a cache in use again), under 0.5 trim does not help.",
         min=0, h=6, decimals=2, thresholds=thresholds(("red", None), ("orange", 0.5), ("green", 0.9)))
last_run("Low power: idle and at 10 IOPS", 8, "drivewatch_phase_result_watts",
         'kind="power-states", measure=~"(idle|at_10_iops)_power_.*"', "watt",
         "Power idle and at 10 IOPS in the last power-states run, by source (meter, drive, psd_estimate). The "
         "report's rule: idle under 10 mW and 10 IOPS under 100 mW is low power.",
         min=0, thresholds=thresholds(("green", None), ("orange", 0.01), ("red", 0.1)))
last_run("Power in each state", 8, "drivewatch_phase_result_watts",
         'kind="power-states", measure=~"ps[0-9]+_(power_.*|max_power_declared)"', "watt",
         "Measured power in each power state and the descriptor's declared maximum, in the last power-states run.",
         min=0, thresholds=thresholds(("blue", None)))
last_run("Exit latency of each state", 8, "drivewatch_phase_result_seconds",
         'kind="power-states", measure=~"ps[0-9]+_exit_latency_(p50|max|declared)"', "s",
         "How long a read waited for the drive to leave each power state (p50 and max of the last run) against "
         "the descriptor's EXLAT.", min=0, thresholds=thresholds(("blue", None)))
last_run("Endurance: drive writes, Percentage Used and write amplification", 8, "drivewatch_phase_result_ratio",
         'kind="endurance", measure=~"drive_writes|percentage_used|waf"', "none",
         "The last endurance run: drive writes done by its test, SMART Percentage Used (NVMe targets) and the "
         "last pass's write amplification (drives with the OCP C0h log).",
         min=0, h=6, decimals=2, thresholds=thresholds(("blue", None)))

b.row("Data-retention studies")
b.panel("table", "Studies", 24, 7,
        [table_target(f"max by ({ST_KEYS}, id, state) (drivewatch_retention_study_info{st()})", "A"),
         table_target(f"max by ({ST_KEYS}) (drivewatch_retention_age_seconds{st()})", "B"),
         table_target(f"max by ({ST_KEYS}) (drivewatch_retention_powered_off_seconds{st()})", "C"),
         table_target(f"max by ({ST_KEYS}) (drivewatch_retention_equivalent_age_seconds{st()})", "D"),
         table_target(f"max by ({ST_KEYS}) (drivewatch_retention_verifies_total{st()})", "E"),
         table_target(f"max by ({ST_KEYS}) (drivewatch_retention_last_verify_timestamp_seconds{st()}) * 1000", "F"),
         table_target(f"sum by ({ST_KEYS}) (drivewatch_retention_bad_blocks" + st('read="last_verify"') + ")", "G")],
        description="Every retention study: state, wall age, estimated powered-off time, equivalent age at the "
                    "reference temperature (empty without a storage temperature), verifies and bad blocks at the last verify.",
        options={"showHeader": True, "cellHeight": "sm"},
        thresholds=thresholds(("green", None)),
        overrides=[
            override("State", ("mappings", [{"type": "value", "options": {
                "active": {"color": "green", "index": 0}, "failed": {"color": "red", "index": 1},
                "writing": {"color": "blue", "index": 2}, "baseline": {"color": "blue", "index": 3}}}]),
                ("custom.cellOptions", {"type": "color-text"})),
            override("Age", ("unit", "dtdurations")),
            override("Powered off", ("unit", "dtdurations")),
            override("Equivalent age", ("unit", "dtdurations")),
            override("Verifies", ("unit", "none")),
            override("Last verify", ("unit", "dateTimeFromNow")),
            override("Bad blocks", ("unit", "none"), ("thresholds", thresholds(("green", None), ("red", 1))),
                     ("custom.cellOptions", {"type": "color-background", "mode": "basic"})),
        ],
        transformations=[
            {"id": "merge", "options": {}},
            {"id": "organize", "options": {
                "excludeByName": {"Time": True, "Value #A": True},
                "indexByName": {n: i for i, n in enumerate(
                    ["instance", "study", "id", "target", "serial", "state"] + [f"Value #{r}" for r in "BCDEFG"])},
                "renameByName": {"instance": "Host", "study": "Study", "id": "Id", "target": "Target",
                                 "serial": "Serial", "state": "State", "Value #B": "Age",
                                 "Value #C": "Powered off", "Value #D": "Equivalent age",
                                 "Value #E": "Verifies", "Value #F": "Last verify", "Value #G": "Bad blocks"}}},
        ])
b.panel("timeseries", "Age and equivalent age", 12, 8,
        [target(f"drivewatch_retention_age_seconds{st()} / 86400", f"{STUDY} wall age", "A", interval="1h"),
         target(f"drivewatch_retention_powered_off_seconds{st()} / 86400", f"{STUDY} powered off", "B", interval="1h"),
         target(f"drivewatch_retention_powered_on_equivalent_seconds{st()} / 86400", f"{STUDY} powered-on equivalent", "C", interval="1h"),
         target(f"drivewatch_retention_equivalent_age_seconds{st()} / 86400", f"{STUDY} equivalent age", "D", interval="1h")],
        description="Days since the write: wall time, estimated powered-off time, and the Arrhenius equivalent age at "
                    "the study's reference temperature (powered-on time only, and with the powered-off time at the "
                    "configured storage temperature).",
        unit="suffix: d", min=0, decimals=1, custom=ts_custom(), options=tsopt,
        overrides=[override(".* equivalent age$", ("custom.lineWidth", 2), regex=True)])
b.panel("timeseries", "Bad blocks by class", 12, 8,
        [target('drivewatch_retention_bad_blocks' + st('read="last_verify"'),
                f"{STUDY} {{{{class}}}}", "A", interval="1h"),
         target('drivewatch_retention_bad_blocks' + st('read="baseline"'),
                f"{STUDY} {{{{class}}}} (baseline)", "B", interval="1h")],
        description="Bad 4 KiB blocks at the last verify by class (unreadable, wrong_content, misplaced, stale), and at the baseline read.",
        unit="none", min=0, decimals=0, custom=ts_custom(interp="stepAfter"), options=tsopt,
        overrides=[override(".*\\(baseline\\)$", dashed, regex=True)])
b.panel("timeseries", "Read latency: last verify against baseline", 12, 8,
        [target('drivewatch_retention_read_latency_seconds' + st('read="last_verify"'),
                f"{STUDY} p{{{{percentile}}}} last verify", "A", interval="1h"),
         target('drivewatch_retention_read_latency_seconds' + st('read="baseline"'),
                f"{STUDY} p{{{{percentile}}}} baseline", "B", interval="1h")],
        description="Read latency percentiles (100 = max) of the whole-region read at the last verify, against the baseline read right after the write.",
        unit="s", custom=dict(ts_custom(interp="stepAfter"), scaleDistribution={"type": "log", "log": 10}),
        options=tsopt, overrides=[override(".* baseline$", dashed, regex=True)])
b.panel("timeseries", "Latency shift (last verify / baseline)", 12, 8,
        [target('drivewatch_retention_read_latency_seconds' + st('read="last_verify"') + f'\n'
                '  / ignoring (read)\ndrivewatch_retention_read_latency_seconds' + st('read="baseline"'),
                f"{STUDY} p{{{{percentile}}}}", "A", interval="1h")],
        description="How many times slower each percentile reads now than at the baseline (1 = unchanged).",
        unit="suffix:×", min=0, decimals=2, custom=ts_custom(interp="stepAfter"), options=tsopt,
        thresholds=thresholds(("green", None), ("orange", 2), ("red", 10)))
b.panel("timeseries", "Slow reads", 12, 8,
        [target(f'drivewatch_retention_reads_over_ratio{st()}',
                f"{STUDY} {{{{read}}}} over {{{{threshold}}}}", "A", interval="1h")],
        description="Fraction of reads slower than 10 ms and 100 ms, at the baseline and the last verify.",
        unit="percentunit", min=0, custom=ts_custom(interp="stepAfter"), options=tsopt,
        overrides=[override(".* baseline over .*", dashed, regex=True)])
b.panel("table", "SMART change since the write", 12, 8,
        [table_target(f"max by ({ST_KEYS}, counter) (drivewatch_retention_smart_delta{st()})", "A")],
        description="Change since the write of media errors, error-log entries, power cycles, unsafe shutdowns and "
                    "power-on hours, as of the last verify.",
        options={"showHeader": True, "cellHeight": "sm"},
        thresholds=thresholds(("green", None)),
        transformations=[
            {"id": "organize", "options": {
                "excludeByName": {"Time": True},
                "renameByName": {"instance": "Host", "study": "Study", "serial": "Serial", "target": "Target",
                                 "counter": "Counter", "Value": "Change"}}},
        ])

dash = dashboard("drivewatch-aging", "drivewatch / Aging and retention",
                 "Heavy aging phases (fill / SLC cache, perf at fill level, trim, reclaim) over months, the running "
                 "phase, and data-retention studies against their baseline.",
                 b.panels, variables(extra_vars), time_from="now-90d", refresh="5m")
write(OUT, dash)
