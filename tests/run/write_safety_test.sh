#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Write safety through the real binary, on real loop devices and
# directories: the same bytes reached under another name are never
# written (docs/aging.md, "Which bytes a target reaches"). One block per
# case of the review that found them; each checks the refusal, that the
# bytes it protects are unchanged (sha256 before and after), and the
# control that a clean, acknowledged target is still written.
#   1  a study reached through a partition, or a second loop device with
#      --offset, over the same file;
#   2  a study on a directory target reached by another spelling of the
#      directory (trailing slash, //, /./, a symlink);
#   3  file_size changed on a file that holds a study: nothing is truncated
#      or grown before the gate;
#   4  a mounted file system reached through a second loop device on its
#      image, even with allow_signatures = true;
#   5  the refusal of a partitioned device names what each partition holds;
#   6  a GPT with only its backup header left;
#   7  a file at the aging file's path that drivewatch did not make;
#   8  identities compared byte for byte (a backing file named "t.img ");
#   9  an endurance test's progress on another device after a reload;
#  10  a study started by a config with another state directory.
# Root (loop devices, mount); ~40 s.
#   usage: write_safety_test.sh DRIVEWATCH_BINARY
set -euo pipefail
bin=$(realpath "$1")
loops=()
mounts=()
on_exit() {
  local m l
  for m in "${mounts[@]}"; do umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true; done
  for l in "${loops[@]}"; do
    partx -d "$l" 2>/dev/null || true
    losetup -d "$l" 2>/dev/null || true
  done
}
source "$(dirname "$0")/lib.sh"
[[ $(id -u) == 0 ]] || { echo "SKIP: needs root for loop devices"; exit 77; }
mib=$((1 << 20))
register=$work/register

# sha256 of bytes [FROM_MIB, FROM_MIB + COUNT_MIB) of FILE.
sha() { dd if="$1" bs=1M skip="$2" count="$3" status=none | sha256sum | cut -d' ' -f1; }
loop() {  # losetup ARGS...: the new device in $dev, remembered for clean-up
  dev=$(losetup --direct-io=on --show -f "$@")
  loops+=("$dev")
}
# A loop device with the partitions of its image. The kernel's own scan
# (losetup -P) needs its partition table parsers, which some kernels are
# built without: partx adds them through BLKPG either way.
partitioned() {  # IMAGE: the device in $dev
  loop "$1"
  partx -a "$dev" 2>/dev/null || true
  [[ -b ${dev}p2 ]] || fail "no ${dev}p2 after partx -a $dev"
}
# A config with the common parts; the rest of its text on stdin.
config() {  # FILE STATE_DIR
  {
    printf '[state]\ndirectory = "%s"\nstudy_register = "%s"\n' "$2" "$register"
    printf '[probes.read_latency]\nenabled = false\n'
    cat
  } >"$1"
}
# phase run, expecting a refusal whose reason contains TEXT.
refused() {  # CONFIG PHASE TEXT
  local rc=0
  "$bin" phase run "$2" --config.file="$1" >"$work/out.json" 2>"$work/out.err" || rc=$?
  ((rc != 0 && rc < 128)) || fail "$2 in $1: exit $rc, expected a refusal ($(tail -2 "$work/out.err"))"
  grep -qF -- "$3" "$work/out.json" "$work/out.err" ||
    fail "$2 in $1: the refusal does not say \"$3\": $(tail -3 "$work/out.err")"
  python3 -c 'import json,sys; print("  refused:", json.load(open(sys.argv[1]))["reason"])' \
    "$work/out.json" 2>/dev/null || sed 's/^/  refused: /' "$work/out.err"
}
completed() {  # CONFIG PHASE
  "$bin" phase run "$2" --config.file="$1" >"$work/out.json" 2>"$work/out.err" ||
    fail "$2 in $1 did not complete: $(tail -3 "$work/out.err")"
}
# Two dos partitions: 1 MiB to 64 MiB, 64 MiB to the end (128 MiB image).
mbr() {
  python3 - "$1" <<'PY'
import struct, sys
mbr = bytearray(512)
for i, (start, size) in enumerate([(2048, 129024), (131072, 131072)]):
    mbr[446 + 16 * i:462 + 16 * i] = struct.pack("<B3sB3sII", 0, b"\0\0\0", 0x83, b"\0\0\0", start, size)
mbr[510:512] = b"\x55\xaa"
with open(sys.argv[1], "r+b") as f:
    f.write(mbr)
PY
}

# --- 1: a study reached through a partition or an offset loop ------------------
truncate -s 128M "$work/t.img"
mbr "$work/t.img"
partitioned "$work/t.img"
disk=$dev
serial="loop:$work/t.img"
config "$work/study.toml" "$work/state" <<TOML
[[aging.targets]]
name = "disk"
block_device = "$disk"
serial = "$serial"
destroy_data = true
allow_signatures = true
[[aging.phases]]
name = "lab"
kind = "retention-write"
target = "disk"
study = "lab"
offset = "80MiB"
length = "8MiB"
block_size = "1MiB"
TOML
completed "$work/study.toml" lab
study_sha=$(sha "$work/t.img" 80 8)
loop --offset $((64 * mib)) "$work/t.img"
offset_loop=$dev
for other in "${disk}p2" "$offset_loop"; do
  config "$work/fill.toml" "$work/state" <<TOML
[[aging.targets]]
name = "other"
block_device = "$other"
serial = "$serial"
destroy_data = true
[[aging.phases]]
name = "fill"
kind = "fill"
target = "other"
TOML
  refused "$work/fill.toml" fill "$other: refusing to write: bytes [0B, 64MiB) (on storage $work/t.img [64MiB, 128MiB), which the study's $work/t.img [80MiB, 88MiB) overlaps) overlap the region [80MiB, 88MiB) held by retention study \"lab\""
  [[ $(sha "$work/t.img" 80 8) == "$study_sha" ]] || fail "1: the study's bytes changed through $other"
done
# One config naming both is refused at load, on the bytes they share.
cat "$work/study.toml" >"$work/both.toml"
sed -n '/^\[\[aging.targets\]\]/,$p' "$work/fill.toml" >>"$work/both.toml"
rc=0; "$bin" check-config "$work/both.toml" >"$work/check.out" 2>&1 || rc=$?
((rc == 2)) || fail "1: check-config of a study and a fill on its bytes exited $rc, expected 2"
grep -qF "which reaches the same bytes as target \"other\": $work/t.img [80MiB, 88MiB)" "$work/check.out" ||
  grep -qF "which reaches the same bytes as target \"disk\": $work/t.img [80MiB, 88MiB)" "$work/check.out" ||
  fail "1: check-config does not name the shared bytes: $(cat "$work/check.out")"
sed 's/^/  check-config: /' "$work/check.out"
pass "1: a study is refused to a fill through ${disk}p2 and through an --offset loop, and at load"
# Control: partition 1 shares no byte with the study, and is written.
config "$work/p1.toml" "$work/state" <<TOML
[[aging.targets]]
name = "p1"
block_device = "${disk}p1"
serial = "$serial"
destroy_data = true
[[aging.phases]]
name = "fill"
kind = "fill"
target = "p1"
TOML
p1_before=$(sha "$work/t.img" 1 8)
completed "$work/p1.toml" fill
[[ $(sha "$work/t.img" 1 8) != "$p1_before" ]] || fail "1: the fill of ${disk}p1 wrote nothing"
[[ $(sha "$work/t.img" 80 8) == "$study_sha" ]] || fail "1: the fill of ${disk}p1 reached the study"
pass "1: control: ${disk}p1, clean and acknowledged, is written and the study is not"

# --- 10: a study of another state directory ---------------------------------------
config "$work/other-state.toml" "$work/state2" <<TOML
[[aging.targets]]
name = "again"
block_device = "$offset_loop"
serial = "$serial"
destroy_data = true
[[aging.phases]]
name = "fill"
kind = "fill"
target = "again"
TOML
refused "$work/other-state.toml" fill "held by retention study \"lab\" (active, $register/"
grep -qF "of state directory $work/state)" "$work/out.json" ||
  fail "10: the refusal does not name the study's state directory: $(cat "$work/out.json")"
[[ $(sha "$work/t.img" 80 8) == "$study_sha" ]] || fail "10: the study's bytes changed"
pass "10: a config with another state directory is refused the study's region"
"$bin" retention end lab --config.file="$work/study.toml" >/dev/null || fail "retention end lab"
completed "$work/other-state.toml" fill
[[ $(sha "$work/t.img" 80 8) != "$study_sha" ]] || fail "10: the ended study's region was not written"
pass "10: control: once the study is ended, the other config writes its region"

# --- 2 and 3: a directory target by another spelling, and file_size -------------
mkdir -p "$work/d"
ln -s "$work/d" "$work/link"
dir_config() {  # FILE DIRECTORY_SPELLING FILE_SIZE KIND
  config "$1" "$work/dstate" <<TOML
[[aging.targets]]
name = "dir"
directory = "$2"
file_size = "$3"
free_space_reserve = 0.01
[[aging.phases]]
name = "$4"
kind = "$4"
target = "dir"
study = "dirlab"
offset = "32MiB"
length = "16MiB"
block_size = "1MiB"
TOML
  [[ $4 == retention-write ]] || sed -i '/^study\|^offset\|^length\|^block_size/d' "$1"
}
dir_config "$work/dir.toml" "$work/d" 64MiB retention-write
completed "$work/dir.toml" retention-write
file=$work/d/drivewatch-aging-dir.dat
dir_sha=$(sha "$file" 32 16)
for spelling in "$work/d/" "$work//d" "$work/./d" "$work/link"; do
  dir_config "$work/spelled.toml" "$spelling" 64MiB fill
  refused "$work/spelled.toml" fill "overlap the region [32MiB, 48MiB) held by retention study \"dirlab\""
  [[ $(sha "$file" 32 16) == "$dir_sha" ]] || fail "2: the study's bytes changed through \"$spelling\""
done
pass "2: the directory spelled with a trailing slash, //, /./ and a symlink is refused"
for size in 32MiB 96MiB; do
  dir_config "$work/resized.toml" "$work/d" "$size" fill
  refused "$work/resized.toml" fill "changing the size of this file would cut or move bytes that retention study \"dirlab\""
  (($(stat -c %s "$file") == 64 * mib)) || fail "3: file_size $size changed the file's size"
  [[ $(sha "$file" 32 16) == "$dir_sha" ]] || fail "3: file_size $size changed the study's bytes"
done
pass "3: file_size 32MiB and 96MiB on a file holding a study change nothing and are refused"

# --- 7: a file drivewatch did not make --------------------------------------------
mkdir -p "$work/u"
head -c $((40 * mib)) /dev/urandom >"$work/u/drivewatch-aging-mine.dat"
user_sha=$(sha256sum <"$work/u/drivewatch-aging-mine.dat")
config "$work/user.toml" "$work/ustate" <<TOML
[[aging.targets]]
name = "mine"
directory = "$work/u"
file_size = "64MiB"
free_space_reserve = 0.01
[[aging.phases]]
name = "fill"
kind = "fill"
target = "mine"
TOML
refused "$work/user.toml" fill "$work/u/drivewatch-aging-mine.dat: refusing to write: it exists, but drivewatch did not create it (40.0 MiB"
[[ $(sha256sum <"$work/u/drivewatch-aging-mine.dat") == "$user_sha" ]] || fail "7: the user's file changed"
pass "7: a 40 MiB file drivewatch did not make is refused, named, and unchanged"
rm "$work/u/drivewatch-aging-mine.dat"
completed "$work/user.toml" fill
(($(stat -c %s "$work/u/drivewatch-aging-mine.dat") == 64 * mib)) || fail "7: control: no 64 MiB file"
completed "$work/user.toml" fill
pass "7: control: drivewatch's own file is made, written, and written again"

# --- 4: a mounted file system through a second loop device -------------------
truncate -s 64M "$work/m.img"
mkfs.ext4 -q -F "$work/m.img"
mkdir -p "$work/mnt"
mount -o loop "$work/m.img" "$work/mnt"
mounts+=("$work/mnt")
echo precious >"$work/mnt/file"
sync
mounted_loop=$(findmnt -n -o SOURCE "$work/mnt")
loop "$work/m.img"
second=$dev
config "$work/mounted.toml" "$work/mstate" <<TOML
[[aging.targets]]
name = "second"
block_device = "$second"
serial = "loop:$work/m.img"
destroy_data = true
allow_signatures = true
[[aging.phases]]
name = "fill"
kind = "fill"
target = "second"
TOML
refused "$work/mounted.toml" fill "$second: refusing to write: $mounted_loop is mounted on $work/mnt, and it reaches the same bytes ($work/m.img [0B, 64MiB)) (unmount it; no config key overrides this)"
[[ $(cat "$work/mnt/file") == precious ]] || fail "4: the file in the mounted file system changed"
umount "$work/mnt"
mounts=()
# (A mounted ext4 writes its own image, so no checksum of it is compared.)
fsck.ext4 -n -f "$work/m.img" >/dev/null 2>&1 || fail "4: the file system is damaged"
pass "4: a second loop device on a mounted image is refused, allow_signatures notwithstanding"
completed "$work/mounted.toml" fill
! fsck.ext4 -n -f "$work/m.img" >/dev/null 2>&1 || fail "4: control: the unmounted image was not written"
pass "4: control: unmounted, the same acknowledged target is written"

# --- 5: what each partition holds ------------------------------------------------
truncate -s 128M "$work/p.img"
mbr "$work/p.img"
partitioned "$work/p.img"
pdisk=$dev
mkfs.ext4 -q -F "${pdisk}p1"
config "$work/parts.toml" "$work/pstate" <<TOML
[[aging.targets]]
name = "parts"
block_device = "$pdisk"
serial = "loop:$work/p.img"
destroy_data = true
[[aging.phases]]
name = "fill"
kind = "fill"
target = "parts"
TOML
refused "$work/parts.toml" fill "it holds a dos partition table (partition 1 (63MiB from 1MiB): an ext4 file system; partition 2 (64MiB from 64MiB): nothing libblkid recognises) (set aging.targets.allow_signatures = true for target \"parts\" to overwrite it)"
pass "5: the refusal names the ext4 in partition 1 and the empty partition 2"
partx -d "$pdisk"
echo 'allow_signatures = true' >>"$work/parts.toml"
sed -i '/^allow_signatures/d' "$work/parts.toml"
sed -i 's|^destroy_data = true|destroy_data = true\nallow_signatures = true|' "$work/parts.toml"
p_sha=$(sha256sum <"$work/p.img")
completed "$work/parts.toml" fill
[[ $(sha256sum <"$work/p.img") != "$p_sha" ]] || fail "5: control: the acknowledged device was not written"
pass "5: control: with allow_signatures = true (and its partitions gone) it is written"

# --- 6: a GPT with only its backup header -----------------------------------------
truncate -s 64M "$work/g.img"
python3 - "$work/g.img" <<'PY'
# A GPT (UEFI 2.10 §5.3) with one partition, then the protective MBR and the
# primary header and entries wiped: only the backup at the end is left.
import struct, sys, uuid, zlib
path = sys.argv[1]
lbs, size = 512, 64 << 20
last = size // lbs - 1
entry = struct.pack("<16s16sQQQ72s", uuid.UUID("0fc63daf-8483-4772-8e79-3d69d8477de4").bytes_le,
                    uuid.uuid4().bytes_le, 2048, last - 34, 0, "data".encode("utf-16-le"))
entries = entry + bytes(128 * 128 - len(entry))
def header(current, backup, entries_lba):
    h = struct.pack("<8sIIIIQQQQ16sQIII", b"EFI PART", 0x10000, 92, 0, 0, current, backup, 34,
                    last - 33, uuid.uuid4().bytes_le, entries_lba, 128, 128, zlib.crc32(entries))
    h = h[:16] + struct.pack("<I", zlib.crc32(h)) + h[20:]
    return h + bytes(lbs - len(h))
with open(path, "r+b") as f:
    f.seek((last - 32) * lbs); f.write(entries)
    f.seek(last * lbs); f.write(header(last, 1, last - 32))
PY
loop "$work/g.img"
gpt=$dev
config "$work/gpt.toml" "$work/gstate" <<TOML
[[aging.targets]]
name = "gpt"
block_device = "$gpt"
serial = "loop:$work/g.img"
destroy_data = true
[[aging.phases]]
name = "fill"
kind = "fill"
target = "gpt"
TOML
g_sha=$(sha256sum <"$work/g.img")
refused "$work/gpt.toml" fill "$gpt: refusing to write: it holds"
grep -qE 'a gpt partition table|the backup header of a GPT' "$work/out.json" ||
  fail "6: the refusal does not name the GPT: $(cat "$work/out.json")"
[[ $(sha256sum <"$work/g.img") == "$g_sha" ]] || fail "6: the device was written"
pass "6: a GPT with only its backup header is seen, and refused"
sed -i 's|^destroy_data = true|destroy_data = true\nallow_signatures = true|' "$work/gpt.toml"
completed "$work/gpt.toml" fill
[[ $(sha256sum <"$work/g.img") != "$g_sha" ]] || fail "6: control: the acknowledged device was not written"
pass "6: control: with allow_signatures = true it is written"

# --- 8: identities byte for byte ---------------------------------------------------
truncate -s 16M "$work/s.img "
loop "$work/s.img "
blank=$dev
config "$work/blank.toml" "$work/bstate" <<TOML
[[aging.targets]]
name = "blank"
block_device = "$blank"
serial = "loop:$work/s.img"
destroy_data = true
[[aging.phases]]
name = "fill"
kind = "fill"
target = "blank"
TOML
refused "$work/blank.toml" fill "it is not the configured device: serial \"loop:$work/s.img\" configured, \"loop:$work/s.img \" found"
sed -i "s|serial = \"loop:$work/s.img\"|serial = \"loop:$work/s.img \"|" "$work/blank.toml"
rc=0; "$bin" check-config "$work/blank.toml" >"$work/check.out" 2>&1 || rc=$?
((rc == 2)) || fail "8: a serial with a trailing blank passed check-config"
grep -qF 'aging.targets.serial: "loop:'"$work"'/s.img " has blanks at its start or end' "$work/check.out" ||
  fail "8: check-config does not say why: $(cat "$work/check.out")"
sed 's/^/  check-config: /' "$work/check.out"
pass "8: \"t.img \" is not \"t.img\", and a serial with blanks at its ends is a config error"

# --- 9: endurance progress belongs to its storage ---------------------------------
truncate -s 64M "$work/e1.img" "$work/e2.img"
loop "$work/e1.img"
e1=$dev
loop "$work/e2.img"
e2=$dev
endurance() {  # DEVICE IMAGE
  config "$work/endurance.toml" "$work/estate" <<TOML
[[aging.targets]]
name = "wear"
block_device = "$1"
serial = "loop:$2"
destroy_data = true
[[aging.phases]]
name = "wear"
kind = "endurance"
target = "wear"
workload = "sequential"
block_size = "1MiB"
drive_writes = 1
max_drive_writes_per_day = 10800
max_duration = "2s"
TOML
}
endurance "$e1" "$work/e1.img"
"$bin" phase run wear --config.file="$work/endurance.toml" >/dev/null 2>&1 || true
[[ -f $work/estate/endurance/wear.progress ]] || fail "9: no progress file after a cut-short run"
endurance "$e2" "$work/e2.img"
e2_sha=$(sha256sum <"$work/e2.img")
identity() { stat -c "file %Hd:%Ld inode %i ($1)" "$1"; }  # as the refusal names a file
refused "$work/endurance.toml" wear "wear.progress is the progress of a test on $(identity "$work/e1.img") [0B, 64MiB), and target wear now reaches $(identity "$work/e2.img") [0B, 64MiB) ($e2 is $work/e2.img from 0B)"
[[ $(sha256sum <"$work/e2.img") == "$e2_sha" ]] || fail "9: the other device was written"
pass "9: an endurance test's progress is refused on another device"
rm "$work/estate/endurance/wear.progress"
"$bin" phase run wear --config.file="$work/endurance.toml" >/dev/null 2>&1 || true
[[ $(sha256sum <"$work/e2.img") != "$e2_sha" ]] || fail "9: control: a new test did not write $e2"
python3 -c 'import json,sys; assert json.load(open(sys.argv[1]))["storage"][0]["path"] == sys.argv[2]' \
  "$work/estate/endurance/wear.progress" "$work/e2.img" ||
  fail "9: control: the new test's progress does not name $work/e2.img"
pass "9: control: once its progress is removed, a new test runs on the new device and records it"
