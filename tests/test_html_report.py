#!/usr/bin/env python3
"""`flashio report --html` makes a page that a browser draws: every figure has marks, no script error.

Run: python3 tests/test_html_report.py --flashio build/flashio [--chromium /usr/bin/chromium]
                                       [--screenshot page.png] [--keep page.html]

Writes the page for committed result files of two GPUs (H100 with counters and its SDPA peers, H200),
then:
  - the page is self-contained: no <link>, no src= or href= that leaves the page, no url(...),
    no http(s) address but the SVG namespace;
  - headless Chromium loads it (--dump-dom) with a window.onerror and a console.error hook
    written into the page first, and a script at the end that clicks a legend entry; the DOM it
    dumps must hold no recorded error, a legend click that hid its series, and every
    <svg class="figure"> must hold drawn marks (a <path> or <circle> in its g.marks);
  - Chromium's own log (--enable-logging=stderr) must hold no "Uncaught" or console error;
  - the safe-write contract: an existing output without --force, the output equal to an input,
    a missing input and a truncated input exit 2 with one line on stderr and leave no file.
Without Chromium the test is skipped (exit 77), except under CI (CI=true), where it fails:
scripts/setup.sh --test installs Debian's `chromium`. Exits 1 on a failure.
"""
from __future__ import annotations

import argparse
import html.parser
import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FILES = [os.path.join(ROOT, "results", f) for f in
         ("nvidia-h100-fa2.json", "nvidia-h100-fa2-sdpa.json", "nvidia-h200-fa2.json")]
SECTIONS = ("tflops", "speedup-standard", "speedup-peers", "memory", "bytes", "gpus", "tables")
SKIP = 77

# Written first into <head>: errors and console errors land in the DOM that --dump-dom prints.
HOOK = """<script>
(function () {
  function note(kind, text) {
    var root = document.documentElement;
    var prev = root.getAttribute('data-js-errors') || '';
    root.setAttribute('data-js-errors', prev + kind + ': ' + text + ' | ');
  }
  window.addEventListener('error', function (e) { note('error', e.message); });
  window.addEventListener('unhandledrejection', function (e) { note('rejection', String(e.reason)); });
  var orig = console.error;
  console.error = function () { note('console.error', Array.prototype.join.call(arguments, ' ')); orig.apply(console, arguments); };
})();
</script>"""
# Appended at the end of <body>, after the page's own script: a legend click must hide its series.
PROBE = """<script>
(function () {
  var item = document.querySelector('svg.figure .legend-item');
  if (!item) { document.documentElement.setAttribute('data-legend', 'no legend'); return; }
  item.dispatchEvent(new MouseEvent('click', {bubbles: true}));
  var svg = item.closest('svg');
  var hidden = svg.querySelector('.series.off[data-series="' + item.getAttribute('data-series') + '"]');
  document.documentElement.setAttribute('data-legend', hidden ? 'toggles' : 'does nothing');
  item.dispatchEvent(new MouseEvent('click', {bubbles: true}));
})();
</script>"""


class Figures(html.parser.HTMLParser):
    """Per <svg class="figure">: its title and the <path>/<circle> elements inside its g.marks."""

    def __init__(self):
        super().__init__()
        self.figures = []  # [title, marks]
        self.stack = []  # open elements inside the current figure: (tag, is_marks)
        self.in_title = False
        self.root_attrs = {}

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "html":
            self.root_attrs = a
        if tag == "svg" and "figure" in (a.get("class") or "").split():
            self.figures.append(["", 0])
            self.stack = [("svg", False)]
            return
        if not self.stack:
            return
        in_marks = any(m for _, m in self.stack)
        if in_marks and tag in ("path", "circle"):
            self.figures[-1][1] += 1
        if tag == "title" and len(self.stack) == 1:
            self.in_title = True
        self.stack.append((tag, tag == "g" and "marks" in (a.get("class") or "").split()))

    def handle_startendtag(self, tag, attrs):
        self.handle_starttag(tag, attrs)
        if self.stack and self.stack[-1][0] == tag:
            self.stack.pop()

    def handle_endtag(self, tag):
        if tag == "title":
            self.in_title = False
        if self.stack:
            while self.stack and self.stack[-1][0] != tag:
                self.stack.pop()
            if self.stack:
                self.stack.pop()

    def handle_data(self, data):
        if self.in_title and self.figures:
            self.figures[-1][0] += data


def find_chromium(given):
    for c in ([given] if given else []) + ["chromium", "/usr/bin/chromium", "chromium-browser", "google-chrome"]:
        p = shutil.which(c) if not os.path.isabs(c) else (c if os.access(c, os.X_OK) else None)
        if p:
            return p
    return None


def chromium_args(chromium, profile):
    return [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
            "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-extensions",
            "--disable-default-apps", f"--user-data-dir={profile}", "--enable-logging=stderr", "--v=0"]


def check_self_contained(page, failures):
    if re.search(r"<link\b", page, re.I):
        failures.append("the page has a <link> element")
    for m in re.finditer(r"\b(src|href)\s*=\s*\"([^\"]*)\"", page):
        if not m.group(2).startswith("#"):
            failures.append(f"the page refers outside itself: {m.group(0)}")
    if re.search(r"url\(", page):
        failures.append("the page has a url(...)")
    for m in re.finditer(r"https?://[^\s\"'<>]+", page):
        if m.group(0) != "http://www.w3.org/2000/svg":
            failures.append(f"the page names an address: {m.group(0)}")


def check_refusals(flashio, tmp, failures):
    def one(label, argv, code, out):
        r = subprocess.run([flashio, *argv], capture_output=True, text=True)
        lines = r.stderr.strip().splitlines()
        if r.returncode != code or len(lines) != 1:
            failures.append(f"{label}: exit {r.returncode} (want {code}), stderr {r.stderr!r}")
        if out and os.path.exists(out):
            failures.append(f"{label}: left {out}")
        left = [f for f in os.listdir(os.path.dirname(out) or ".") if f.startswith(".") and ".html." in f] if out else []
        if left:
            failures.append(f"{label}: left temporary files {left}")

    small = os.path.join(ROOT, "results", "nvidia-h100-dsweep.json")
    d = os.path.join(tmp, "refusals")
    os.makedirs(d)
    existing = os.path.join(d, "existing.html")
    with open(existing, "w") as f:
        f.write("mine\n")
    r = subprocess.run([flashio, "report", small, "--html", existing], capture_output=True, text=True)
    if r.returncode != 2 or open(existing).read() != "mine\n":
        failures.append(f"an existing output without --force: exit {r.returncode}, or the file changed")
    r = subprocess.run([flashio, "report", small, "--html", existing, "--force"], capture_output=True, text=True)
    if r.returncode != 0 or not open(existing).read().startswith("<!DOCTYPE html>"):
        failures.append(f"--force: exit {r.returncode} {r.stderr!r}, or the file was not replaced")
    copy = os.path.join(d, "input.json")
    shutil.copy(small, copy)
    before = open(copy, "rb").read()
    r = subprocess.run([flashio, "report", copy, "--html", copy, "--force"], capture_output=True, text=True)
    if r.returncode != 2 or open(copy, "rb").read() != before:
        failures.append(f"the output equal to an input: exit {r.returncode}, or the input changed")
    out = os.path.join(d, "out.html")
    one("a missing input", ["report", os.path.join(d, "missing.json"), "--html", out], 2, out)
    truncated = os.path.join(d, "truncated.json")
    with open(truncated, "wb") as f:
        f.write(before[: len(before) // 2])
    one("a truncated input", ["report", truncated, "--html", out], 2, out)
    foreign = os.path.join(d, "foreign.json")
    with open(foreign, "w") as f:
        f.write('{"hello": "world"}\n')
    one("a foreign JSON file", ["report", foreign, "--html", out], 2, out)
    one("an output in a missing folder", ["report", small, "--html", os.path.join(d, "no", "out.html")], 2, None)
    one("--html with --json", ["report", small, "--html", out, "--json"], 2, out)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--flashio", required=True)
    ap.add_argument("--chromium", default=None)
    ap.add_argument("--screenshot", default=None, help="also save a PNG of the page here")
    ap.add_argument("--keep", default=None, help="also copy the page here")
    a = ap.parse_args()
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        page_path = os.path.join(tmp, "report.html")
        r = subprocess.run([a.flashio, "report", *FILES, "--html", page_path], capture_output=True, text=True)
        if r.returncode != 0:
            print(f"FAIL: flashio report --html: exit {r.returncode}: {r.stderr}")
            return 1
        if r.stdout:
            failures.append(f"report --html printed to stdout: {r.stdout[:200]!r}")
        page = open(page_path, encoding="utf-8").read()
        if a.keep:
            shutil.copy(page_path, a.keep)
        check_self_contained(page, failures)
        for s in SECTIONS:
            if f'<section id="{s}">' not in page:
                failures.append(f"no section {s}")
        static = Figures()
        static.feed(page)
        if len(static.figures) < 20:
            failures.append(f"only {len(static.figures)} figures in the page")
        check_refusals(a.flashio, tmp, failures)

        chromium = find_chromium(a.chromium)
        if not chromium:
            if os.environ.get("CI", "").lower() in ("true", "1", "yes"):
                print("FAIL: no chromium (scripts/setup.sh --test installs Debian's chromium); CI=true: not skipped")
                return 1
            print("SKIP: no chromium on PATH (apt-get install chromium); the page was checked without a browser")
            for f in failures:
                print("FAIL:", f)
            return 1 if failures else SKIP
        probed = os.path.join(tmp, "probed.html")
        with open(probed, "w", encoding="utf-8") as f:
            f.write(page.replace("<head>", "<head>\n" + HOOK, 1).replace("</body>", PROBE + "\n</body>", 1))
        profile = os.path.join(tmp, "profile")
        r = subprocess.run(chromium_args(chromium, profile) + ["--dump-dom", "file://" + probed],
                           capture_output=True, text=True, timeout=120)
        if r.returncode != 0 or "<html" not in r.stdout:
            failures.append(f"chromium --dump-dom: exit {r.returncode}: {r.stderr[-2000:]}")
        else:
            dom = Figures()
            dom.feed(r.stdout)
            errors = dom.root_attrs.get("data-js-errors")
            if errors:
                failures.append(f"script errors in the page: {errors}")
            if dom.root_attrs.get("data-legend") != "toggles":
                failures.append(f"a legend click: {dom.root_attrs.get('data-legend')}")
            if len(dom.figures) != len(static.figures):
                failures.append(f"chromium drew {len(dom.figures)} figures of {len(static.figures)}")
            for title, marks in dom.figures:
                if marks == 0:
                    failures.append(f"an empty figure: {title.strip()!r}")
            for line in r.stderr.splitlines():
                if "Uncaught" in line or ("CONSOLE" in line and "error" in line.lower()):
                    failures.append(f"chromium's log: {line.strip()}")
            print(f"chromium drew {len(dom.figures)} figures, each with marks "
                  f"({sum(m for _, m in dom.figures)} paths and circles)")
        if a.screenshot:
            r = subprocess.run(chromium_args(chromium, profile) + ["--hide-scrollbars", "--window-size=1300,2400",
                                                                    f"--screenshot={os.path.abspath(a.screenshot)}",
                                                                    "file://" + page_path],
                               capture_output=True, text=True, timeout=120)
            if r.returncode != 0:
                failures.append(f"chromium --screenshot: exit {r.returncode}: {r.stderr[-2000:]}")
    for f in failures:
        print("FAIL:", f)
    if not failures:
        print("ok: self-contained page, figures drawn, no script error, refusals exit 2 with nothing written")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
