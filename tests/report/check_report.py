#!/usr/bin/env python3
"""Opens gpudoctor HTML reports in headless Chromium (Debian's `chromium`): the page loads, its
script reports no error, every chart has data, the report opens with the time bar (its parts add
up to 100 %, drawn across the page) and the chart of every GPU's power (a line per GPU); a
screenshot of each goes to OUT_DIR.

usage: check_report.py GPUDOCTOR_BIN OUT_DIR
"""
import os
import re
import shutil
import subprocess
import sys


def chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


def main():
    binary, out = sys.argv[1], sys.argv[2]
    os.makedirs(out, exist_ok=True)
    browser = chromium()
    if browser is None:
        print("chromium not found: install it (scripts/install-deps.sh does)")
        return 1
    # name: (sim spec, GPUs, the share of each idle part of the bar (held, free) in percent:
    # (low, high) or None)
    cases = {
        "straggler": ("straggler,duration=5m,interval=1s", 4, None),
        # gpudoctor demo's mixed node: four GPUs work, two are held idle, two are free.
        "mixed": ("mixed,duration=4m,interval=1s", 8, (20, 30)),
        "seesaw": ("seesaw,duration=5m,interval=1s", 2, None),
        "thermal": ("thermal_throttle,duration=5m,interval=2s", 1, None),
    }
    failures = 0
    for name, (spec, gpus, idle_range) in cases.items():
        db = os.path.join(out, name + ".db")
        html = os.path.join(out, name + ".html")
        subprocess.run([binary, "sim", spec, "-o", db], check=True, capture_output=True)
        subprocess.run([binary, "report", db, "-o", html], check=True, capture_output=True)
        common = [browser, "--headless=new", "--no-sandbox", "--disable-gpu",
                  "--no-first-run", "--hide-scrollbars", "--disable-dev-shm-usage",
                  "--user-data-dir=" +
                  os.path.join(out, "profile-" + name)]
        dom = subprocess.run(common + ["--virtual-time-budget=3000", "--dump-dom",
                                       "file://" + os.path.abspath(html)],
                             capture_output=True, text=True, timeout=120)
        body = re.search(r"<body([^>]*)>", dom.stdout)
        attrs = dict(re.findall(r'data-([a-z-]+)="([^"]*)"', body.group(1))) if body else {}
        shot = os.path.join(out, name + ".png")
        subprocess.run(common + ["--window-size=1280,2400", "--screenshot=" + shot,
                                 "file://" + os.path.abspath(html)],
                       capture_output=True, timeout=120)
        problems = []
        if attrs.get("ready") != "1":
            problems.append("the page's script did not run (no data-ready)")
        if attrs.get("errors"):
            problems.append("script errors: " + attrs["errors"])
        charts = int(attrs.get("charts", "0"))
        with_data = int(attrs.get("charts-with-data", "0"))
        if charts == 0 or with_data != charts:
            problems.append("charts with data: %d of %d" % (with_data, charts))
        if int(attrs.get("bar-parts", "0")) < 1:
            problems.append("no time bar")
        elif abs(float(attrs.get("bar-pct", "0")) - 100) > 0.1:
            problems.append("the time bar's parts add up to %s %%" % attrs.get("bar-pct"))
        bar_width, page_width = int(attrs.get("bar-width", "0")), int(attrs.get("page-width", "0"))
        if bar_width < 0.95 * page_width or bar_width == 0:
            problems.append("the time bar is %d px wide on a %d px page" % (bar_width, page_width))
        if int(attrs.get("overlay-lines", "0")) < gpus:
            problems.append("%s lines on the chart of every GPU, for %d GPUs" % (
                attrs.get("overlay-lines", "0"), gpus))
        for part in ("idle", "idle_free") if idle_range else ():
            idle = re.search(r'data-part="%s" data-gpu-s="[0-9.]+" data-pct="([0-9.]+)"' % part,
                             dom.stdout)
            if not idle or not idle_range[0] <= float(idle.group(1)) <= idle_range[1]:
                problems.append("%s share %s %%, not in %s" % (
                    part, idle.group(1) if idle else "none", idle_range))
        if not os.path.exists(shot) or os.path.getsize(shot) < 10000:
            problems.append("no screenshot")
        print("%s: %d charts, %d with data, time bar %s parts (%s %%), %s lines overlaid, "
              "screenshot %s%s" % (
            name, charts, with_data, attrs.get("bar-parts"), attrs.get("bar-pct"),
            attrs.get("overlay-lines"), shot, "" if not problems else " -- " + "; ".join(problems)))
        failures += len(problems)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
