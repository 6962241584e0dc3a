# SPDX-License-Identifier: Apache-2.0
import os
from common import *

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "grafana", "drivewatch-fleet.json")
DRIVE_LINK = ("/d/drivewatch-drive/drivewatch-drive-detail?${datasource:queryparam}"
              "&var-instance=${__data.fields.Host}&var-serial=${__data.fields.Serial}&${__url_time_range}")


def info(expr):
    return (f"({expr})\n  * on (instance, serial) group_left (model)\n"
            f"  max by (instance, serial, model) (drivewatch_drive_info{sel()})")


COMPOSITE = sel('sensor="composite"')
WCTEMP = sel('threshold="wctemp"')
P999 = sel('percentile="99.9", window="1h"')

b = Builder()
b.row("Fleet")
stat = dict(options=stat_options())
b.panel("stat", "Drives up", 4, 4,
        [target(f"sum(drivewatch_drive_up{sel()})", instant=True, range=False)],
        description="Drives present at the last discovery (drivewatch_drive_up = 1).",
        unit="none", thresholds=thresholds(("blue", None)), **stat)
b.panel("stat", "Drives gone (grace period)", 4, 4,
        [target(f"count(drivewatch_drive_up{sel()} == 0) or vector(0)", instant=True, range=False)],
        description="Drives that vanished and are within the discovery grace period "
                    "(drivewatch_drive_up = 0); after it their series go away.",
        unit="none", thresholds=thresholds(("green", None), ("red", 1)), **stat)
b.panel("stat", "Drives with warnings", 4, 4,
        [target("count(\n  max by (instance, serial) (drivewatch_critical_warning_raw" + sel() + ") > 0\n"
                "  or max by (instance, serial) (drivewatch_endurance_group_critical_warning_raw" + sel() + ") > 0\n) or vector(0)",
                instant=True, range=False)],
        description="Drives whose SMART Critical Warning byte or Endurance Group Critical "
                    "Warning Summary is not 0.",
        unit="none", thresholds=thresholds(("green", None), ("red", 1)), **stat)
b.panel("stat", "Drives throttling now", 4, 4,
        [target(f"count(max by (instance, serial) (drivewatch_thermal_throttling{sel()}) > 0) or vector(0)",
                instant=True, range=False)],
        description="Drives whose host controlled thermal management level "
                    "(drivewatch_thermal_throttling) is 1 or 2: throttled within the last minute.",
        unit="none", thresholds=thresholds(("green", None), ("orange", 1)), **stat)
b.panel("stat", "Failing probes", 4, 4,
        [target(f"count(drivewatch_probe_success{sel()} == 0) or vector(0)", instant=True, range=False)],
        description="Probe runs (probe × drive) whose last run failed.",
        unit="none", thresholds=thresholds(("green", None), ("orange", 1)), **stat)
b.panel("stat", "Read-latency targets down", 4, 4,
        [target(f"count(drivewatch_read_latency_target_up{sel()} == 0) or vector(0)", instant=True, range=False)],
        description="Read latency targets that could not be opened.",
        unit="none", thresholds=thresholds(("green", None), ("orange", 1)), **stat)

# The drive table: one row per drive, one query per column, merged on
# (instance, serial).
q = {
    "A": f"max by (instance, serial, model, firmware, kernel_name) (drivewatch_drive_info{sel()})",
    "B": f"max by (instance, serial) (drivewatch_drive_up{sel()})",
    "C": f'max by (instance, serial) (drivewatch_temperature_celsius{COMPOSITE})',
    "D": f'max by (instance, serial) (drivewatch_temperature_threshold_celsius{WCTEMP})',
    "E": (f'max by (instance, serial) (drivewatch_temperature_threshold_celsius{WCTEMP})\n'
          f'  - on (instance, serial)\nmax by (instance, serial) (drivewatch_temperature_celsius{COMPOSITE})'),
    "F": f"max by (instance, serial) (drivewatch_percentage_used_ratio{sel()})",
    "G": f"max by (instance, serial) (drivewatch_available_spare_ratio{sel()})",
    "H": f"max by (instance, serial) (drivewatch_media_errors_total{sel()})",
    "I": f"max by (instance, serial) (drivewatch_critical_warning_raw{sel()})",
    "J": f"max by (instance, serial) (drivewatch_thermal_throttling{sel()})",
    "K": f"max by (instance, serial) (drivewatch:thermal_throttle_seconds:increase1d{sel()})",
    "L": f'max by (instance, serial) (drivewatch_read_latency_window_seconds{P999})',
    "M": f"count by (instance, serial) (drivewatch_probe_success{sel()} == 0)",
}
names = {
    "instance": "Host", "serial": "Serial", "model": "Model", "firmware": "Firmware",
    "kernel_name": "Device", "Value #B": "Present", "Value #C": "Temperature",
    "Value #D": "WCTEMP", "Value #E": "Below WCTEMP", "Value #F": "Used",
    "Value #G": "Spare", "Value #H": "Media errors", "Value #I": "Critical warning",
    "Value #J": "Throttling", "Value #K": "Throttled (24 h)", "Value #L": "Read p99.9 (1 h)",
    "Value #M": "Failing probes",
}
order = ["instance", "serial", "model", "firmware", "kernel_name"] + [f"Value #{r}" for r in "BCDEFGHIJKLM"]
bg = ("custom.cellOptions", {"type": "color-background", "mode": "basic"})
overrides = [
    override("Serial", ("links", [{"title": "Drive detail", "url": DRIVE_LINK}])),
    override("Present", ("mappings", [{"type": "value", "options": {
        "1": {"text": "up", "color": "green", "index": 0},
        "0": {"text": "gone", "color": "red", "index": 1}}}]), bg),
    override("Temperature", ("unit", "celsius"), ("decimals", 0)),
    override("WCTEMP", ("unit", "celsius"), ("decimals", 0)),
    override("Below WCTEMP", ("unit", "celsius"), ("decimals", 0),
             ("thresholds", thresholds(("red", None), ("orange", 0), ("yellow", 5), ("green", 10))), bg),
    override("Used", ("unit", "percentunit"), ("decimals", 0),
             ("thresholds", thresholds(("green", None), ("yellow", 0.8), ("red", 1))), bg),
    override("Spare", ("unit", "percentunit"), ("decimals", 0),
             ("thresholds", thresholds(("red", None), ("orange", 0.25), ("green", 0.5))), bg),
    override("Media errors", ("unit", "none"), ("decimals", 0),
             ("thresholds", thresholds(("green", None), ("red", 1))), bg),
    override("Critical warning", ("unit", "none"),
             ("mappings", [{"type": "value", "options": {"0": {"text": "none", "index": 0}}}]),
             ("thresholds", thresholds(("green", None), ("red", 1))), bg),
    override("Throttling", ("mappings", [{"type": "value", "options": {
        "0": {"text": "no", "color": "green", "index": 0},
        "1": {"text": "light (TMT1)", "color": "orange", "index": 1},
        "2": {"text": "heavy (TMT2)", "color": "red", "index": 2}}}]), bg),
    override("Throttled (24 h)", ("unit", "dtdurations"),
             ("thresholds", thresholds(("green", None), ("yellow", 1), ("red", 3600))), bg),
    override("Read p99.9 (1 h)", ("unit", "s"),
             ("thresholds", thresholds(("green", None), ("yellow", 0.01), ("red", 0.1))), bg),
    override("Failing probes", ("unit", "none"), ("decimals", 0),
             ("thresholds", thresholds(("green", None), ("orange", 1))), bg),
]
b.panel("table", "Drives", 24, 12,
        [table_target(e, r) for r, e in q.items()],
        description=("One row per drive (host = the scrape's instance), joined on (instance, serial) "
                     "with drivewatch_drive_info for model, firmware and kernel name. Below WCTEMP: "
                     "warning composite temperature threshold minus the composite temperature. "
                     "Used: the drive's percentage-used estimate (1 = rated endurance). Throttled "
                     "(24 h): host controlled thermal management time (TMT1 + TMT2) over the last day. "
                     "Read p99.9: the read latency probe's 1-hour window, worst namespace and rate. "
                     "Click a serial for the drive's detail."),
        options={"showHeader": True, "cellHeight": "sm", "footer": {"show": False, "reducer": ["sum"], "fields": ""},
                 "sortBy": [{"displayName": "Below WCTEMP", "desc": False}]},
        custom={"align": "auto", "cellOptions": {"type": "auto"}, "inspect": False, "filterable": True},
        thresholds=thresholds(("green", None)),
        overrides=overrides,
        transformations=[
            {"id": "merge", "options": {}},
            {"id": "organize", "options": {
                "excludeByName": {"Time": True, "Value #A": True},
                "indexByName": {n: i for i, n in enumerate(order)},
                "renameByName": names}},
        ])

b.row("Trends")
tsopt = ts_options()
b.panel("timeseries", "Temperature below WCTEMP", 12, 9,
        [target(info(f'max by (instance, serial) (drivewatch_temperature_threshold_celsius{WCTEMP})\n'
                     f'  - on (instance, serial)\nmax by (instance, serial) (drivewatch_temperature_celsius{COMPOSITE})'),
                "{{instance}} {{model}} {{serial}}")],
        description="Margin of each drive's composite temperature below its warning threshold (WCTEMP); below 0 the drive is over it.",
        unit="celsius", custom=ts_custom(), options=ts_options(calcs=("lastNotNull", "min")),
        thresholds=thresholds(("red", None), ("transparent", 0)))
b.panel("timeseries", "Percentage used", 12, 9,
        [target(info(f"max by (instance, serial) (drivewatch_percentage_used_ratio{sel()})"),
                "{{instance}} {{model}} {{serial}}", interval="1h")],
        description="The drive's own estimate of life used (1 = rated endurance reached).",
        unit="percentunit", min=0, custom=ts_custom(interp="stepAfter"), options=tsopt)
b.panel("timeseries", "Thermal throttle time per day", 12, 9,
        [target(info(f"drivewatch:thermal_throttle_seconds:increase1d{sel()}"),
                "{{instance}} {{model}} {{serial}}")],
        description="Seconds spent in host controlled thermal management (TMT1 + TMT2) over the preceding 24 h "
                    "(recording rule drivewatch:thermal_throttle_seconds:increase1d).",
        unit="s", min=0, custom=ts_custom(), options=tsopt)
b.panel("timeseries", "Read latency p99.9 (1 h window)", 12, 9,
        [target(info(f'max by (instance, serial) (drivewatch_read_latency_window_seconds{P999})'),
                "{{instance}} {{model}} {{serial}}")],
        description="Worst p99.9 over the drive's namespaces and probe rates, 1-hour window.",
        unit="s", custom=ts_custom(), options=tsopt,
        fieldConfig={"defaults": {"custom": {"scaleDistribution": {"type": "log", "log": 10}}}, "overrides": []})
b.panel("timeseries", "Data written per day", 12, 9,
        [target(info(f"drivewatch:data_written_bytes:rate1d{sel()}"), "{{instance}} {{model}} {{serial}}")],
        description="Bytes the host wrote over the preceding 24 h (recording rule drivewatch:data_written_bytes:rate1d).",
        unit="bytes", min=0, custom=ts_custom(), options=tsopt)
b.panel("timeseries", "Drive writes per day", 12, 9,
        [target(info(f"drivewatch:drive_writes_per_day:rate1d{sel()}"), "{{instance}} {{model}} {{serial}}")],
        description="Bytes written per day divided by the drive's capacity (DWPD; recording rule drivewatch:drive_writes_per_day:rate1d).",
        unit="none", decimals=3, min=0, custom=ts_custom(), options=tsopt)

dash = dashboard("drivewatch-fleet", "drivewatch / Fleet overview",
                 "Every NVMe drive drivewatch watches: health, temperature, wear, throttling and read latency at a glance.",
                 b.panels, variables())
write(OUT, dash)
