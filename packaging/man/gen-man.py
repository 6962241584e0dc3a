#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Generates drivewatch(1) and drivewatch.toml(5) from their one source each.

  drivewatch(1)       from the built binary's `--help` (UsageText() in
                      exporter/commands/cli.cc) and `--version`, plus the hand-written
                      sections in drivewatch.1.extra (FILES, SIGNALS, ...).
  drivewatch.toml(5)  from the config schema (config/schema.cc and the
                      phase kinds' keys in config/phase_kinds.h), as the
                      build's dw_config_schema writes it: every table and
                      key, its doc and its default; and from the example
                      config, config/drivewatch.toml, the opening comment
                      about the file as a whole. The example's comments
                      are the schema's docs (tests/unit/config checks that).

Nothing here restates a flag or a key, so the pages cannot drift from
--help or from the config. tests/package/man_test.sh checks both ways.

usage: gen-man.py --binary BIN --schema JSON --config TOML
                  --extra drivewatch.1.extra --date YYYY-MM-DD --outdir DIR
Writes DIR/drivewatch.1, DIR/drivewatch.toml.5 and their .gz (gzip -9n
equivalent: no name, mtime 0, so the output is reproducible).
"""

import argparse
import gzip
import json
import os
import re
import subprocess
import sys

# ---------------------------------------------------------------- roff helpers


def esc(text):
    """Escapes plain text for roff: backslashes, minus signs, leading
    control characters."""
    text = text.replace("\\", "\\e")
    text = text.replace("-", "\\-")
    # A line starting with . or ' would be a request.
    text = re.sub(r"^([.'])", r"\\&\1", text, flags=re.M)
    return text


def text_lines(text):
    """Escaped text as roff lines (one input line per source line)."""
    return "\n".join(esc(line.strip()) for line in text.splitlines()
                     if line.strip())


# Placeholders in --help are upper case words: FILE, SERIAL, NAME, ...
_PLACEHOLDER = re.compile(r"\b([A-Z][A-Z_]+)\b")


def fmt_usage(text):
    """Formats a synopsis fragment: flags and subcommands bold,
    placeholders italic."""
    out = []
    for token in re.split(r"(\s+)", text):
        if not token or token.isspace():
            out.append(token)
            continue
        m = re.match(r"^(\[?)(--?[a-z][a-z.\-]*)(=?)(.*?)(\]?)$", token)
        if m:
            pre, flag, eq, val, post = m.groups()
            val = _PLACEHOLDER.sub(r"\\fI\1\\fR", esc(val))
            out.append(f"{pre}\\fB{esc(flag)}\\fR{eq}{val}{post}")
        elif _PLACEHOLDER.fullmatch(token.strip("[]")):
            out.append(_PLACEHOLDER.sub(r"\\fI\1\\fR", esc(token)))
        elif re.fullmatch(r"[a-z][a-z\-]*", token):
            out.append(f"\\fB{esc(token)}\\fR")
        else:
            out.append(_PLACEHOLDER.sub(r"\\fI\1\\fR", esc(token)))
    return "".join(out)


# ------------------------------------------------------------- drivewatch(1)


def parse_help(help_text):
    """Splits `drivewatch --help` into usage forms, description, flags and
    the exit status line. Layout (see UsageText() in exporter/commands/cli.cc):

      usage: drivewatch SYNOPSIS        DESCRIPTION      <- col 43
             drivewatch SYNOPSIS
                        CONTINUATION                     <- col < 43
                                        DESCRIPTION
      <blank>
      DESCRIPTION PARAGRAPH
      <blank>
      flags:
        --flag=VALUE        DESCRIPTION                  <- col 30
                            DESCRIPTION
      <blank>
      exit status: ...
    """
    blocks = re.split(r"\n\s*\n", help_text.strip("\n"))
    if len(blocks) < 4 or not blocks[0].startswith("usage: "):
        sys.exit("gen-man.py: --help output has an unexpected layout")
    usage, description, flags, rest = blocks[0], blocks[1], blocks[2], blocks[3:]

    desc_col = None
    forms = []  # [synopsis, description]
    for line in usage.splitlines():
        if line.startswith("usage: "):
            line = " " * 7 + line[7:]
        indent = len(line) - len(line.lstrip())
        body = line.strip()
        if indent == 7 and body.startswith("drivewatch"):
            parts = re.split(r"\s{2,}", body, maxsplit=1)
            forms.append([parts[0], parts[1] if len(parts) > 1 else ""])
            if len(parts) > 1:
                desc_col = line.index(parts[1])
        elif not forms:
            sys.exit(f"gen-man.py: usage line before any form: {line!r}")
        elif desc_col is not None and indent >= desc_col:
            forms[-1][1] = (forms[-1][1] + " " + body).strip()
        else:
            forms[-1][0] += " " + body

    flag_lines = flags.splitlines()
    if flag_lines[0].strip() != "flags:":
        sys.exit("gen-man.py: expected a 'flags:' block in --help")
    options = []  # [[names...], synopsis, description]
    for line in flag_lines[1:]:
        indent = len(line) - len(line.lstrip())
        body = line.strip()
        if indent <= 4 and body.startswith("-"):
            parts = re.split(r"\s{2,}", body, maxsplit=1)
            options.append([parts[0], parts[1] if len(parts) > 1 else ""])
        elif options:
            options[-1][1] = (options[-1][1] + " " + body).strip()
        else:
            sys.exit(f"gen-man.py: flag description before any flag: {line!r}")

    exit_status = " ".join(b.strip() for b in rest)
    return forms, description, options, exit_status


def gen_page1(help_text, version_text, extra, date):
    forms, description, options, exit_status = parse_help(help_text)
    version = version_text.split()[1] if version_text.split() else ""
    out = [
        '.\\" Generated by packaging/man/gen-man.py from `drivewatch --help`',
        '.\\" and packaging/man/drivewatch.1.extra. Do not edit.',
        f'.TH DRIVEWATCH 1 "{date}" "drivewatch {esc(version)}" "User Commands"',
        ".SH NAME",
        "drivewatch \\- watch NVMe drives age and export Prometheus metrics",
        ".SH SYNOPSIS",
        ".ad l",
        ".nh",
    ]
    for i, (syn, _) in enumerate(forms):
        if i:
            out.append(".br")
        out.append(fmt_usage(syn))
    out += [".SH DESCRIPTION", text_lines(description)]
    extra_sections = re.split(r"^(?=\.SH )", extra, flags=re.M)
    # Paragraphs for DESCRIPTION come before the first .SH of the extra file.
    if extra_sections and not extra_sections[0].startswith(".SH"):
        head = "\n".join(l for l in extra_sections.pop(0).splitlines()
                         if not l.startswith('.\\"')).strip()
        if head:
            out.append(head)
    out.append(".SH COMMANDS")
    for syn, desc in forms:
        out += [".TP", fmt_usage(syn), text_lines(desc[0].upper() + desc[1:] + ".")]
    out.append(".SH OPTIONS")
    for syn, desc in options:
        names = [fmt_usage(n.strip()) for n in syn.split(",")]
        out += [".TP", ", ".join(names),
                text_lines(desc + ("" if desc.endswith(".") else "."))]
    out += [".SH EXIT STATUS"]
    m = re.match(r"exit status:\s*(.*)", exit_status)
    out.append(text_lines(m.group(1) if m else exit_status))
    for section in extra_sections:
        out.append(section.strip())
    out += [".SH VERSION", "This page describes the binary that reported:",
            ".PP", ".nf", esc(version_text.rstrip("\n")), ".fi"]
    return "\n".join(out) + "\n"


# ------------------------------------------------------- drivewatch.toml(5)

_TABLE = re.compile(r"^\[([a-z_.]+)\]\s*$")
_KEY = re.compile(r"^([a-z_]+)\s*=\s*(.*)$")


def parse_toml(toml_text):
    """The example config as: preamble comment, then tables, each with an
    intro comment and keys, each with the comment block above it and its
    default. Multi-line values (arrays of tables) are not used in the
    example; a value is one line."""
    preamble, tables, comment = [], [], []
    for raw in toml_text.splitlines():
        line = raw.rstrip()
        if line.startswith("#"):
            comment.append(line[2:] if line.startswith("# ") else line[1:])
        elif not line.strip():
            if not tables:
                preamble, comment = preamble + comment + [""], []
            else:
                comment.append("")
        elif (m := _TABLE.match(line)):
            if not tables:
                preamble, comment = preamble + comment, []
            tables.append({"name": m.group(1), "intro": comment, "keys": []})
            comment = []
        elif (m := _KEY.match(line)):
            if not tables:
                sys.exit(f"gen-man.py: key outside a table: {line!r}")
            tables[-1]["keys"].append(
                {"name": m.group(1), "default": m.group(2), "doc": comment})
            comment = []
        else:
            sys.exit(f"gen-man.py: cannot parse config line: {line!r}")
    return preamble, tables


def schema_tables(schema):
    """The schema's sections that are tables of their own (not elements of
    an array of tables), shaped as parse_toml() shapes the example's."""
    def lines(doc):
        return doc.split("\n") if doc else []
    return [{"name": s["path"], "intro": lines(s["doc"]),
             "keys": [{"name": k["name"], "default": k["default"],
                       "doc": lines(k["doc"])} for k in s["keys"]]}
            for s in schema["sections"] if not s["element"]]


def phase_keys_roff(schema):
    """The keys of [[aging.phases]] that belong to phase kinds: each once,
    with the kinds that take it and its doc line."""
    kinds = schema.get("phase_kinds", [])
    if not kinds:
        return []
    out = [".SS Phase kinds and their keys",
           "Besides name, kind, target, the schedule (interval, or window "
           "with weekdays) and max_duration, a phase takes the keys of its "
           "kind; a key of another kind is an error. The kinds:",
           ".IP",
           esc(", ".join(k["name"] + ("" if k["writes"] else " (reads only)")
                         for k in kinds)) + "."]
    for key in schema["phase_keys"]:
        name = key["name"]
        users = [k for k in kinds if name in k["keys"]]
        text = key["doc"] + " " + key["range"][0].upper() + key["range"][1:] + "."
        if key["required"]:
            text += " Required."
        else:
            # One default when every kind that takes the key agrees, else
            # each kind's; an unset optional is said so.
            shown = [(k["name"], k["keys"][name] or "unset") for k in users]
            if len({d for _, d in shown}) == 1:
                text += f" Default: {shown[0][1]}."
            else:
                text += " Default: " + ", ".join(f"{d} ({n})" for n, d in shown) + "."
        out += [".TP",
                f"\\fB{esc(name)}\\fR ({esc(', '.join(k['name'] for k in users))})",
                esc(text)]
        # An array of tables: each table's keys, indented under it.
        for field in key.get("fields", []):
            ftext = field["doc"] + " " + field["range"][0].upper() + field["range"][1:] + "."
            if field["required"]:
                ftext += " Required."
            else:
                ftext += " Default: " + (field["default"] or "unset") + "."
            out += [".RS", ".TP",
                    f"\\fB{esc(name)}.{esc(field['name'])}\\fR", esc(ftext), ".RE"]
    return out


def comment_to_roff(lines):
    """Comment lines to roff: prose is filled, blank comment lines are
    paragraph breaks, lines indented by 2 or more spaces (examples, lists)
    are kept as they are."""
    out, mode = [], None
    for line in lines:
        pre = bool(re.match(r"^ {2,}\S", line))
        if not line.strip():
            if mode == "nf":
                out.append(".fi")
            if out and out[-1] != ".IP":
                out.append(".IP")
            mode = None
            continue
        if pre and mode != "nf":
            out.append(".nf")
            mode = "nf"
        elif not pre and mode == "nf":
            out.append(".fi")
            mode = None
        out.append(esc(line.rstrip()) if pre else esc(line.strip()))
    if mode == "nf":
        out.append(".fi")
    while out and out[-1] == ".IP":
        out.pop()
    return out


def gen_page5(toml_text, schema, version, date):
    preamble, _ = parse_toml(toml_text)
    tables = schema_tables(schema)
    out = [
        '.\\" Generated by packaging/man/gen-man.py from the config schema',
        '.\\" and config/drivewatch.toml.',
        '.\\" Do not edit.',
        f'.TH DRIVEWATCH.TOML 5 "{date}" "drivewatch {esc(version)}" "File Formats"',
        ".SH NAME",
        "drivewatch.toml \\- drivewatch configuration file",
        ".ad l",
        ".nh",
        ".SH SYNOPSIS",
        "/etc/drivewatch/drivewatch.toml",
        ".SH DESCRIPTION",
        "drivewatch reads its configuration from the TOML file given with "
        "\\fB\\-\\-config.file\\fR; the Debian package's unit passes "
        "\\fI/etc/drivewatch/drivewatch.toml\\fR. Without the flag the "
        "built-in defaults apply. On SIGHUP the file is read again.",
    ]
    body = [l for l in preamble]
    # The preamble's first line is the file's title.
    if body and body[0].lower().startswith("drivewatch example configuration"):
        body = body[1:]
    out.append(".PP")
    out += [l.replace(".IP", ".PP") for l in comment_to_roff(body)]
    out += [".PP", "The tables and keys below are those of the example "
            "configuration installed as \\fI/etc/drivewatch/drivewatch.toml\\fR "
            "(and, in the source, \\fIconfig/drivewatch.toml\\fR); the value "
            "shown for each key is its built-in default."]
    out.append(".SH KEYS")
    for table in tables:
        out.append(f".SS [{esc(table['name'])}]")
        intro = comment_to_roff(table["intro"])
        if intro:
            out += [l.replace(".IP", ".PP") for l in intro]
        for key in table["keys"]:
            out += [".TP",
                    f"\\fB{esc(key['name'])}\\fR = {esc(key['default'])}"]
            out += comment_to_roff(key["doc"]) or [
                f"See [{esc(table['name'])}] above."]
    out += phase_keys_roff(schema)
    out += [
        ".SH FILES",
        ".TP", "\\fI/etc/drivewatch/drivewatch.toml\\fR",
        "The configuration read by the packaged service (a conffile).",
        ".TP", "\\fI/usr/share/doc/drivewatch/\\fR",
        "The documentation the comments above refer to (metrics.md, "
        "read\\-latency.md, aging.md, retention.md).",
        ".SH SEE ALSO",
        "\\fBdrivewatch\\fR(1)",
    ]
    return "\n".join(out) + "\n"


# ------------------------------------------------------------------ main


def write(path, text):
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    with open(path + ".gz", "wb") as raw:
        # filename="" and mtime=0: like gzip -9n, reproducible.
        with gzip.GzipFile(filename="", mode="wb", fileobj=raw,
                           compresslevel=9, mtime=0) as gz:
            gz.write(text.encode("utf-8"))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--binary", required=True)
    ap.add_argument("--schema", required=True)
    ap.add_argument("--config", required=True)
    ap.add_argument("--extra", required=True)
    ap.add_argument("--date", required=True)
    ap.add_argument("--outdir", required=True)
    a = ap.parse_args()

    env = dict(os.environ, LC_ALL="C")
    help_text = subprocess.run([a.binary, "--help"], check=True, text=True,
                               capture_output=True, env=env).stdout
    version_text = subprocess.run([a.binary, "--version"], check=True,
                                  text=True, capture_output=True,
                                  env=env).stdout
    with open(a.extra, encoding="utf-8") as f:
        extra = f.read()
    with open(a.config, encoding="utf-8") as f:
        toml_text = f.read()
    with open(a.schema, encoding="utf-8") as f:
        schema = json.load(f)
    version = version_text.split()[1]

    os.makedirs(a.outdir, exist_ok=True)
    write(os.path.join(a.outdir, "drivewatch.1"),
          gen_page1(help_text, version_text, extra, a.date))
    write(os.path.join(a.outdir, "drivewatch.toml.5"),
          gen_page5(toml_text, schema, version, a.date))


if __name__ == "__main__":
    main()
