#!/usr/bin/env python3
"""The fleet recording rules (deploy/prometheus/gpudoctor-fleet.rules.yml) in Debian's Prometheus,
scraping two `gpudoctor serve` on the simulator, as a site would:

- node-a: scenario `mixed` (Slurm job 41877 of alice on GPUs 0-3, bob's notebook pod holding
  GPUs 4-5 idle, GPUs 6-7 free), scraped with the default honor_labels: false, so the owner's
  job label is stored as exported_job;
- node-b: scenario `straggler` (Slurm job 41900 of dave), scraped with honor_labels: true, so it
  stays job.

Checks through the HTTP API (the rules' minutes turned into seconds): the per-job rule has a
series for each Slurm job with its user, never the scrape job's name; bob's idle notebook loses
its two GPUs' time to idle in the per-user rule; the free GPUs are kept as owner_kind="none"; the
owners' rows add up to the nodes' totals; and every query of the Grafana fleet dashboard runs.

usage: fleet_rules_test.py GPUDOCTOR SOURCE_DIR WORK_DIR
"""

import json
import os
import re
import shutil
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import (Processes, check, free_port, main, need_tool, query, run,  # noqa: E402
                    start_prometheus, start_serve, wait_for)

SPEED = 10  # simulated seconds per real second
DEADLINE_S = 60


def shortened(text):
    """The rules with their minutes turned into seconds."""
    text = re.sub(r"\[(\d+)m\]", lambda m: f"[{int(m.group(1)) * 2}s]", text)
    return re.sub(r"interval: (\d+)m", lambda m: f"interval: {m.group(1)}s", text)




def body():
    binary, source, work = sys.argv[1], sys.argv[2], sys.argv[3]
    deadline = time.time() + DEADLINE_S
    prometheus = need_tool("prometheus")
    promtool = need_tool("promtool")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    with open(os.path.join(source, "deploy/prometheus/gpudoctor-fleet.rules.yml")) as f, \
            open(os.path.join(work, "fleet.rules.yml"), "w") as out:
        out.write(shortened(f.read()))
    r = run([promtool, "check", "rules", os.path.join(work, "fleet.rules.yml")])
    check(r.returncode == 0, f"promtool check rules (shortened): {r.stdout}{r.stderr}")

    with Processes() as procs:
        args = ["-i", f"{1000 // SPEED}ms"]
        _, node_a = start_serve(procs, binary, work, "node-a",
                                ["--source", f"sim:mixed,speed={SPEED},host=node-a",
                                 "--hostname", "node-a"] + args)
        _, node_b = start_serve(procs, binary, work, "node-b",
                                ["--source", f"sim:straggler,speed={SPEED},host=node-b",
                                 "--hostname", "node-b"] + args)
        port = free_port()
        prom = f"http://127.0.0.1:{port}"
        with open(os.path.join(work, "prometheus.yml"), "w") as f:
            f.write(f"""global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files: [fleet.rules.yml]
scrape_configs:
  - job_name: fleet-default
    static_configs: [{{targets: ['{node_a}']}}]
  - job_name: fleet-honor
    honor_labels: true
    static_configs: [{{targets: ['{node_b}']}}]
""")
        p, _ = start_prometheus(procs, prometheus, work, port, deadline)
        started = time.time()

        # The per-job rule: each Slurm job with its user, from exported_job (node-a) and from
        # job (node-b, honor_labels); never a scrape job's name.
        job = "owner_job_cause:gpudoctor_lost_gpu_seconds:rate5m"
        for owner_job, user in (("41877", "alice"), ("41900", "dave")):
            got = wait_for(f"{job} for job {owner_job}", lambda: query(
                prom, f'{job}{{owner_kind="slurm_job",owner_job="{owner_job}"}}'), deadline)
            users = {s["metric"].get("owner_user") for s in got}
            check(users == {user}, f"job {owner_job}: users {users}, want {user}")
        print(f"per-job series for jobs 41877 and 41900 {time.time() - started:.0f} s after "
              f"Prometheus started")
        wrong = query(prom, 'gpu_owner:gpudoctor_gpu_owner_info:max{owner_job=~"fleet-.*"}')
        check(not wrong, f"a scrape job's name taken for the owner's job: {wrong}")

        # bob's notebook holds two GPUs idle: their time is lost to idle, and it is all of
        # node-a's idle-but-allocated time (the same evaluation, so exactly).
        user = "owner_user_cause:gpudoctor_lost_gpu_seconds:rate5m"
        # (The counters start with serve's first diagnoses: wait for a GPU's worth.)
        wait_for("bob's idle GPUs in the per-user rule", lambda: query(
            prom, f'{user}{{owner_user="bob",cause="idle"}} > {SPEED}'), deadline)
        got = query(prom, f'{user}{{owner_user="bob",cause="idle"}} / on () '
                          f'node_state:gpudoctor_gpu_seconds:rate5m'
                          f'{{Hostname="node-a",state="idle_allocated"}}')
        check(got and abs(float(got[0]["value"][1]) - 1) < 1e-6,
              f"bob's idle loss against node-a's idle-but-allocated time: {got}")
        rate = query(prom, f'{user}{{owner_user="bob",cause="idle"}}')
        print(f"bob's idle loss: {float(rate[0]['value'][1]):.1f} GPU seconds per second "
              f"(2 GPUs at speed {SPEED}), all of node-a's idle-but-allocated time")
        ns = query(prom, 'owner_namespace_cause:gpudoctor_lost_gpu_seconds:rate5m'
                         '{owner_namespace="research",cause="idle"}')
        check(ns and float(ns[0]["value"][1]) > 0, f"the research namespace: {ns}")

        # The free GPUs 6-7 have no owner: kept, as owner_kind="none".
        unowned = query(prom, 'gpu_owner:gpudoctor_gpu_owner:share{owner_kind="none"}')
        check(sorted((s["metric"]["Hostname"], float(s["value"][1])) for s in unowned) ==
              [("node-a", 1.0), ("node-a", 1.0)], f"unowned GPUs: {unowned}")

        # Over all owners, the nodes' totals: nothing counted twice, nothing dropped.
        both = query(prom, "sum(owner_job_state:gpudoctor_gpu_seconds:rate5m) - "
                           "sum(node_state:gpudoctor_gpu_seconds:rate5m)")
        total = query(prom, "sum(node_state:gpudoctor_gpu_seconds:rate5m)")
        check(both and total and abs(float(both[0]["value"][1])) <=
              1e-6 * max(1.0, float(total[0]["value"][1])), f"owners {both} vs nodes {total}")

        # Every query of the fleet dashboard runs (the variables as "All", the range 1m).
        dash = json.load(open(os.path.join(source, "deploy/grafana/gpudoctor-fleet.json")))
        answered = 0
        for panel in dash["panels"]:
            for t in panel.get("targets", []):
                expr = (t["expr"].replace("$Hostname", ".*").replace("$namespace", ".*")
                        .replace("$__range", "1m"))
                result = query(prom, expr)
                answered += bool(result)
                if panel["title"] == "Top users by lost GPU-hours":
                    check(any(s["metric"].get("owner_user") == "bob" for s in result),
                          f"{panel['title']}: {result}")
        print(f"the fleet dashboard: {answered} of its queries have data")
        check(answered >= 10, f"only {answered} dashboard queries have data")


if __name__ == "__main__":
    main(body)
