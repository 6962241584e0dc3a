#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Host-side helper of the "retention" VM scenario (stdlib only).

The study block format is aging/retention/retention_block.h: every 4 KiB block starts
with "DWRETBLK", version, block size, study_id (u64 LE at 16), lba (u64 LE
at 24, byte offset / 4096 from the start of the device), write time, a
checksum over the block and a check over the header.

Subcommands:
  corrupt IMG OTHER_IMG STUDY_JSON OTHER_JSON OUT_JSON UNREADABLE_LBA IO_BLOCKS
      With the guest off: damage DWSN0001's backing image IMG (vmstudy)
      in known ways and write the verdicts the verify must find to OUT_JSON:
        wrong_content  3 blocks with one byte flipped (xor 0xff) at byte 17
                       (the study_id field), 1000 (the body) and 4095 (the
                       block's last byte): first_difference those bytes
        wrong_content  1 block zeroed: first_difference 0
        misplaced      block A copied over block B: at B, found_lba A
        stale          OTHER_IMG's block (study "other", same offset) at LBA
                       L copied over vmstudy's block L: at L, found_study
                       other's id
        unreadable     not done here: the host's blkdebug rule fails reads
                       of UNREADABLE_LBA; the verify reads IO_BLOCKS blocks
                       at a time and reads a failed read's blocks again one
                       by one, so exactly UNREADABLE_LBA is unreadable and
                       its IO_BLOCKS - 1 neighbours verify as intact
      Before writing, every block touched is checked to hold what the study
      says (magic, study id, its own LBA): the write really landed at
      LBA = offset / 4096 in the image.
  check STUDY_JSON EXPECTED_JSON
      Compare the study's last verify with OUT_JSON of `corrupt`: outcome,
      blocks checked, bad counts by class, and the ranges (class, LBAs and
      first_difference / found_lba / found_study). Prints the problems
      (nothing if all is well) and exits 1 if there are any.
  get FILE PATH...
      Values at dotted PATHs of the JSON in FILE (list indexes may be
      negative), one per line; objects and lists as JSON.
"""
import json
import struct
import sys

BLOCK = 4096
MAGIC = b"DWRETBLK"


def die(msg):
    print("retention.py: " + msg, file=sys.stderr)
    sys.exit(1)


def load(path):
    with open(path) as f:
        return json.load(f)


def read_block(f, lba):
    f.seek(lba * BLOCK)
    b = f.read(BLOCK)
    if len(b) != BLOCK:
        die("short read of LBA %d" % lba)
    return b


def write_block(f, lba, data):
    assert len(data) == BLOCK
    f.seek(lba * BLOCK)
    f.write(data)


def header(b):
    return b[:8], struct.unpack_from("<Q", b, 16)[0], struct.unpack_from("<Q", b, 24)[0]


def expect_block(b, study_id, lba, what):
    magic, sid, l = header(b)
    if magic != MAGIC or sid != study_id or l != lba:
        die("%s: LBA %d holds magic %r study %016x lba %d, expected %016x lba %d: the study is not "
            "where LBA = offset / 4096 says" % (what, lba, magic, sid, l, study_id, lba))


def cmd_corrupt(args):
    img, other_img, study_path, other_path, out = args[:5]
    unreadable, io_blocks = int(args[5]), int(args[6])
    study, other = load(study_path), load(other_path)
    sid = int(study["pattern"]["study_id"], 16)
    oid = int(other["pattern"]["study_id"], 16)
    first = study["region"]["offset"] // BLOCK
    n = study["region"]["length"] // BLOCK
    ofirst = other["region"]["offset"] // BLOCK
    on = other["region"]["length"] // BLOCK
    flips = [(first + 7, 17), (first + 20000, 1000), (first + n - 1, BLOCK - 1)]
    zero = first + 50000
    mis_from, mis_to = first + 30000, first + 40000
    stale = first + 500
    if not (ofirst <= stale < ofirst + on):
        die("stale LBA %d is outside study other's LBAs %d..%d" % (stale, ofirst, ofirst + on - 1))
    if not (first <= unreadable < first + n):
        die("unreadable LBA %d is outside the study" % unreadable)
    u0 = first + (unreadable - first) // io_blocks * io_blocks
    expected = []
    with open(img, "r+b") as f, open(other_img, "rb") as g:
        for lba, byte in flips:
            b = bytearray(read_block(f, lba))
            expect_block(b, sid, lba, "flip")
            b[byte] ^= 0xFF
            write_block(f, lba, bytes(b))
            expected.append({"class": "wrong_content", "first_lba": lba, "last_lba": lba,
                             "first_difference": byte, "how": "byte %d xor 0xff" % byte})
        expect_block(read_block(f, zero), sid, zero, "zero")
        write_block(f, zero, bytes(BLOCK))
        expected.append({"class": "wrong_content", "first_lba": zero, "last_lba": zero,
                         "first_difference": 0, "how": "zeroed"})
        src = read_block(f, mis_from)
        expect_block(src, sid, mis_from, "misplaced source")
        expect_block(read_block(f, mis_to), sid, mis_to, "misplaced target")
        write_block(f, mis_to, src)
        expected.append({"class": "misplaced", "first_lba": mis_to, "last_lba": mis_to,
                         "found_lba": mis_from, "how": "copy of LBA %d" % mis_from})
        ob = read_block(g, stale)
        expect_block(ob, oid, stale, "other study's block")
        expect_block(read_block(f, stale), sid, stale, "stale target")
        write_block(f, stale, ob)
        expected.append({"class": "stale", "first_lba": stale, "last_lba": stale,
                         "found_study": "%016x" % oid, "how": "study other's block %d" % stale})
        for lba in range(u0, u0 + io_blocks):
            expect_block(read_block(f, lba), sid, lba, "unreadable range")
        f.flush()
    expected.append({"class": "unreadable", "first_lba": unreadable, "last_lba": unreadable,
                     "how": "blkdebug read error at LBA %d (sector %d); the verify reads %d blocks "
                            "at a time, then the failed read's blocks one by one"
                            % (unreadable, unreadable * BLOCK // 512, io_blocks)})
    expected.sort(key=lambda r: r["first_lba"])
    counts = {"unreadable": 0, "wrong_content": 0, "misplaced": 0, "stale": 0}
    for r in expected:
        counts[r["class"]] += r["last_lba"] - r["first_lba"] + 1
    with open(out, "w") as f:
        json.dump({"study": study["study"], "study_id": study["pattern"]["study_id"],
                   "other_study_id": other["pattern"]["study_id"], "blocks": n,
                   "first_lba": first, "bad": counts, "ranges": expected}, f, indent=1)
        f.write("\n")
    for r in expected:
        print("%-13s LBA %d..%d  %s" % (r["class"], r["first_lba"], r["last_lba"], r["how"]))


DETAIL = {"wrong_content": "first_difference", "misplaced": "found_lba", "stale": "found_study"}


def cmd_check(args):
    study, exp = load(args[0]), load(args[1])
    problems = []
    verifies = study.get("verifies") or []
    if not verifies:
        print("no verify in the study (verifies is empty)")
        sys.exit(1)
    v = verifies[-1]
    if v.get("outcome") != "completed":
        problems.append("last verify outcome %r, expected completed" % v.get("outcome"))
    if v.get("blocks") != exp["blocks"] or v.get("checked") != exp["blocks"]:
        problems.append("blocks %r checked %r, expected %d" % (v.get("blocks"), v.get("checked"), exp["blocks"]))
    nbad = sum(exp["bad"].values())
    if v.get("ok") != exp["blocks"] - nbad:
        problems.append("ok %r, expected %d" % (v.get("ok"), exp["blocks"] - nbad))
    for k, want in exp["bad"].items():
        got = (v.get("bad") or {}).get(k)
        if got != want:
            problems.append("bad.%s = %r, expected %d" % (k, got, want))

    def key(r):
        d = DETAIL.get(r.get("class"))
        return (r.get("class"), r.get("first_lba"), r.get("last_lba"), d and r.get(d))

    got = sorted(key(r) for r in v.get("ranges") or [])
    want = sorted(key(r) for r in exp["ranges"])
    for k in want:
        if k not in got:
            problems.append("missing range %s" % (k,))
    for k in got:
        if k not in want:
            problems.append("unexpected range %s" % (k,))
    if v.get("ranges_truncated"):
        problems.append("ranges_truncated is set")
    for p in problems:
        print(p)
    sys.exit(1 if problems else 0)


def cmd_get(args):
    obj = load(args[0])
    for path in args[1:]:
        v = obj
        for part in path.split(".") if path else []:
            try:
                v = v[int(part)] if isinstance(v, list) else v[part]
            except (KeyError, IndexError, ValueError, TypeError):
                v = None
                break
        if v is None:
            print("")
        elif isinstance(v, (dict, list)):
            print(json.dumps(v, sort_keys=True))
        else:
            print(v)


def main():
    if len(sys.argv) < 2:
        die(__doc__)
    sub, args = sys.argv[1], sys.argv[2:]
    {"corrupt": cmd_corrupt, "check": cmd_check, "get": cmd_get}.get(
        sub, lambda a: die("unknown subcommand " + sub))(args)


if __name__ == "__main__":
    main()
