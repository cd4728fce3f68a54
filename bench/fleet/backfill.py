#!/usr/bin/env python3
"""The scale bench's Prometheus (issue 16, docs/fleet.md "Scaling bench"): a simulated fleet
backfilled into a local Prometheus, for timing `gpudoctor fleet` against.

1. gpudoctor_fleet_backfill writes the series as OpenMetrics, one file per 2 h chunk (path 1:
   serve's owner info and ledger for every host; path 2: plain dcgm-exporter series for the first
   --dcgm-hosts hosts over the last --dcgm-span);
2. each file goes through `promtool tsdb create-blocks-from openmetrics` into WORK/data as soon as
   it is written, and is deleted (the generator waits while 2 files are pending: the disk holds
   at most three);
3. Prometheus starts on WORK/data on a free loopback port (retention long enough for the span),
   and keeps running after this script ends; it prints the URL and how to stop it.

usage: backfill.py [--generator PATH] [--work DIR] [--hosts 125] [--gpus 8] [--span 7d]
                   [--dcgm-hosts 8] [--dcgm-span 1d] [--seed 1] [--jobs 2] [--end UNIX_S]
                   [--no-serve | --check]

--check (the ctest smoke test): a small fleet, then checks through Prometheus' HTTP API that the
series are there as serve and dcgm-exporter would have them, the ledger adds up, and stops it.
Figures (generation, promtool, data size) go to WORK/backfill.json and are printed.
"""

import argparse
import json
import os
import resource
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def fail(msg):
    print(f"backfill: {msg}", file=sys.stderr)
    sys.exit(1)


def tool(name):
    path = shutil.which(name)
    if not path:
        fail(f"{name} not found: install Debian's prometheus package (scripts/install-deps.sh)")
    return path


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def du(path):
    total = 0
    for dirpath, _, files in os.walk(path):
        for f in files:
            try:
                total += os.path.getsize(os.path.join(dirpath, f))
            except OSError:
                pass
    return total


def query(url, expr, at=None):
    params = {"query": expr}
    if at is not None:
        params["time"] = str(at)
    with urllib.request.urlopen(f"{url}/api/v1/query?{urllib.parse.urlencode(params)}",
                                timeout=60) as r:
        answer = json.load(r)
    if answer.get("status") != "success":
        fail(f"query {expr}: {answer}")
    return answer["data"]["result"]


def metric_value(url, name):
    """A sample of Prometheus' own /metrics (summed over its label sets)."""
    with urllib.request.urlopen(f"{url}/metrics", timeout=10) as r:
        text = r.read().decode()
    total = None
    for line in text.splitlines():
        if line.startswith(name + " ") or line.startswith(name + "{"):
            total = (total or 0) + float(line.rsplit(" ", 1)[1])
    return total


def generate_and_import(args, work, data, chunks):
    promtool = tool("promtool")
    gen_args = [args.generator, chunks, "--hosts", str(args.hosts), "--gpus", str(args.gpus),
                "--span", args.span, "--dcgm-hosts", str(args.dcgm_hosts),
                "--dcgm-span", args.dcgm_span, "--seed", str(args.seed), "--jobs", str(args.jobs),
                "--max-pending", "2"]
    if args.end:
        gen_args += ["--end", str(args.end)]
    t0 = time.time()
    gen = subprocess.Popen(gen_args, stdout=subprocess.PIPE, text=True)
    promtool_wall = 0.0
    promtool_cpu = 0.0
    imported = 0
    peak_disk = 0
    for line in gen.stdout:
        parts = line.split()
        if len(parts) < 4 or parts[0] != "chunk":
            continue
        path = parts[1]
        peak_disk = max(peak_disk, du(chunks) + du(data))
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        p0 = time.time()
        r = subprocess.run([promtool, "tsdb", "create-blocks-from", "openmetrics", "--quiet",
                            path, data], capture_output=True, text=True)
        promtool_wall += time.time() - p0
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        promtool_cpu += (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        if r.returncode != 0:
            gen.kill()
            fail(f"promtool on {path}: {r.stdout}{r.stderr}")
        os.unlink(path)
        imported += 1
        if sys.stderr.isatty():
            print(f"\rbackfill: {imported} chunks imported", end="", file=sys.stderr)
    if sys.stderr.isatty():
        print(file=sys.stderr)
    if gen.wait() != 0:
        fail(f"the generator failed (exit {gen.returncode})")
    fleet = json.load(open(os.path.join(chunks, "fleet.json")))
    shutil.copy(os.path.join(chunks, "fleet.json"), os.path.join(work, "fleet.json"))
    return {
        "total_wall_s": round(time.time() - t0, 1),
        "generator": fleet["generation"],
        "promtool_wall_s": round(promtool_wall, 1),
        "promtool_cpu_s": round(promtool_cpu, 1),
        "chunks": imported,
        "data_dir_bytes": du(data),
        "peak_disk_bytes": peak_disk,
    }, fleet


def start_prometheus(work, data, fleet, port):
    prometheus = tool("prometheus")
    config = os.path.join(work, "prometheus.yml")
    with open(config, "w") as f:
        f.write("# The scale bench's Prometheus: backfilled data only, nothing scraped.\n"
                "global:\n  scrape_interval: 30s\n")
    # Retention from the span's start to well after now: blocks older than it are deleted at once.
    days = int((time.time() - fleet["span"]["from_unix"]) / 86400) + 30
    log = open(os.path.join(work, "prometheus.log"), "wb")
    p = subprocess.Popen(
        [prometheus, f"--config.file={config}", f"--storage.tsdb.path={data}",
         f"--storage.tsdb.retention.time={days}d", f"--web.listen-address=127.0.0.1:{port}",
         "--query.lookback-delta=5m", "--log.level=warn"],
        stdout=log, stderr=log, cwd=work, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    deadline = time.time() + 120
    while time.time() < deadline:
        if p.poll() is not None:
            fail("prometheus exited: " + open(os.path.join(work, "prometheus.log")).read()[-2000:])
        try:
            with urllib.request.urlopen(f"{url}/-/ready", timeout=2) as r:
                if r.status == 200:
                    break
        except OSError:
            pass
        time.sleep(0.3)
    else:
        fail("prometheus not ready within 120 s")
    return p, url


def wait_for_compaction(url, limit_s):
    """Prometheus compacts the 2 h blocks it found into larger ones, starting about a minute
    after it starts: wait until nothing has changed for longer than its one-minute cycle."""
    t0 = time.time()
    last, since = None, time.time()
    while time.time() - t0 < limit_s:
        now = (metric_value(url, "prometheus_tsdb_blocks_loaded"),
               metric_value(url, "prometheus_tsdb_compactions_total"))
        if now != last:
            last, since = now, time.time()
        elif time.time() - t0 > 75 and time.time() - since > 65:
            break
        time.sleep(5)
    return round(since - t0, 1), last


def check(url, fleet, args):
    """The series as serve and dcgm-exporter would have them, and the ledger adding up."""
    end = fleet["span"]["to_unix"] - fleet["span"]["interval_s"]  # the last scrape
    whole = f'{fleet["span"]["to_unix"] - fleet["span"]["from_unix"]}s'
    gpus = fleet["hosts"] * fleet["gpus_per_host"]
    series = query(url, f"count(last_over_time(gpudoctor_gpu_seconds_total[{whole}]))", end)
    want = gpus * 4
    if not series or int(float(series[0]["value"][1])) != want:
        fail(f"gpudoctor_gpu_seconds_total: {series}, want {want} series")
    owners = query(url, 'count(last_over_time(gpudoctor_gpu_owner_info{owner_kind="slurm_job"}'
                        f'[{whole}]) unless last_over_time(gpudoctor_gpu_owner_info'
                        f'{{exported_job!=""}}[{whole}]))', end)
    if owners:
        fail(f"a Slurm job's owner info without its exported_job label: {owners}")
    dcgm = query(url, f'count by (Hostname) (last_over_time(DCGM_FI_DEV_GPU_UTIL[{whole}]))', end)
    hosts = sorted(s["metric"]["Hostname"] for s in dcgm)
    want_hosts = [h["hostname"] for h in fleet["plan"] if h["dcgm"]]
    if hosts != sorted(want_hosts):
        fail(f"dcgm-exporter series for {hosts}, want {want_hosts}")
    # No restart, no outage: every GPU's four states add up to the span less the last interval.
    span = fleet["span"]["to_unix"] - fleet["span"]["from_unix"] - fleet["span"]["interval_s"]
    for h in fleet["plan"]:
        if any(e.get("serve_restarted") for e in h["epochs"][1:]) or \
                any(e["runs"] == "not reporting" for e in h["epochs"]):
            continue
        got = query(url, f'sum by (UUID) (gpudoctor_gpu_seconds_total{{Hostname="{h["hostname"]}"}})',
                    end)
        if len(got) != fleet["gpus_per_host"]:
            fail(f"{h['hostname']}: {len(got)} GPUs in the ledger")
        for s in got:
            if abs(float(s["value"][1]) - span) > 1:
                fail(f"{h['hostname']} {s['metric']['UUID']}: the states add up to "
                     f"{s['value'][1]} s, want {span}")
    # The plan covers the span without gaps; the truth's owner rows add up to the fleet's.
    for h in fleet["plan"]:
        e = h["epochs"]
        if e[0]["from"] != fleet["span"]["from"] or e[-1]["to"] != fleet["span"]["to"] or \
                any(a["to"] != b["from"] for a, b in zip(e, e[1:])):
            fail(f"{h['hostname']}: the epochs do not cover the span")
    truth = fleet["truth"]
    for table in ("by_job", "by_user", "by_namespace", "by_pod", "by_host"):
        for state, hours in truth["fleet"]["gpu_hours"].items():
            rows = sum(r["gpu_hours"][state] for r in truth[table])
            if abs(rows - hours) > 0.002 * len(truth[table]) + 1e-6:
                fail(f"truth {table}: {state} adds up to {rows} GPU-hours, the fleet has {hours}")
    lost = query(url, "sum(gpudoctor_lost_gpu_seconds_total)", end)
    # The plan's runs include starved and capped ones: a ledger that lost nothing judged nothing.
    if not lost or not float(lost[0]["value"][1]) > 0:
        fail(f"no lost GPU-seconds on the last counters: {lost}")
    print(f"backfill: check passed ({gpus} GPUs, {len(want_hosts)} with dcgm-exporter series, "
          f"{float(lost[0]['value'][1]) / 3600:.1f} lost GPU-hours on the last counters)")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--generator",
                    default=os.path.join(ROOT, "build/release/bench/gpudoctor_fleet_backfill"))
    ap.add_argument("--work", help="folder for the data (default: a new temporary folder)")
    ap.add_argument("--hosts", type=int, default=125)
    ap.add_argument("--gpus", type=int, default=8)
    ap.add_argument("--span", default="7d")
    ap.add_argument("--dcgm-hosts", type=int, default=8)
    ap.add_argument("--dcgm-span", default="1d")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--end", type=int, help="the span's end, Unix seconds (default: now)")
    ap.add_argument("--no-serve", action="store_true", help="do not start Prometheus")
    ap.add_argument("--check", action="store_true",
                    help="check the data through Prometheus, then stop it")
    ap.add_argument("--reuse", action="store_true",
                    help="--work holds data from an earlier run: only start Prometheus on it")
    args = ap.parse_args()
    if not args.reuse and not os.access(args.generator, os.X_OK):
        fail(f"{args.generator}: build it first (cmake --build --preset release "
             "--target gpudoctor_fleet_backfill)")
    if args.reuse:
        if not args.work or not os.path.exists(os.path.join(args.work, "backfill.json")):
            fail("--reuse needs --work DIR of an earlier run (with backfill.json)")
        work = args.work
        data = os.path.join(work, "data")
        fleet = json.load(open(os.path.join(work, "fleet.json")))
        figures = json.load(open(os.path.join(work, "backfill.json")))
    else:
        work = args.work or tempfile.mkdtemp(prefix="gpudoctor-fleet-")
        if args.work:
            shutil.rmtree(work, ignore_errors=True)
            os.makedirs(work)
        data, chunks = os.path.join(work, "data"), os.path.join(work, "chunks")
        os.makedirs(data)
        os.makedirs(chunks)
        figures, fleet = generate_and_import(args, work, data, chunks)
        figures["size"] = {"hosts": args.hosts, "gpus_per_host": args.gpus, "span": args.span,
                           "dcgm_hosts": args.dcgm_hosts, "dcgm_span": args.dcgm_span}
    if not args.no_serve:
        port = free_port()
        t0 = time.time()
        p, url = start_prometheus(work, data, fleet, port)
        figures["prometheus_ready_s"] = round(time.time() - t0, 1)
        if not args.check:
            settle_s, blocks = wait_for_compaction(url, 1800)
            figures["compaction_settled_s"] = settle_s
            figures["blocks_loaded"] = blocks[0] if blocks else None
        if args.check:
            try:
                check(url, fleet, args)
            finally:
                os.killpg(p.pid, signal.SIGTERM)
                p.wait(30)
    json.dump(figures, open(os.path.join(work, "backfill.json"), "w"), indent=1)
    g = figures["generator"]
    size = figures["size"]
    print(f"backfill: {size['hosts']} hosts x {size['gpus_per_host']} GPUs over {size['span']} "
          f"({fleet['span']['from']} to {fleet['span']['to']}): generator {g['wall_s']} s "
          f"({g['cpu_s']} s CPU, {g['samples']:,} samples, {g['bytes'] / 1e9:.2f} GB of text), "
          f"promtool {figures['promtool_wall_s']} s ({figures['promtool_cpu_s']} s CPU), "
          f"total {figures['total_wall_s']} s; data dir {figures['data_dir_bytes'] / 1e6:.1f} MB; "
          f"disk at most {figures['peak_disk_bytes'] / 1e9:.2f} GB")
    if not args.no_serve and not args.check:
        print(f"backfill: Prometheus on {url} (data {data}), pid {p.pid}; stop it with: "
              f"kill {p.pid}")
        print(f"backfill: span {fleet['span']['from']} to {fleet['span']['to']}; path 2 "
              f"(dcgm-exporter series) selector {fleet['dcgm_exporter']['selector']} from "
              f"{fleet['dcgm_exporter']['from']}; what a fleet report should find: "
              f"{os.path.join(work, 'fleet.json')} (truth)")


if __name__ == "__main__":
    main()
