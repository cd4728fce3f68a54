#!/usr/bin/env python3
"""Measures `gpudoctor serve` with 8 GPUs (the stand-in NVML replaying a capture, or the
simulator): scrapes per second and latency under `wrk` on loopback, RSS over many scrapes, and
the agent's own CPU at 1 s sampling while Prometheus-like scrapes come every 15 s.

Usage: bench/serve_bench.py BUILD_DIR [--source nvml|sim] [--wrk-seconds 20] [--idle-seconds 120]
                            [--connections 8]
Prints a Markdown table for bench/RESULTS.md."""
import argparse
import os
import re
import subprocess
import sys
import time
import urllib.request

p = argparse.ArgumentParser()
p.add_argument("build")
p.add_argument("--source", default="nvml", choices=["nvml", "sim"])
p.add_argument("--capture", default="tests/data/captures/busy-8gpu.json")
p.add_argument("--wrk-seconds", type=float, default=20)
p.add_argument("--idle-seconds", type=float, default=120)
p.add_argument("--connections", type=int, default=8)
p.add_argument("--rate", type=float, default=5000, help="fixed-rate run: scrapes per second")
args = p.parse_args()

ticks = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / ticks  # utime + stime


def rss_kib(pid, key="VmRSS:"):
    with open(f"/proc/{pid}/status") as f:
        return next(int(l.split()[1]) for l in f if l.startswith(key))


def start_serve():
    env = dict(os.environ)
    cmd = [f"{args.build}/src/gpudoctor", "serve", "--listen", "127.0.0.1:0", "-i", "1s"]
    if args.source == "nvml":
        env["GPUDOCTOR_NVML_LIB"] = os.path.abspath(
            f"{args.build}/tests/fake_nvml/libnvidia-ml.so.1")
        env["GPUDOCTOR_FAKE_NVML_CAPTURE"] = os.path.abspath(args.capture)
        env["GPUDOCTOR_FAKE_NVML_LOOP"] = "1"
    else:
        cmd += ["--source", "sim:mixed"]  # 8 x H100
    err = f"/tmp/gpudoctor-serve-bench-{os.getpid()}.err"
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=open(err, "w"))
    for _ in range(200):
        m = re.search(r"on http://([0-9.:]+)/metrics", open(err).read())
        if m:
            return proc, m.group(1)
        time.sleep(0.05)
    sys.exit("serve did not start: " + open(err).read())


def scrape(addr):
    with urllib.request.urlopen(f"http://{addr}/metrics", timeout=5) as r:
        return len(r.read())


rows = []
proc, addr = start_serve()
try:
    time.sleep(3)  # a diagnosis and a few samples in
    size = scrape(addr)
    rows.append(("`/metrics` body, 8 GPUs", f"{size:,} bytes"))

    # Throughput and latency: wrk, one thread, keep-alive connections.
    rss_before = rss_kib(proc.pid)
    cpu_before = cpu_seconds(proc.pid)
    rss_samples = []
    wrk = subprocess.Popen(["wrk", "-t1", f"-c{args.connections}", f"-d{args.wrk_seconds:g}s",
                            "--latency", f"http://{addr}/metrics"],
                           stdout=subprocess.PIPE, text=True)
    while wrk.poll() is None:
        rss_samples.append(rss_kib(proc.pid))
        time.sleep(1)
    out = wrk.stdout.read()
    cpu_wrk = cpu_seconds(proc.pid) - cpu_before
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    total = int(re.search(r"(\d+) requests in", out).group(1))
    lat = dict(re.findall(r"^\s+(50|75|90|99)%\s+(\S+)", out, re.M))
    errors = re.search(r"Non-2xx or 3xx responses: (\d+)|Socket errors: .*", out)
    rows.append((f"scrapes/s (`wrk -t1 -c{args.connections} -d{args.wrk_seconds:g}s`)",
                 f"{rps:,.0f} ({total:,} scrapes)"))
    rows.append(("latency p50 / p90 / p99", f"{lat.get('50')} / {lat.get('90')} / {lat.get('99')}"))
    rows.append(("errors", errors.group(0) if errors else "none"))
    rows.append(("serve CPU during wrk", f"{cpu_wrk:.1f} s in {args.wrk_seconds:g} s"))
    rows.append((f"RSS before / after {total:,} scrapes (max during)",
                 f"{rss_before / 1024:.1f} / {rss_kib(proc.pid) / 1024:.1f} MiB "
                 f"({max(rss_samples) / 1024:.1f} MiB)"))

    # At a fixed rate, latency from each request's scheduled time (no coordinated omission).
    fixed = subprocess.run([f"{args.build}/bench/gpudoctor_scrape_rate", addr, "/metrics",
                            f"{args.rate:g}", f"{args.wrk_seconds:g}", "4"],
                           capture_output=True, text=True)
    m = re.search(r"(\d+) requests .*?(\d+) errors; .*p50 (\d+) us, p90 (\d+) us, p99 (\d+) us, "
                  r"p99.9 (\d+) us, max (\d+) us", fixed.stdout)
    if m:
        rows.append((f"fixed {args.rate:,.0f} scrapes/s, 4 connections, {args.wrk_seconds:g} s "
                     f"(`gpudoctor_scrape_rate`)", f"{int(m.group(1)):,} scrapes, {m.group(2)} errors"))
        rows.append(("latency from the scheduled time p50 / p90 / p99 / p99.9 / max",
                     " / ".join(f"{int(m.group(i)) / 1000:.2f} ms" for i in range(3, 8))))
    else:
        rows.append(("fixed-rate run", fixed.stdout + fixed.stderr))
    rows.append((f"RSS after {total + (int(m.group(1)) if m else 0):,} scrapes",
                 f"{rss_kib(proc.pid) / 1024:.1f} MiB"))

    # The agent's own cost at 1 s sampling, scraped every 15 s as Prometheus would.
    cpu0, t0 = cpu_seconds(proc.pid), time.monotonic()
    while time.monotonic() - t0 < args.idle_seconds:
        scrape(addr)
        time.sleep(15)
    cpu1, t1 = cpu_seconds(proc.pid), time.monotonic()
    rows.append((f"CPU at `-i 1s`, a scrape every 15 s, {t1 - t0:.0f} s",
                 f"{cpu1 - cpu0:.2f} s = {100 * (cpu1 - cpu0) / (t1 - t0):.2f} % of one core"))
    rows.append(("RSS now / peak", f"{rss_kib(proc.pid) / 1024:.1f} / "
                                   f"{rss_kib(proc.pid, 'VmHWM:') / 1024:.1f} MiB"))
finally:
    proc.terminate()
    proc.wait()

src = f"stand-in NVML, {os.path.basename(args.capture)}" if args.source == "nvml" else "sim:mixed"
print(f"| `gpudoctor serve` ({src}) | |\n|---|---|")
for k, v in rows:
    print(f"| {k} | {v} |")
