#!/usr/bin/env python3
"""Times `gpudoctor fleet` on the scale bench's Prometheus (issue 16, docs/fleet.md "Scaling
bench") and checks its figures against the generator's truth.

  python3 bench/fleet/backfill.py --work DIR --reuse     # prints the Prometheus URL
  python3 bench/fleet/time_fleet.py --work DIR --url URL [--gpudoctor build/release/src/gpudoctor]

Path 1 (serve's ledger) over the whole span, once per --by (job, user, namespace, host by
default): wall time, CPU time and peak RSS of the gpudoctor process, the number of queries and
the largest gap to the truth (fleet.json): the fleet's GPU-hours by state and lost GPU-hours by
cause, and each row's. Path 2 (dcgm-exporter's series, diagnosed here) over the dcgm hosts' span:
wall, CPU, RSS. Writes DIR/fleet_times.json and prints a table.
"""
import argparse
import json
import os
import resource
import subprocess
import sys
import time

STATES = ("working", "lost", "idle_allocated", "free")


def run_timed(cmd):
    """Runs cmd; returns (stdout, wall s, CPU s, peak RSS MiB) of that child alone."""
    t0 = time.time()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.time() - t0
    out = p.stdout.read()
    err = p.stderr.read()
    rc = os.waitstatus_to_exitcode(status)
    if rc != 0:
        sys.exit(f"time_fleet: {' '.join(cmd)} exited {rc}: {err.strip()[-2000:]}")
    return out, wall, ru.ru_utime + ru.ru_stime, ru.ru_maxrss / 1024


def tally_hours(t):
    """A fleet report's tally as the truth's keys: GPU-hours by state, lost by cause."""
    states = {"working": t["working_gpu_hours"], "lost": t["lost_gpu_hours"],
              "idle_allocated": t["idle_allocated_gpu_hours"], "free": t["free_gpu_hours"]}
    return states, dict(t["lost_by_cause_gpu_hours"])


def gap(got_states, got_causes, truth):
    """The largest absolute difference, GPU-hours, over the states and causes."""
    worst = 0.0
    for s in STATES:
        worst = max(worst, abs(got_states.get(s, 0) - truth["gpu_hours"].get(s, 0)))
    for c, h in truth["lost_gpu_hours"].items():
        worst = max(worst, abs(got_causes.get(c, 0) - h))
    for c, h in got_causes.items():
        if c not in truth["lost_gpu_hours"]:
            worst = max(worst, abs(h))
    return worst


# The truth's row keys for each --by, from a fleet row's labels.
def row_key(by, labels):
    job = labels.get("job", "")
    if by == "job":
        return (labels.get("owner_kind", ""), job, labels.get("user", ""))
    if by == "user":
        return (labels.get("user", ""),)
    if by == "namespace":
        return (labels.get("namespace", ""),)
    if by == "host":
        return (labels.get("Hostname", ""),)
    raise ValueError(by)


TRUTH_FIELDS = {"job": ("owner_kind", "job", "user"), "user": ("user",),
                "namespace": ("namespace",), "host": ("Hostname",)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--work", required=True, help="backfill.py's folder (fleet.json)")
    ap.add_argument("--url", required=True, help="the Prometheus backfill.py started")
    ap.add_argument("--gpudoctor", default="build/release/src/gpudoctor")
    ap.add_argument("--by", default="job,user,namespace,host")
    ap.add_argument("--no-path2", action="store_true")
    args = ap.parse_args()
    fleet = json.load(open(os.path.join(args.work, "fleet.json")))
    span = fleet["span"]
    truth = fleet["truth"]
    results = {"machine": os.uname().nodename, "cores": os.cpu_count(),
               "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
               "load_before": os.getloadavg()[0],
               "size": f'{fleet["hosts"]} x {fleet["gpus_per_host"]} GPUs, {span["from"]} .. {span["to"]}',
               "runs": []}
    for by in args.by.split(","):
        cmd = [args.gpudoctor, "fleet", "--prometheus", args.url, "--since", span["from"],
               "--until", span["to"], "--by", by, "--top", "100000", "--format", "json"]
        out, wall, cpu, rss = run_timed(cmd)
        rep = json.loads(out)
        states, causes = tally_hours(rep["total"])
        fleet_gap = gap(states, causes, truth["fleet"])
        # Rows: the owners' rows against the truth's (its 'none' row is fleet's unowned one).
        want = {tuple(r[f] for f in TRUTH_FIELDS[by]): r for r in truth[f"by_{by}"]}
        row_gap, matched = 0.0, 0
        for r in rep["rows"]:
            key = None if r["unowned"] else row_key(by, r["labels"])
            t = None
            if key is not None:
                t = want.get(key)
            else:
                t = next((w for k, w in want.items() if all(v in ("", "none") for v in k)), None)
            if t is None:
                continue
            matched += 1
            s, c = tally_hours(r["tally"])
            row_gap = max(row_gap, gap(s, c, t))
        results["runs"].append({
            "path": rep["path"], "by": by, "wall_s": round(wall, 2), "cpu_s": round(cpu, 2),
            "rss_mib": round(rss, 1), "queries": rep.get("queries"), "rows": len(rep["rows"]),
            "rows_matched": matched, "truth_rows": len(want),
            "gpu_hours": round(rep["total"]["gpu_hours"], 1),
            "truth_gpu_hours": round(sum(truth["fleet"]["gpu_hours"].values()), 1),
            "fleet_gap_gpu_h": round(fleet_gap, 2), "row_gap_gpu_h": round(row_gap, 2)})
        print(json.dumps(results["runs"][-1]), flush=True)
    if not args.no_path2:
        d = fleet.get("dcgm_exporter", {})
        if d.get("hosts"):
            cmd = [args.gpudoctor, "fleet", "--prometheus", args.url, "--path", "diagnosis",
                   "--selector", d["selector"], "--since", d["from"], "--until", d["to"],
                   "--by", "job", "--format", "json"]
            out, wall, cpu, rss = run_timed(cmd)
            rep = json.loads(out)
            results["runs"].append({
                "path": rep["path"], "by": "job", "gpus": rep["gpus"], "hosts": rep["hosts"],
                "span_s": rep["span_s"], "wall_s": round(wall, 2), "cpu_s": round(cpu, 2),
                "rss_mib": round(rss, 1), "queries": rep.get("queries"),
                "rows": len(rep["rows"]), "gpu_hours": round(rep["total"]["gpu_hours"], 1)})
            print(json.dumps(results["runs"][-1]), flush=True)
    with open(os.path.join(args.work, "fleet_times.json"), "w") as f:
        json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
