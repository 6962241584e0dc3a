#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The layering the build relies on, checked on the includes of every
# non-test source file (data flows drive layer -> probe/phase -> sink ->
# metric store -> HTTP):
#   - libnvme belongs to the drive layer: only probes/drive/nvme_drive_layer.cc
#     includes a libnvme header;
#   - liburing belongs to the I/O target (ring set-up), the read reactor and
#     the workload engine: only probes/drive/io_target.cc, probes/latency/read_reactor.cc
#     and aging/engine/workload.cc include it, and no header;
#   - prometheus-cpp belongs to the metric store: only exporter/metric_store.*;
#   - config/ includes nothing of the other folders, probes/ only config/,
#     aging/ only config/ and probes/; nothing outside exporter/ includes
#     exporter/;
#   - within the folders (docs/architecture.md): config/util/, which every
#     folder may use, includes nothing of drivewatch outside itself; the
#     drive layer (probes/drive/) nothing of probes/ outside itself; the
#     workload engine (aging/engine/) and history (aging/history/) nothing
#     of aging/ outside themselves.
# The checker is first run on planted violations, one per rule, each of
# which it must report; then on the source tree, which must have none.
#   usage: layering_test.sh SOURCE_DIR
set -euo pipefail
src=${1:?usage: $0 SOURCE_DIR}

# check ROOT: prints one line per violation, exits 1 if there is any.
check() {
  local root=$1 bad=0 f dir line inc path own sub parent
  while IFS= read -r f; do
    dir=${f%%/*}
    while IFS= read -r line; do
      inc=${line#*:}
      case $inc in
        *'<libnvme.h>'* | *'<nvme/'*)
          [[ $f == probes/drive/nvme_drive_layer.cc ]] ||
            { echo "$f:${line%%:*}: includes libnvme outside the drive layer (probes/drive/nvme_drive_layer.cc)"; bad=1; } ;;
        *'<liburing.h>'* | *'<liburing/'*)
          [[ $f == probes/drive/io_target.cc || $f == probes/latency/read_reactor.cc || $f == aging/engine/workload.cc ]] ||
            { echo "$f:${line%%:*}: includes liburing outside probes/drive/io_target.cc, probes/latency/read_reactor.cc and aging/engine/workload.cc"; bad=1; } ;;
        *'<prometheus/'*)
          [[ $f == exporter/metric_store.h || $f == exporter/metric_store.cc ]] ||
            { echo "$f:${line%%:*}: includes prometheus-cpp outside the metric store (exporter/metric_store.*)"; bad=1; } ;;
        *'"exporter/'*)
          [[ $dir == exporter ]] ||
            { echo "$f:${line%%:*}: $dir/ includes exporter/ (only exporter/ may)"; bad=1; } ;;
        *'"aging/'*)
          [[ $dir == aging || $dir == exporter ]] ||
            { echo "$f:${line%%:*}: $dir/ includes aging/ (only aging/ and exporter/ may)"; bad=1; } ;;
        *'"probes/'*)
          [[ $dir != config ]] ||
            { echo "$f:${line%%:*}: config/ includes probes/ (config/ stands alone)"; bad=1; } ;;
      esac
      # Within the folders: a folder that stands alone inside its parent.
      [[ $inc =~ \"((config|probes|aging|exporter)/[^\"]*)\" ]] || continue
      path=${BASH_REMATCH[1]}
      for own in config/util/:config/ probes/drive/:probes/ aging/engine/:aging/ aging/history/:aging/; do
        sub=${own%%:*} parent=${own#*:}
        if [[ $f == "$sub"* && $path == "$parent"* && $path != "$sub"* ]]; then
          echo "$f:${line%%:*}: $sub includes $path (${sub%/} stands alone in ${parent%/})"
          bad=1
        fi
      done
    done < <(grep -n '^[[:space:]]*#[[:space:]]*include' "$root/$f" || true)
  done < <(cd "$root" && find config probes aging exporter -type f \( -name '*.cc' -o -name '*.h' \) | sort)
  return $bad
}

# The rules fire: one planted violation each, in a copy of the tree.
plant=$(mktemp -d "${TMPDIR:-/tmp}/dw-layering.XXXXXX")
trap 'rm -rf "$plant"' EXIT
cp -r "$src/config" "$src/probes" "$src/aging" "$src/exporter" "$plant/"
echo '#include <libnvme.h>' >>"$plant/aging/safety/interlocks.cc"
echo '#include <liburing.h>' >>"$plant/probes/drive/io_target.h"
echo '#include <prometheus/counter.h>' >>"$plant/exporter/daemon.cc"
echo '#include "exporter/metric_store.h"' >>"$plant/probes/health_probe.cc"
echo '#include "aging/history/history.h"' >>"$plant/probes/drive/smart_log.cc"
echo '#include "probes/probe.h"' >>"$plant/config/config.cc"
echo '#include "config/config.h"' >>"$plant/config/util/text.cc"
echo '#include "probes/sample_sink.h"' >>"$plant/probes/drive/identify.cc"
echo '#include "aging/phases/phase.h"' >>"$plant/aging/engine/workload.cc"
echo '#include "aging/runner/drive_age.h"' >>"$plant/aging/history/history.h"
planted=$(check "$plant" || true)
wants=("aging/safety/interlocks.cc:.*libnvme" "probes/drive/io_target.h:.*liburing"
       "exporter/daemon.cc:.*prometheus-cpp" "probes/health_probe.cc:.*includes exporter/"
       "probes/drive/smart_log.cc:.*includes aging/" "config/config.cc:.*includes probes/"
       "config/util/text.cc:.*config/util stands alone" "probes/drive/identify.cc:.*probes/drive stands alone"
       "aging/engine/workload.cc:.*aging/engine stands alone" "aging/history/history.h:.*aging/history stands alone")
for want in "${wants[@]}"; do
  grep -q "$want" <<<"$planted" || { echo "FAIL: the checker missed a planted violation ($want):"; echo "$planted"; exit 1; }
done
echo "ok: the checker reports each of ${#wants[@]} planted violations"

if ! found=$(check "$src"); then
  echo "FAIL: layering violations:"
  echo "$found"
  exit 1
fi
echo "ok: no layering violation in config/, probes/, aging/ and exporter/"
