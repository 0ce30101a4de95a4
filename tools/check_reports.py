"""Parses the reports `posenc validate --json --junit --html` wrote for the fp32-angles example
plugin (ctest validate.reports_parse) with real parsers, and checks they say what the run found.
Usage: check_reports.py PREFIX   (reads PREFIX.json, PREFIX.xml, PREFIX.html)"""
import html.parser
import json
import sys
import xml.etree.ElementTree as ET

prefix = sys.argv[1]
SVG = "{http://www.w3.org/2000/svg}"


def check(ok, what):
    if not ok:
        sys.exit("FAILED: " + what)


# JSON: one entry per implementation, every property with its status, the failures replayable.
with open(prefix + ".json", encoding="utf-8") as f:
    report = json.load(f)
impls = {i["impl"]: i for i in report["implementations"]}
check(set(impls) == {"rope/fp32_angles", "sinusoidal/fp32_angles"}, f"implementations {set(impls)}")
for impl in impls.values():
    check(impl["verdict"] == "FAIL", impl["impl"] + " verdict")
    statuses = [p["status"] for p in impl["properties"]]
    check(impl["failed"] == statuses.count("failed") > 0, impl["impl"] + " failed count")
    check(impl["passed"] == statuses.count("passed"), impl["impl"] + " passed count")
    for p in impl["properties"]:
        if p["status"] == "failed":
            check("--reproduce" in p["replay"] and p["reproduce"], p["property"] + " replay")
    # the examples declare f32 only: 25 bands [0, 1] ... [2^23, 2^24] of it
    check([b["dtype"] for b in impl["error_by_position"]] == ["f32"] * 25, impl["impl"] + " bands")
rope = {p["property"]: p for p in impls["rope/fp32_angles"]["properties"]}
check(rope["rope.differential"]["status"] == "failed", "rope.differential not failed in JSON")

# JUnit: one suite per implementation, one case per property, failures where JSON has them.
root = ET.parse(prefix + ".xml").getroot()
check(root.tag == "testsuites", "JUnit root " + root.tag)
suites = root.findall("testsuite")
check({s.get("name") for s in suites} == set(impls), "JUnit suites")
failures = sum(len(s.findall("testcase/failure")) for s in suites)
check(failures == int(root.get("failures")) == sum(i["failed"] for i in impls.values()),
      "JUnit failure count")
check(int(root.get("tests")) == sum(len(s.findall("testcase")) for s in suites), "JUnit tests")


# HTML: well formed as HTML; each inline SVG chart is XML with one point per position band and
# the implementation's bound as a line.
class Collect(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.open, self.tags = [], []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)

    def handle_endtag(self, tag):
        self.tags.append("/" + tag)


with open(prefix + ".html", encoding="utf-8") as f:
    page = f.read()
collect = Collect()
collect.feed(page)
collect.close()
for tag in ("html", "body", "table", "svg"):
    check(collect.tags.count(tag) == collect.tags.count("/" + tag) > 0, "HTML <" + tag + ">")
charts = []
start = 0
while (begin := page.find("<svg", start)) >= 0:
    end = page.index("</svg>", begin) + len("</svg>")
    charts.append(ET.fromstring(page[begin:end]))
    start = end
check(len(charts) == 2, f"{len(charts)} charts")
for chart in charts:
    check(len(chart.findall(SVG + "circle")) == 25, "points per chart")
    check(any(line.get("stroke-dasharray") for line in chart.findall(SVG + "line")), "bound line")
print(f"reports parse: {len(impls)} implementations, {failures} failures, {len(charts)} charts")
