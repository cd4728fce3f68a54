#!/usr/bin/env python3
"""Measures what `gpudoctor serve` promises under hostile clients (docs/prometheus.md,
"Hardening"), on loopback only:

1. scrapes from 127.0.0.2 every second while 1,000 hostile connections from 127.0.0.1 (silent,
   slowloris, unread, reconnecting: tests/integration/serve_hardening_test.py's Hostile) are
   held; the scrape latency (median, worst) and serve's CPU meanwhile;
2. basic auth answer times with two users, one with a cost-5 hash (htpasswd -nbB's default) and
   one with a cost-10 hash: an unknown name, each known name with a wrong password (medians).

Usage: bench/serve_hardening_bench.py GPUDOCTOR [--seconds 30] [--auth-tries 25]
Prints a Markdown table for docs/prometheus.md."""
import argparse
import base64
import warnings
with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    import crypt  # libxcrypt's bcrypt, as serve uses; Python 3.11 (Debian 12) still has it
import http.client
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests",
                                "integration"))
from serve_hardening_test import Hostile, cpu_seconds  # noqa: E402
from common import Processes, start_serve  # noqa: E402

p = argparse.ArgumentParser()
p.add_argument("gpudoctor")
p.add_argument("--seconds", type=int, default=30)
p.add_argument("--auth-tries", type=int, default=25)
args = p.parse_args()
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 8192), hard))
work = tempfile.mkdtemp(prefix="gd-hardening-")
rows = []

with Processes() as procs:
    proc, addr = start_serve(procs, args.gpudoctor, work, "bench",
                             ["--source", "sim:mixed,speed=30", "-i", "500ms"])
    port = int(addr.rsplit(":", 1)[1])
    hostile = Hostile(port)
    t = threading.Thread(target=hostile.run, daemon=True)
    t.start()
    time.sleep(2)
    c0, w0 = cpu_seconds(proc.pid), time.time()
    latencies, failed = [], 0
    conn = None
    for i in range(args.seconds):
        t0 = time.time()
        try:
            if conn is None or i % 2:
                if conn is not None:
                    conn.close()
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5,
                                                  source_address=("127.0.0.2", 0))
            conn.request("GET", "/metrics")
            r = conn.getresponse()
            r.read()
            failed += r.status != 200
            latencies.append(time.time() - t0)
        except OSError:
            failed += 1
            conn = None
        time.sleep(max(0, 1 - (time.time() - t0)))
    cpu = (cpu_seconds(proc.pid) - c0) / (time.time() - w0)
    hostile.stop.set()
    t.join(10)
    rows.append(("scrapes under 1,000 hostile connections from one address",
                 f"{len(latencies)} of {args.seconds} answered ({failed} failed); median "
                 f"{statistics.median(latencies) * 1000:.1f} ms, worst "
                 f"{max(latencies) * 1000:.1f} ms; {hostile.opened} hostile connections opened, "
                 f"{hostile.dropped} closed by serve; serve's CPU {cpu * 100:.1f} % of a core"))

    cheap = crypt.crypt("cheap-secret", crypt.mksalt(crypt.METHOD_BLOWFISH, rounds=2 ** 5))
    dear = crypt.crypt("dear-secret", crypt.mksalt(crypt.METHOD_BLOWFISH, rounds=2 ** 10))
    web = os.path.join(work, "web.yml")
    with open(web, "w") as f:
        f.write(f"basic_auth_users:\n  cheap: '{cheap}'\n  dear: '{dear}'\n")
    _, auth_addr = start_serve(procs, args.gpudoctor, work, "auth",
                               ["--source", "sim:healthy", "--web-config", web])
    host, aport = auth_addr.rsplit(":", 1)

    def timed(user, password):
        token = base64.b64encode(f"{user}:{password}".encode()).decode()
        c = http.client.HTTPConnection(host, int(aport), timeout=10)
        t0 = time.time()
        c.request("GET", "/metrics", headers={"Authorization": f"Basic {token}"})
        r = c.getresponse()
        r.read()
        c.close()
        return r.status, time.time() - t0

    # Interleaved, so that whatever else the machine does falls on every case alike.
    cases = (("unknown name", "mallory"), ("known, cost-5 hash", "cheap"),
             ("known, cost-10 hash", "dear"))
    times = {label: [] for label, _ in cases}
    for i in range(args.auth_tries):
        for label, user in cases:
            status, took = timed(user, f"wrong-{i}")
            assert status == 401, status
            times[label].append(took)
    for label, _ in cases:
        t = times[label]
        rows.append((f"401 for a wrong password: {label}",
                     f"median {statistics.median(t) * 1000:.1f} ms "
                     f"(min {min(t) * 1000:.1f}, max {max(t) * 1000:.1f}, {len(t)} tries)"))

host_cpu = subprocess.run(["sh", "-c", "grep -m1 'model name' /proc/cpuinfo | cut -d: -f2"],
                          capture_output=True, text=True).stdout.strip()
print(f"Machine: {host_cpu}, {os.cpu_count()} cores; {time.strftime('%Y-%m-%d')}\n")
print("| what | measured |\n|---|---|")
for what, figure in rows:
    print(f"| {what} | {figure} |")
