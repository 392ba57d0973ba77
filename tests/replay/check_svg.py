# SPDX-FileCopyrightText: 2026 tierpool contributors
# SPDX-License-Identifier: Apache-2.0
"""Parse the SVGs of `tierpool replay --plot-ideal F1 --plot F2` with a real XML parser
(xml.dom.minidom: a file that is not well-formed raises) and print what the CLI test
(cli.replay.plot_ideal_xml, tests/cli_tests.cmake) matches: the makespan / ideal plot's
series (how many, how many distinct labels), its reference lines' heights and the number
of points per series; then the --plot file's polylines."""
import sys
import xml.dom.minidom as minidom


def elements(doc, tag, cls):
    return [e for e in doc.getElementsByTagName(tag) if e.getAttribute("class") == cls]


ideal = minidom.parse(sys.argv[1])
series = elements(ideal, "g", "series")
labels = [e.getAttribute("data-series") for e in series]
refs = sorted(e.getAttribute("data-y") for e in elements(ideal, "line", "reference"))
points = sorted({len(e.getElementsByTagName("circle")) for e in series})
print("series", len(labels), len(set(labels)), "refs", " ".join(refs), "points", points)
plot = minidom.parse(sys.argv[2])
print("plot polylines", len(plot.getElementsByTagName("polyline")))
