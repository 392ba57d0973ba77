# SPDX-FileCopyrightText: 2026 tierpool contributors
# SPDX-License-Identifier: Apache-2.0
"""check_html.py REPORT.html — the suite report's page is balanced HTML: every element
opened is closed in order (void elements aside; SVG's self-closed ones count as closed),
nothing is left open, no external resource is referenced, and it parses as XML. Exit 1 naming the first
problem. Used by tests/data/suite/check_report.cmake."""
import sys
import xml.etree.ElementTree as ET
from html.parser import HTMLParser

VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}


class Balance(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.stack = []
        self.counts = {}
        self.problems = []

    def handle_starttag(self, tag, attrs):
        self.counts[tag] = self.counts.get(tag, 0) + 1
        for name, value in attrs:
            if name in ("src", "href") and value and not value.startswith("#"):
                self.problems.append(f"line {self.getpos()[0]}: <{tag} {name}={value!r}> is an external resource")
        if tag not in VOID:
            self.stack.append((tag, self.getpos()[0]))

    def handle_startendtag(self, tag, attrs):
        self.counts[tag] = self.counts.get(tag, 0) + 1

    def handle_endtag(self, tag):
        if not self.stack or self.stack[-1][0] != tag:
            top = self.stack[-1] if self.stack else ("nothing", 0)
            self.problems.append(f"line {self.getpos()[0]}: </{tag}> closes <{top[0]}> of line {top[1]}")
            return
        self.stack.pop()


def main():
    p = Balance()
    with open(sys.argv[1], encoding="utf-8") as f:
        p.feed(f.read())
    p.close()
    if p.stack:
        p.problems.append("left open: " + ", ".join(f"<{t}> of line {n}" for t, n in p.stack))
    if p.problems:
        print("\n".join(p.problems[:10]))
        return 1
    try:  # stricter still: the page is well-formed XML (attributes quoted, entities known)
        ET.parse(sys.argv[1])
    except ET.ParseError as e:
        print(f"not well-formed XML: {e}")
        return 1
    print("balanced: " + ", ".join(f"{p.counts.get(t, 0)} <{t}>" for t in ("svg", "polyline", "table", "tr", "section")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
