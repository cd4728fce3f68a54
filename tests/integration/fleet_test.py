#!/usr/bin/env python3
"""`gpudoctor fleet` and `diagnose --prometheus` against a real Prometheus (Debian's) scraping
three `gpudoctor serve` hosts on loopback, and the same GPUs as plain dcgm-exporter shows them.

The hosts (simulated, faster than real time), each with its own owners:
  node-a: a Slurm job 52001 of carol on 8 GPUs, starved by its input pipeline (data_starvation);
  node-b: `mixed`: job 41877 of alice on 4 GPUs working, a notebook pod of bob holding 2 idle,
          2 free;
  node-c: `straggler`: job 41900 of dave, one slow rank, the others waiting (communication_wait).
Prometheus scrapes them as a default scrape config does (honor_labels false: the owner info's
`job` label arrives as `exported_job`). A fourth target serves node-a's series as dcgm-exporter
would, with dcgm-exporter's HPC job label (`hpc_job="52001"`) and nothing of gpudoctor's; a fifth
the same as another host's, node-d, that runs dcgm-exporter alone.

Checks: fleet's ledger path ranks carol's job first with data_starvation, the notebook as idle
but allocated, and the free GPUs apart; the rows add up to the headline; --by user, host and
cause agree; JSON validates against docs/fleet.schema.json; the HTML opens in Chromium with its
rows; `diagnose --prometheus` gives one run per host (and per owner with --group-by job), valid
against docs/diagnosis-runs.schema.json; fleet's diagnosis path on the dcgm-exporter series
ranks job 52001 first with the same cause; bad input gives a clear message and exit 1.

usage: fleet_test.py GPUDOCTOR SOURCE_DIR WORK_DIR
"""

import json
import os
import re
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import (Failure, Processes, check, free_port, main, need_tool, query,  # noqa: E402
                    run, start_prometheus, start_serve, wait_for)
from prometheus_test import DcgmExporterStandIn, dcgm_exporter_view  # noqa: E402

import jsonschema  # noqa: E402

SPEED = 4  # simulated seconds per real second
DATA_SECONDS = 45  # real seconds of series before asking
DEADLINE_S = 200

STARVING = {
    "name": "starving_job", "cause": "data_starvation", "model": "a100-sxm4-80gb", "gpus": 8,
    "host": "node-a", "startup_s": 10,
    "description": "8 GPUs fed by too few DataLoader workers",
    "owner": {"kind": "slurm_job", "id": "52001", "step": "0", "user": "carol"},
    "workload": {"batch_s": 0.9, "prefetch": 2, "h2d_mib": 600, "kernels": 150,
                 "kernel_ms": 1.5, "allreduce_mib": 100, "optimizer_ms": 8},
}


def with_hpc_job(text, job, host=None):
    """dcgm_exporter_view() with dcgm-exporter's HPC job label on every series (and, given a
    host, as if it were that host's: its Hostname and UUIDs of its own)."""
    out = []
    for line in dcgm_exporter_view(text).splitlines():
        if line and not line.startswith("#"):
            line = re.sub(r"^([A-Za-z_:][A-Za-z0-9_:]*)\{", rf'\1{{hpc_job="{job}",', line)
            if host:
                line = re.sub(r'Hostname="[^"]*"', f'Hostname="{host}"', line)
                line = line.replace('UUID="GPU-', 'UUID="GPU-d')
        out.append(line)
    return "\n".join(out) + "\n"


def fleet(binary, prom, *args, expect=0):
    r = run([binary, "fleet", "--prometheus", prom] + list(args), timeout=180)
    check(r.returncode == expect,
          f"fleet {' '.join(args)}: exit {r.returncode} (expected {expect}): {r.stderr}{r.stdout[:2000]}")
    return r


def fleet_json(binary, prom, *args):
    return json.loads(fleet(binary, prom, "--format", "json", *args).stdout)


def chromium():
    for name in ("chromium", "chromium-browser"):
        if shutil.which(name):
            return shutil.which(name)
    raise Failure("chromium not found: install it with scripts/install-deps.sh")


def check_html(path, rows, work):
    browser = chromium()
    common = [browser, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
              "--disable-background-networking", "--disable-component-update", "--disable-sync",
              "--hide-scrollbars", "--disable-dev-shm-usage",
              "--user-data-dir=" + os.path.join(work, "chromium-profile")]
    dom = subprocess.run(common + ["--virtual-time-budget=3000", "--dump-dom", "file://" + path],
                         capture_output=True, text=True, timeout=120)
    body = re.search(r"<body([^>]*)>", dom.stdout)
    attrs = dict(re.findall(r'data-([a-z-]+)="([^"]*)"', body.group(1))) if body else {}
    check(attrs.get("ready") == "1", f"the fleet page's script did not run: {dom.stderr[-500:]}")
    check(not attrs.get("errors"), f"script errors on the fleet page: {attrs.get('errors')}")
    check(int(attrs.get("rows", "0")) == rows, f"the page shows {attrs.get('rows')} rows, not {rows}")
    shot = os.path.join(work, "fleet.png")
    subprocess.run(common + ["--window-size=1280,1400", "--screenshot=" + shot, "file://" + path],
                   capture_output=True, timeout=120)
    check(os.path.exists(shot) and os.path.getsize(shot) > 10000, "no screenshot of the fleet page")


def body():
    binary, source, work = sys.argv[1], sys.argv[2], sys.argv[3]
    deadline = time.time() + DEADLINE_S
    prometheus = need_tool("prometheus")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    with open(os.path.join(source, "docs", "fleet.schema.json")) as f:
        fleet_schema = jsonschema.Draft7Validator(json.load(f))
    with open(os.path.join(source, "docs", "diagnosis.schema.json")) as f:
        diagnosis_validator = jsonschema.Draft7Validator(json.load(f))
    with open(os.path.join(source, "docs", "diagnosis-runs.schema.json")) as f:
        runs_schema = json.load(f)
    # Each run's diagnosis is checked against diagnosis.schema.json on its own (the $ref), so
    # that no resolver API of one jsonschema version is needed.
    runs_schema["properties"]["runs"]["items"]["properties"]["diagnosis"] = {"type": "object"}
    runs_validator = jsonschema.Draft7Validator(runs_schema)

    def valid(validator, doc, what):
        errors = sorted(validator.iter_errors(doc), key=lambda e: list(e.path))
        if validator is runs_validator:
            for i, r in enumerate(doc.get("runs", [])):
                errors += [e for e in diagnosis_validator.iter_errors(r.get("diagnosis"))]
        check(not errors, f"{what}: " + "; ".join(
            f"{e.message} at {'/'.join(map(str, e.path))}" for e in errors[:5]))

    starving_file = os.path.join(work, "starving.json")
    with open(starving_file, "w") as f:
        json.dump(STARVING, f)

    with Processes() as procs:
        interval = ["-i", f"{1000 // SPEED}ms", "--window", "2m"]
        _, node_a = start_serve(procs, binary, work, "node-a",
                                ["--source", f"sim:{starving_file},speed={SPEED}",
                                 "--hostname", "node-a"] + interval)
        _, node_b = start_serve(procs, binary, work, "node-b",
                                ["--source", f"sim:mixed,speed={SPEED}", "--hostname", "node-b"]
                                + interval)
        _, node_c = start_serve(procs, binary, work, "node-c",
                                ["--source", f"sim:straggler,speed={SPEED}",
                                 "--hostname", "node-c"] + interval)
        dcgm = DcgmExporterStandIn(node_a, lambda text: with_hpc_job(text, "52001"))
        # A host with dcgm-exporter alone.
        bare = DcgmExporterStandIn(node_a, lambda text: with_hpc_job(text, "60001", "node-d"))
        try:
            port = free_port()
            prom = f"http://127.0.0.1:{port}"
            with open(os.path.join(work, "prometheus.yml"), "w") as f:
                f.write(f"""global:
  scrape_interval: 1s
scrape_configs:
  - job_name: gpudoctor
    static_configs: [{{targets: ['{node_a}', '{node_b}', '{node_c}']}}]
  - job_name: dcgm
    static_configs: [{{targets: ['{dcgm.address}']}}]
  - job_name: dcgm-only
    static_configs: [{{targets: ['{bare.address}']}}]
""")
            p, _ = start_prometheus(procs, prometheus, work, port, deadline)
            started = time.time()
            wait_for("all five targets up", lambda: len(query(prom, "up == 1")) == 5, deadline)
            wait_for("the ledger and the owners", lambda: len(query(
                prom, "gpudoctor_gpu_seconds_total{state=\"working\"}")) == 20 and query(
                prom, 'gpudoctor_gpu_owner_info{exported_job="52001"}'), deadline)
            left = DATA_SECONDS - (time.time() - started)
            if left > 0:
                time.sleep(left)
            since = f"{int(time.time() - started) + 5}s"

            # The ledger path: carol's starving job first, with its cause.
            r = fleet_json(binary, prom, "--since", since)
            valid(fleet_schema, r, "fleet --format json")
            print("fleet:", [(row["label"], round(row["tally"]["wasted_gpu_hours"] * 3600),
                              row["tally"]["main_cause"]) for row in r["rows"]])
            check(r["path"] == "ledger", f"path {r['path']}")
            check(r["gpus"] == 20 and len(r["hosts"]) == 3, f"{r['gpus']} GPUs on {r['hosts']}")
            # The host with dcgm-exporter alone is not in the ledger's figures, and it says so.
            check(any("1 host has GPU series but no gpudoctor ledger" in n and "node-d" in n
                      for n in r["notes"]), r["notes"])
            first = r["rows"][0]
            check(first["label"] == "job 52001 (carol)" and
                  first["tally"]["main_cause"] == "data_starvation",
                  f"first row: {first['label']} {first['tally']['main_cause']}")
            check(first["hosts"] == ["node-a"] and first["gpus"] == 8, f"first row: {first}")
            labels = {row["label"]: row for row in r["rows"]}
            notebook = labels.get("pod research/notebook-bob-0 (bob)")
            check(notebook and notebook["tally"]["main_cause"] == "idle" and
                  notebook["tally"]["idle_allocated_gpu_hours"] > 0,
                  f"the notebook's row: {notebook}")
            straggler = labels.get("job 41900 (dave)")
            check(straggler and straggler["tally"]["main_cause"] == "communication_wait",
                  f"dave's row: {straggler}")
            total = r["total"]
            check(total["free_gpu_hours"] > 0 and total["idle_allocated_gpu_hours"] > 0, total)
            # The rows share out the fleet's held time: they add up to the headline (free time is
            # no row's: node-b's 2 free GPUs of 20).
            share = total["free_gpu_hours"] / total["gpu_hours"]
            check(0.07 < share < 0.13, f"free: {share:.3f} of the GPU time, not about 2 of 20 GPUs")
            for key in ("working_gpu_hours", "lost_gpu_hours", "idle_allocated_gpu_hours"):
                rows_sum = sum(row["tally"][key] for row in r["rows"])
                check(abs(rows_sum - total[key]) <= 0.02 * max(total[key], 1e-3),
                      f"{key}: rows add up to {rows_sum}, the headline says {total[key]}")
            check(first["drill_down"].startswith(f"gpudoctor diagnose --prometheus '{prom}'"),
                  first["drill_down"])

            by_user = fleet_json(binary, prom, "--since", since, "--by", "user")
            check(by_user["rows"][0]["label"] == "user carol", by_user["rows"][0])
            by_host = fleet_json(binary, prom, "--since", since, "--by", "host")
            check([row["label"] for row in by_host["rows"]][0] == "node-a", by_host["rows"])
            by_cause = fleet_json(binary, prom, "--since", since, "--by", "cause")
            check(by_cause["rows"][0]["label"] == "data_starvation", by_cause["rows"])
            for fmt in ("text", "csv", "markdown"):
                out = fleet(binary, prom, "--since", since, "--format", fmt).stdout
                check("52001" in out and "data_starvation" in out, f"{fmt}: {out[:1500]}")
                with open(os.path.join(work, f"fleet.{fmt}.out"), "w") as f:  # the README's example
                    f.write(out)
            html = os.path.join(work, "fleet.html")
            fleet(binary, prom, "--since", since, "--format", "html", "-o", html, "--top", "3")
            check_html(html, 3, work)

            # diagnose --prometheus: one run per host, each diagnosed on its own.
            d = run([binary, "diagnose", "--prometheus", prom, "--since", since,
                     "--selector", '{job="gpudoctor"}', "--format", "json"])
            check(d.returncode == 0, f"diagnose --prometheus: {d.stderr}")
            runs = json.loads(d.stdout)
            valid(runs_validator, runs, "diagnose --prometheus --format json")
            names = [(x["name"], x["diagnosis"]["verdict"], len(x["diagnosis"]["gpus"]))
                     for x in runs["runs"]]
            print("diagnose --prometheus:", names)
            check([n[0] for n in names] == ["node-a", "node-b", "node-c"], names)
            check(names[0][1:] == ("data_starvation", 8) and names[2][1:] ==
                  ("communication_wait", 4), names)
            d = run([binary, "diagnose", "--prometheus", prom, "--since", since,
                     "--selector", '{job="gpudoctor"}', "--group-by", "job", "--format", "json"])
            check(d.returncode == 0, f"diagnose --prometheus --group-by job: {d.stderr}")
            runs = json.loads(d.stdout)
            valid(runs_validator, runs, "diagnose --group-by job")
            owners = {x["name"]: len(x["diagnosis"]["gpus"]) for x in runs["runs"]}
            print("diagnose --group-by job:", owners)
            check(owners.get("job 41877 (alice)") == 4 and owners.get(
                "pod research/notebook-bob-0 (bob)") == 2 and owners.get("node-b (no owner)") == 2,
                owners)
            text = run([binary, "diagnose", "--prometheus", prom, "--since", since,
                        "--selector", '{job="gpudoctor"}'])
            check("grouped by host" in text.stdout and "== Run 3 of 3: host node-c" in text.stdout,
                  text.stdout[:800])

            # The diagnosis path on plain dcgm-exporter series with its HPC job label.
            r2 = fleet_json(binary, prom, "--since", since, "--path", "diagnosis",
                            "--selector", '{job="dcgm"}')
            valid(fleet_schema, r2, "fleet --path diagnosis")
            print("fleet --path diagnosis:", [(row["label"], row["tally"]["main_cause"])
                                              for row in r2["rows"]])
            check(r2["path"] == "diagnosis" and r2["gpus"] == 8, f"{r2['path']} {r2['gpus']}")
            check(r2["rows"][0]["label"] == "job 52001" and
                  r2["rows"][0]["tally"]["main_cause"] == "data_starvation", r2["rows"][0])
            # --path auto picks the diagnosis where serve's ledger is not there.
            r3 = fleet_json(binary, prom, "--since", since, "--selector", '{job="dcgm"}')
            check(r3["path"] == "diagnosis", r3["path"])

            # Bad input: a clear message, exit 1.
            dead = f"http://127.0.0.1:{free_port()}"
            r = fleet(binary, dead, expect=1)
            check("127.0.0.1" in r.stderr and "gpudoctor:" in r.stderr, r.stderr)
            r = fleet(binary, prom + "/nothing/here", expect=1)
            check("no Prometheus HTTP API there" in r.stderr, r.stderr)
            r = fleet(binary, prom, "--since", since, "--selector", '{job="nope"}', expect=1)
            check("no GPU series" in r.stderr, r.stderr)
            r = fleet(binary, prom, "--since", since, "--path", "ledger", "--selector",
                      '{job="dcgm"}', expect=1)
            check("ledger is not there" in r.stderr, r.stderr)
        finally:
            dcgm.close()
            bare.close()


if __name__ == "__main__":
    main(body)
