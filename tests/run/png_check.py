#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Checks that a Chromium screenshot is a real picture, not a blank page.

usage: png_check.py PNG NAME WIDTH HEIGHT [ROWS]

The PNG must be WIDTH x HEIGHT, 8-bit RGB(A), and its first ROWS rows
(default: all) must not be one colour (> 97 %) and must hold at least six
colours that each cover a visible area. Decoding is pure Python (zlib and
the PNG filters), so ROWS keeps a tall page's check short.
"""
import struct
import sys
import zlib


def die(name, message):
    print(f"FAIL: {name}: screenshot {message}", file=sys.stderr)
    sys.exit(1)


def main():
    path, name, want_w, want_h = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    data = open(path, "rb").read()
    if len(data) < 20000:
        die(name, f"is only {len(data)} bytes")
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        die(name, "is not a PNG")
    pos, idat, ihdr = 8, b"", None
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        chunk = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            ihdr = struct.unpack(">IIBBBBB", chunk)
        if kind == b"IDAT":
            idat += chunk
        pos += 12 + length
    w, h, depth, ctype = ihdr[:4]
    if (w, h) != (want_w, want_h):
        die(name, f"is {w}x{h}, not {want_w}x{want_h}")
    if depth != 8 or ctype not in (2, 6):
        die(name, f"has an unexpected format (depth {depth}, colour type {ctype})")
    rows_wanted = min(h, int(sys.argv[5])) if len(sys.argv) > 5 else h
    bpp = 3 if ctype == 2 else 4
    stride = w * bpp
    raw = zlib.decompressobj().decompress(idat, rows_wanted * (stride + 1))
    rows, prev, i = [], bytearray(stride), 0
    for _ in range(rows_wanted):
        f = raw[i]
        line = bytearray(raw[i + 1:i + 1 + stride])
        i += 1 + stride
        for x in range(stride):
            a = line[x - bpp] if x >= bpp else 0
            b = prev[x]
            c = prev[x - bpp] if x >= bpp else 0
            if f == 1:
                line[x] = (line[x] + a) & 255
            elif f == 2:
                line[x] = (line[x] + b) & 255
            elif f == 3:
                line[x] = (line[x] + (a + b) // 2) & 255
            elif f == 4:
                pa, pb, pc = abs(b - c), abs(a - c), abs(a + b - 2 * c)
                pr = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
                line[x] = (line[x] + pr) & 255
        rows.append(bytes(line))
        prev = line
    colours = {}
    for y in range(0, rows_wanted, 3):
        line = rows[y]
        for x in range(0, w, 3):
            px = line[x * bpp:x * bpp + 3]
            colours[px] = colours.get(px, 0) + 1
    total = sum(colours.values())
    top = max(colours.values())
    # Distinct colours that cover a visible area (not just anti-aliasing).
    solid = [c for c, n in colours.items() if n >= 20]
    if top / total > 0.97:
        die(name, f"is {100 * top / total:.1f}% one colour (blank?)")
    if len(solid) < 6:
        die(name, f"has only {len(solid)} distinct colours")
    print(f"ok: {name}: screenshot {w}x{h}, {len(data)} bytes, {len(solid)} colours in its first "
          f"{rows_wanted} rows")


if __name__ == "__main__":
    main()
