#!/usr/bin/env python3
"""A real Prometheus (Debian's) scraping `gpudoctor serve` on loopback.

Three targets: a simulated GPU starved by its CPU (launch_overhead: GPU-Util 100 %, power under
20 %), a healthy 4-GPU job, and the starving GPU again as plain dcgm-exporter would show it (only
dcgm-exporter's default counters, no gpudoctor_* families). Checks through Prometheus' HTTP API
that the series arrive, that the busy-but-idle alert of deploy/prometheus/gpudoctor.rules.yml
fires for the starving GPU and never for the healthy ones (the rules' 5-minute windows shortened
to seconds), and that `diagnose --prometheus` gives each the verdict `diagnose` gives a recording
of the same scenario.

usage: prometheus_test.py GPUDOCTOR SOURCE_DIR WORK_DIR
"""

import http.server
import json
import os
import re
import shutil
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import (Processes, check, free_port, http_get, main, need_tool, query, run,  # noqa: E402
                    start_prometheus, start_serve, wait_for)

SPEED = 4  # simulated seconds per real second
DATA_SECONDS = 40  # real seconds of series before diagnosing
DEADLINE_S = 150

# dcgm-exporter's default counters (etc/default-counters.csv) that serve also exports.
DCGM_DEFAULTS = {
    "DCGM_FI_DEV_SM_CLOCK", "DCGM_FI_DEV_MEM_CLOCK", "DCGM_FI_DEV_GPU_TEMP",
    "DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "DCGM_FI_DEV_GPU_UTIL",
    "DCGM_FI_DEV_MEM_COPY_UTIL", "DCGM_FI_DEV_FB_USED", "DCGM_FI_PROF_GR_ENGINE_ACTIVE",
    "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "DCGM_FI_PROF_DRAM_ACTIVE", "DCGM_FI_PROF_PCIE_TX_BYTES",
    "DCGM_FI_PROF_PCIE_RX_BYTES",
}


def dcgm_exporter_view(text):
    """serve's text as dcgm-exporter with its default counters would show it: only those
    families, and free memory (what dcgm-exporter has) instead of the total."""
    out, totals, used = [], {}, {}
    for line in text.splitlines():
        if line.startswith("#"):
            name = line.split(" ")[2]
        else:
            name = re.split(r"[ {]", line, maxsplit=1)[0]
        if name == "DCGM_FI_DEV_FB_TOTAL" and not line.startswith("#"):
            labels, value = line[len(name):].rsplit(" ", 1)
            totals[labels] = float(value)
        if name in DCGM_DEFAULTS:
            out.append(line)
            if name == "DCGM_FI_DEV_FB_USED" and not line.startswith("#"):
                labels, value = line[len(name):].rsplit(" ", 1)
                used[labels] = float(value)
    out.append("# HELP DCGM_FI_DEV_FB_FREE Framebuffer memory free (in MiB).")
    out.append("# TYPE DCGM_FI_DEV_FB_FREE gauge")
    for labels, u in used.items():
        if labels in totals:
            out.append(f"DCGM_FI_DEV_FB_FREE{labels} {totals[labels] - u:g}")
    return "\n".join(out) + "\n"


class DcgmExporterStandIn:
    """An HTTP target that serves view(text) of a serve's /metrics (dcgm_exporter_view unless
    told otherwise)."""

    def __init__(self, upstream, view=dcgm_exporter_view):
        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802
                status, _, body = http_get(f"http://{upstream}/metrics")
                data = view(body.decode()).encode() if status == 200 else b""
                self.send_response(200 if status == 200 else 503)
                self.send_header("Content-Type", "text/plain; version=0.0.4")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.address = f"127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def shortened_rules(text):
    """The rules with their minutes turned into seconds, so a test sees them fire."""
    text = re.sub(r"\[(\d+)m\]", lambda m: f"[{int(m.group(1)) * 2}s]", text)
    return re.sub(r"for: (\d+)m", lambda m: f"for: {int(m.group(1)) * 2}s", text)




def verdicts(binary, args):
    r = run([binary, "diagnose", "--format", "json"] + args)
    check(r.returncode == 0, f"diagnose {' '.join(args)}: exit {r.returncode}: {r.stderr}")
    d = json.loads(r.stdout)
    if "runs" in d:  # --prometheus: one run per host, and each selector here picks one host
        check(len(d["runs"]) == 1, f"diagnose {' '.join(args)}: {len(d['runs'])} runs")
        d = d["runs"][0]["diagnosis"]
    return d["verdict"], [g["verdict"] for g in d["gpus"]], d


def body():
    binary, source, work = sys.argv[1], sys.argv[2], sys.argv[3]
    deadline = time.time() + DEADLINE_S
    prometheus = need_tool("prometheus")
    promtool = need_tool("promtool")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)

    rules_src = os.path.join(source, "deploy/prometheus/gpudoctor.rules.yml")
    r = run([promtool, "check", "rules", rules_src])
    check(r.returncode == 0, f"promtool check rules: {r.stdout}{r.stderr}")
    with open(rules_src) as f, open(os.path.join(work, "rules.yml"), "w") as out:
        out.write(shortened_rules(f.read()))

    # What `diagnose` says of recordings of the same scenarios (simulated, faster than real time).
    expected = {}
    for scenario in ("launch_overhead", "healthy"):
        db = os.path.join(work, f"{scenario}.db")
        r = run([binary, "sim", f"{scenario},duration=3m,interval=1s", "-o", db])
        check(r.returncode == 0, f"sim {scenario}: {r.stderr}")
        expected[scenario] = verdicts(binary, [db])[:2]
    check(expected["launch_overhead"][0] == "launch_overhead",
          f"the recording's verdict: {expected['launch_overhead']}")
    check(expected["healthy"][0] == "healthy", f"the recording's verdict: {expected['healthy']}")

    with Processes() as procs:
        common_args = ["-i", f"{1000 // SPEED}ms"]
        _, starving = start_serve(procs, binary, work, "starving",
                                  ["--source", f"sim:launch_overhead,speed={SPEED}",
                                   "--hostname", "starving-node"] + common_args)
        _, healthy = start_serve(procs, binary, work, "healthy",
                                 ["--source", f"sim:healthy,speed={SPEED}",
                                  "--hostname", "healthy-node"] + common_args)
        dcgm = DcgmExporterStandIn(starving)
        try:
            port = free_port()
            prom = f"http://127.0.0.1:{port}"
            with open(os.path.join(work, "prometheus.yml"), "w") as f:
                f.write(f"""global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files: [rules.yml]
scrape_configs:
  - job_name: starving
    static_configs: [{{targets: ['{starving}']}}]
  - job_name: healthy
    static_configs: [{{targets: ['{healthy}']}}]
  - job_name: dcgm
    static_configs: [{{targets: ['{dcgm.address}']}}]
""")
            p, _ = start_prometheus(procs, prometheus, work, port, deadline)
            started = time.time()

            # The series arrive, under dcgm-exporter's names and gpudoctor's.
            wait_for("all three targets up", lambda: len(
                [s for s in query(prom, "up == 1")]) == 3, deadline)
            wait_for("the series", lambda: query(prom, 'DCGM_FI_DEV_GPU_UTIL{job="starving"}')
                     and len(query(prom, 'gpudoctor_efficiency_ratio{job="healthy"}')) == 4
                     and query(prom, 'DCGM_FI_DEV_FB_FREE{job="dcgm"}'), deadline)
            check(not query(prom, '{job="dcgm",__name__=~"gpudoctor_.*"}'),
                  "the dcgm-exporter stand-in leaks gpudoctor_* series")
            build = query(prom, "gpudoctor_build_info")
            check(len(build) == 2, f"gpudoctor_build_info: {build}")

            # The busy-but-idle alert fires for the starving GPU, never for the healthy ones.
            firing = wait_for("GpuBusyButIdle to fire for the starving GPU", lambda: query(
                prom, 'ALERTS{alertname="GpuBusyButIdle",alertstate="firing",job="starving"}'),
                deadline)
            print(f"GpuBusyButIdle fired {time.time() - started:.0f} s after Prometheus started: "
                  f"{firing[0]['metric']}")
            # Let more data arrive for the diagnosis, then look at the healthy job's history.
            left = DATA_SECONDS - (time.time() - started)
            if left > 0:
                time.sleep(left)
            ever = query(prom, 'max_over_time(ALERTS{alertname="GpuBusyButIdle",'
                               'job="healthy"}[10m])')
            check(not ever, f"GpuBusyButIdle was pending or firing for the healthy job: {ever}")
            busy_idle = query(prom, 'max_over_time(gpudoctor_busy_idle{job="healthy"}[10m])')
            check(len(busy_idle) == 4 and all(float(s["value"][1]) == 0 for s in busy_idle),
                  f"a healthy GPU was busy but idle: {busy_idle}")

            # diagnose --prometheus: the verdict of a recording of the same scenario, for
            # gpudoctor's metrics and for plain dcgm-exporter series alike.
            for job, scenario in (("starving", "launch_overhead"), ("dcgm", "launch_overhead"),
                                  ("healthy", "healthy")):
                v, per_gpu, d = verdicts(binary, ["--prometheus", prom, "--since", "5m",
                                                  "--selector", f'{{job="{job}"}}'])
                print(f"diagnose --prometheus {{job=\"{job}\"}}: {v} {per_gpu} "
                      f"({d['gpus'][0]['metrics'].get('samples')} samples per GPU)")
                check((v, per_gpu) == expected[scenario],
                      f"job {job}: diagnose --prometheus says {v} {per_gpu}, the recording of "
                      f"{scenario} says {expected[scenario]}")
                check(d["source"].startswith(f"prometheus {prom}"), d["source"])
            # Plain dcgm-exporter has no SM activity by default: said, not guessed.
            _, _, d = verdicts(binary, ["--prometheus", prom, "--since", "5m",
                                        "--selector", '{job="dcgm"}'])
            check(any("no SM activity" in l for l in d["limitations"]), d["limitations"])
            # A selector that matches nothing is an error that says so.
            r = run([binary, "diagnose", "--prometheus", prom, "--since", "5m",
                     "--selector", '{job="nope"}'])
            check(r.returncode == 1 and "no GPU series" in r.stderr, r.stderr)
        finally:
            dcgm.close()


if __name__ == "__main__":
    main(body)
