#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# retention-verify's read beside fio's own verify, same size, block size and
# queue depth, on a plain file in /var/tmp: seconds of wall time per GiB
# verified, interleaved rounds (which tool goes first alternating), medians
# and the fio/engine ratio (above 1: the engine verifies faster).
#
#   tests/bench/verify_vs_fio.sh BUILD_DIR [ROUNDS=6] [MIB=2048] [BS=131072] [QD=32]
#
# Each file is written once, before the rounds, and each round only reads:
# ours: laid down by `workload_bench --verify 4096 --verify-step write`
# (retention blocks, written by the engine as retention-write does); each
# round `--verify-step read` reads it once, every 4 KiB block checked by
# the RetentionVerifier (the retention-verify phase's code); its time is
# the engine's run time. fio: written with --verify=crc32c --do_verify=0,
# then each round `--verify_only` with ioengine=io_uring, direct=1,
# registerfiles=1, fixedbufs=1; its time is the job's runtime. Each tool
# has its own file: a fio read job over a file fio did not write lays its
# own data down first.
# FIO_EXTRA="--iomem=mmaphuge": more fio arguments. With that one (and
# huge pages reserved: echo 128 >/proc/sys/vm/nr_hugepages) fio's buffers
# are 2 MiB pages too, as the engine's are (docs/aging.md "Buffers"), and
# the comparison is of the I/O paths alone.
set -euo pipefail
read -ra fio_extra <<<"${FIO_EXTRA:-}"

build=${1:?usage: $0 BUILD_DIR [ROUNDS] [MIB] [BS] [QD]}
rounds=${2:-6}
mib=${3:-2048}
bs=${4:-131072}
qd=${5:-32}
bench=$build/tests/workload_bench
size=$((mib * 1024 * 1024))
dir=${WORKLOAD_BENCH_DIR:-/var/tmp}
ours_file=$dir/dw_vvf_ours.$$.img
fio_file=$dir/dw_vvf_fio.$$.img
results=$(mktemp)
trap 'rm -f "$ours_file" "$fio_file" "$results"' EXIT

command -v fio >/dev/null || { echo "fio not found" >&2; exit 1; }
[[ -x $bench ]] || { echo "$bench not built" >&2; exit 1; }
fallocate -l $size "$ours_file"
fallocate -l $size "$fio_file"
fio_common=(--name=verify --filename="$fio_file" --size=$size --rw=write --bs="$bs"
  --iodepth="$qd" --ioengine=io_uring --direct=1 --registerfiles=1 --fixedbufs=1
  --verify=crc32c --verify_state_save=0)
fio "${fio_common[@]}" --do_verify=0 >/dev/null
"$bench" --path "$ours_file" --rw read --access seq --bs "$bs" --qd "$qd" --size $size \
  --verify 4096 --verify-step write

ours() {
  local json
  json=$("$bench" --path "$ours_file" --rw read --access seq --bs "$bs" --qd "$qd" \
    --size $size --verify 4096 --verify-step read)
  echo "$json" | python3 -c '
import json, sys
r = json.load(sys.stdin)
assert r["bad_blocks"] == 0 and r["verified_blocks"] * 4096 == int(sys.argv[1]), r
print(json.dumps({"tool": "ours", "seconds": r["seconds"]}))' $size >>"$results"
}
theirs() {
  local json
  json=$(fio "${fio_common[@]}" "${fio_extra[@]}" --verify_only --output-format=json)
  echo "$json" | python3 -c '
import json, sys
j = json.load(sys.stdin)["jobs"][0]
assert j["error"] == 0, j["error"]
print(json.dumps({"tool": "fio", "seconds": j["job_runtime"] / 1000.0}))' >>"$results"
}

for round in $(seq 1 "$rounds"); do
  if (( round % 2 )); then ours; theirs; else theirs; ours; fi
done

python3 - "$results" "$mib" "$bs" "$qd" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
gib = int(sys.argv[2]) / 1024
ours = [r["seconds"] / gib for r in rows if r["tool"] == "ours"]
fio = [r["seconds"] / gib for r in rows if r["tool"] == "fio"]
def med(v):
    v = sorted(v)
    return (v[(len(v) - 1) // 2] + v[len(v) // 2]) / 2
ratios = [f / o for o, f in zip(ours, fio)]
print(f"verify {sys.argv[2]} MiB, {sys.argv[3]}-byte reads at QD{sys.argv[4]}, {len(ours)} rounds")
print("round  engine s/GiB  fio s/GiB  fio/engine")
for i, (o, f) in enumerate(zip(ours, fio), 1):
    print(f"{i:5}  {o:12.3f}  {f:9.3f}  {f / o:10.3f}")
print(f"median {med(ours):12.3f}  {med(fio):9.3f}  {med(ratios):10.3f}")
PY
