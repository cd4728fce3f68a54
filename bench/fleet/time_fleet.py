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
import subprocess
import sys
import tempfile
import time

STATES = ("working", "lost", "idle_allocated", "free")


def run_timed(cmd):
    """Runs cmd; returns (stdout, wall s, CPU s, peak RSS MiB) of that child alone."""
    with tempfile.TemporaryFile("w+") as out_f, tempfile.TemporaryFile("w+") as err_f:
        t0 = time.time()
        p = subprocess.Popen(cmd, stdout=out_f, stderr=err_f, text=True)
        _, status, ru = os.wait4(p.pid, 0)  # this child's own rusage
        wall = time.time() - t0
        out_f.seek(0)
        err_f.seek(0)
        out, err = out_f.read(), err_f.read()
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


# Where a fleet row's time is in the truth: (table, key). The truth keeps pods by namespace and
# pod (its by_job table has one row per user's pods); a fleet row of a pod's container goes to its
# pod.
def truth_key(by, labels, unowned):
    if unowned:
        return ("by_" + by, None)
    if by == "job":
        if labels.get("owner_kind") == "k8s_pod":
            return ("by_pod", (labels.get("namespace", ""), labels.get("pod", "")))
        return ("by_job", (labels.get("owner_kind", ""), labels.get("job", ""),
                           labels.get("user", "")))
    if by == "host":
        return ("by_host", (labels.get("Hostname", ""),))
    return ("by_" + by, (labels.get(by, ""),))


TRUTH_FIELDS = {"by_job": ("owner_kind", "job", "user"), "by_pod": ("namespace", "pod"),
                "by_user": ("user",), "by_namespace": ("namespace",), "by_host": ("Hostname",)}


def add_hours(into, states, causes):
    for k, v in states.items():
        into[0][k] = into[0].get(k, 0) + v
    for k, v in causes.items():
        into[1][k] = into[1].get(k, 0) + v


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--work", required=True, help="backfill.py's folder (fleet.json)")
    ap.add_argument("--url", required=True, help="the Prometheus backfill.py started")
    ap.add_argument("--gpudoctor", default="build/release/src/gpudoctor")
    ap.add_argument("--by", default="job,user,namespace,host")
    ap.add_argument("--no-path2", action="store_true")
    ap.add_argument("--last", type=int, default=0,
                    help="path 1 over the span's last N seconds only (times; no truth to compare)")
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
        since = span["from"]
        if args.last:
            since = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(span["to_unix"] - args.last))
        cmd = [args.gpudoctor, "fleet", "--prometheus", args.url, "--since", since,
               "--until", span["to"], "--by", by, "--top", "100000", "--format", "json"]
        out, wall, cpu, rss = run_timed(cmd)
        rep = json.loads(out)
        if args.last:
            results["runs"].append({
                "path": rep["path"], "by": by, "span_s": rep["span_s"], "wall_s": round(wall, 2),
                "cpu_s": round(cpu, 2), "rss_mib": round(rss, 1), "queries": rep.get("queries"),
                "rows": len(rep["rows"]), "gpu_hours": round(rep["total"]["gpu_hours"], 1)})
            print(json.dumps(results["runs"][-1]), flush=True)
            continue
        states, causes = tally_hours(rep["total"])
        fleet_gap = gap(states, causes, truth["fleet"])
        # Rows: the owners' rows, summed per truth row, against the truth's; the unowned row
        # against the truth's 'none' row (no owner: every key empty or "none").
        # The unowned row is what the owners' rows leave of the headline (fleet leaves it out when
        # it holds free time only); the truth's row of no owner is also where owners without a
        # user (namespace) are, so both go to it.
        got = {}
        rest_states, rest_causes = tally_hours(rep["total"])
        for r in rep["rows"]:
            if r["unowned"]:
                continue
            table, key = truth_key(by, r["labels"], False)
            s, c = tally_hours(r["tally"])
            add_hours(got.setdefault((table, key), ({}, {})), s, c)
            for k, v in s.items():
                rest_states[k] -= v
            for k, v in c.items():
                rest_causes[k] -= v
        table = truth_key(by, {}, True)[0]
        none = next((w for w in truth[table]
                     if all(w[f] in ("", "none") for f in TRUTH_FIELDS[table])), None)
        if none is not None:
            add_hours(got.setdefault((table, tuple(none[f] for f in TRUTH_FIELDS[table])),
                                     ({}, {})), rest_states, rest_causes)
        row_gap, matched, gaps = 0.0, 0, []
        for (table, key), (s, c) in got.items():
            rows = truth[table]
            t = next((w for w in rows if tuple(w[f] for f in TRUTH_FIELDS[table]) == key), None)
            if t is None:
                continue
            matched += 1
            g = gap(s, c, t)
            gaps.append(g)
            row_gap = max(row_gap, g)
        gaps.sort()
        results["runs"].append({
            "path": rep["path"], "by": by, "span_s": rep["span_s"], "wall_s": round(wall, 2),
            "cpu_s": round(cpu, 2),
            "rss_mib": round(rss, 1), "queries": rep.get("queries"), "rows": len(rep["rows"]),
            "rows_matched": matched, "row_keys": len(got),
            "row_gap_median_gpu_h": round(gaps[len(gaps) // 2], 3) if gaps else None,
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
    name = f"fleet_times_last{args.last}.json" if args.last else "fleet_times.json"
    with open(os.path.join(args.work, name), "w") as f:
        json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
