#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Assertions on the DOM headless Chromium built (`chromium --dump-dom`).

usage: dom_check.py DOM_FILE NAME PYTHON

PYTHON runs with:
  elements   every element as [tag, attrs (dict), text inside it]
  text       all visible text, whitespace collapsed
  by_class(tag, cls), by_id(id), within(element_list, tag, cls)
and raises AssertionError with a message on failure: the check prints
"FAIL: NAME: message" and exits 1. Used by tests/run/*report_test.sh.
"""
import sys
from html.parser import HTMLParser

VOID = ("meta", "br", "line", "rect", "path", "circle", "img", "link")


class Parser(HTMLParser):
    def __init__(self):
        super().__init__()
        self.elements, self.stack, self.texts = [], [], []

    def handle_starttag(self, tag, attrs):
        e = [tag, dict(attrs), "", []]  # the last: its descendants
        for parent in self.stack:
            parent[3].append(e)
        self.elements.append(e)
        if tag not in VOID:
            self.stack.append(e)

    def handle_startendtag(self, tag, attrs):
        e = [tag, dict(attrs), "", []]
        for parent in self.stack:
            parent[3].append(e)
        self.elements.append(e)

    def handle_endtag(self, tag):
        # Chromium writes </path> and </rect>: they close nothing pushed.
        if tag in VOID or all(e[0] != tag for e in self.stack):
            return
        while self.stack:
            if self.stack.pop()[0] == tag:
                break

    def handle_data(self, data):
        for e in self.stack:
            e[2] += data
        if not any(e[0] in ("style", "title") for e in self.stack):
            self.texts.append(data)


def main():
    raw = open(sys.argv[1], encoding="utf-8").read()
    p = Parser()
    p.feed(raw)
    elements = p.elements
    text = " ".join(" ".join(p.texts).split())

    def by_class(tag, cls, among=None):
        return [e for e in (elements if among is None else among)
                if e[0] == tag and cls in e[1].get("class", "").split()]

    def by_id(i):
        found = [e for e in elements if e[1].get("id") == i]
        assert found, f"no element with id {i}"
        return found[0]

    def within(element, tag, cls=None):
        return [e for e in element[3] if e[0] == tag and (cls is None or cls in e[1].get("class", "").split())]

    try:
        exec(sys.argv[3], {"elements": elements, "text": text, "by_class": by_class,
                           "by_id": by_id, "within": within})
    except AssertionError as e:
        print(f"FAIL: {sys.argv[2]}: {e}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
