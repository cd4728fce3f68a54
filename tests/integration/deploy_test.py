#!/usr/bin/env python3
"""The deploy files are usable as they are: the alert and recording rules (gpudoctor.rules.yml,
gpudoctor-fleet.rules.yml) pass promtool (check and their unit tests, every fleet rule tested);
every metric name the rules and the Grafana dashboards (gpudoctor.json, gpudoctor-fleet.json)
query is one `gpudoctor serve` exports (or a recording rule of deploy/ defines); the fleet rules'
per-cause and per-state branches are exactly the causes and states serve exports; the systemd unit
and the Kubernetes manifests parse, agree with each other, keep the agent unprivileged (the
DaemonSet: UID 0 without capabilities, for the kubelet's socket; hostPID for other pods'
processes), and their command lines start `serve` for real.

usage: deploy_test.py GPUDOCTOR SOURCE_DIR WORK_DIR
"""

import json
import os
import re
import shlex
import shutil
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import Processes, check, http_get, main, need_tool, run, start_serve  # noqa: E402

PROMQL_WORDS = {"and", "or", "unless", "bool", "offset", "by", "without", "on", "ignoring",
                "group_left", "group_right", "inf", "nan", "Inf", "NaN"}


def metric_names(expr):
    """Metric names a PromQL expression selects (not functions, labels or keywords)."""
    e = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)
    e = re.sub(r"\{[^}]*\}", " ", e)
    e = re.sub(r"\[[^\]]*\]", " ", e)
    e = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", e)
    names = set()
    for m in re.finditer(r"[a-zA-Z_:][a-zA-Z0-9_:]*", e):
        if e[m.end():].lstrip().startswith("(") or m.group(0) in PROMQL_WORDS:
            continue
        if m.start() > 0 and (e[m.start() - 1] in "$." or e[m.start() - 1].isdigit()):  # $x, 1e3
            continue
        names.add(m.group(0))
    return names


def served_names(binary, work):
    """The families `serve` exports, from its /metrics on the simulator (8 GPUs, findings), and
    the causes and states of its ledger."""
    names, causes, states = set(), set(), set()
    with Processes() as procs:
        _, addr = start_serve(procs, binary, work, "names",
                              ["--source", "sim:mixed,speed=30", "-i", "200ms"])
        time.sleep(2.5)
        status, _, body = http_get(f"http://{addr}/metrics")
        check(status == 200, f"/metrics: HTTP {status}")
        for line in body.decode().splitlines():
            if line.startswith("# TYPE "):
                names.add(line.split(" ")[2])
            m = re.match(r'gpudoctor_lost_gpu_seconds_total\{.*cause="([a-z_]+)"', line)
            if m:
                causes.add(m.group(1))
            m = re.match(r'gpudoctor_gpu_seconds_total\{.*state="([a-z_]+)"', line)
            if m:
                states.add(m.group(1))
    check("gpudoctor_finding" in names, "the simulated node has findings")
    check(len(causes) >= 9 and len(states) == 4, f"the ledger: causes {causes}, states {states}")
    return names, causes, states


def dashboard_names(dash):
    """Metric names of a dashboard's queries and of its label_values() variables."""
    exprs = [t["expr"] for p in dash["panels"] for t in p.get("targets", [])]
    used = set()
    for e in exprs:
        used |= metric_names(e)
    for v in dash["templating"]["list"]:
        q = v.get("query")
        q = q.get("query") if isinstance(q, dict) else q
        m = re.match(r"label_values\(([a-zA-Z_:][a-zA-Z0-9_:]*)", q or "")
        if m:
            used.add(m.group(1))
    return exprs, used


def systemd_unit(path):
    sections, current = {}, None
    for raw in open(path):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("[") and line.endswith("]"):
            current = line[1:-1]
            sections.setdefault(current, [])
            continue
        check(current is not None and "=" in line, f"{path}: not a unit file line: {line}")
        key, value = line.split("=", 1)
        sections[current].append((key.strip(), value.strip()))
    return sections


def starts_serve(binary, work, name, args):
    """`serve ARGS` with loopback port 0 and the simulator instead of the GPUs: must listen."""
    args = list(args)
    if "--listen" in args:
        i = args.index("--listen")
        del args[i:i + 2]
    args = [a for a in args if not a.startswith("--listen=")]
    check(args and args[0] == "serve", f"{name}: the command is not `gpudoctor serve`: {args}")
    with Processes() as procs:
        _, addr = start_serve(procs, binary, work, name,
                              args[1:] + ["--source", "sim:healthy,speed=10"])
        check(http_get(f"http://{addr}/healthz")[0] == 200, f"{name}: /healthz")


def body():
    binary, source, work = sys.argv[1], sys.argv[2], sys.argv[3]
    promtool = need_tool("promtool")
    import yaml  # python3-yaml
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    deploy = os.path.join(source, "deploy")
    exported, causes, states = served_names(binary, work)

    # Prometheus rules: promtool, then the names.
    rule_files = {}
    for name in ("gpudoctor.rules.yml", "gpudoctor-fleet.rules.yml"):
        path = os.path.join(deploy, "prometheus", name)
        r = run([promtool, "check", "rules", path])
        check(r.returncode == 0, f"promtool check rules {name}: {r.stdout}{r.stderr}")
        test = name.replace(".rules.yml", ".rules.test.yml")
        r = run([promtool, "test", "rules", test], cwd=os.path.join(deploy, "prometheus"))
        check(r.returncode == 0, f"promtool test rules {test}: {r.stdout}{r.stderr}")
        rule_files[name] = (yaml.safe_load(open(path)),
                            yaml.safe_load(open(os.path.join(deploy, "prometheus", test))))
    recorded = {rule["record"] for rules, _ in rule_files.values() for g in rules["groups"]
                for rule in g["rules"] if "record" in rule}
    rules, tests = rule_files["gpudoctor.rules.yml"]
    alerts = [rule["alert"] for g in rules["groups"] for rule in g["rules"] if "alert" in rule]
    for wanted in ("GpuBusyButIdle", "GpuLowPower", "GpuIdleButAllocated", "GpuThermalThrottling",
                   "GpuPowerCapLowered", "GpuPcieLinkDegraded", "GpuMemoryChurn",
                   "GpuLowEfficiency"):
        check(wanted in alerts, f"no alert {wanted}")
    tested = {t["alertname"] for case in tests["tests"] for t in case.get("alert_rule_test", [])}
    check(set(alerts) <= tested, f"alerts without a promtool test: {set(alerts) - tested}")
    for rules, _ in rule_files.values():
        for g in rules["groups"]:
            for rule in g["rules"]:
                unknown = metric_names(rule["expr"]) - exported - recorded
                check(not unknown, f"rule {rule.get('alert') or rule.get('record')} queries "
                                   f"{sorted(unknown)}, which serve does not export")

    # The fleet rules: each one tested; per job, user and namespace; one branch per cause and
    # per state serve exports, no more, no fewer.
    fleet_rules, fleet_tests = rule_files["gpudoctor-fleet.rules.yml"]
    fleet = {rule["record"]: rule["expr"] for g in fleet_rules["groups"] for rule in g["rules"]}
    tested_exprs = " ".join(t["expr"] for case in fleet_tests["tests"]
                            for t in case.get("promql_expr_test", []))
    untested = [name for name in fleet if not re.search(re.escape(name) + r"(?![a-z0-9_:])",
                                                        tested_exprs)]
    check(not untested, f"fleet rules without a promtool test: {untested}")
    for level in ("owner_job", "owner_user", "owner_namespace", "node"):
        for what in ("cause:gpudoctor_lost_gpu_seconds", "state:gpudoctor_gpu_seconds"):
            check(f"{level}_{what}:rate5m" in fleet, f"no fleet rule {level}_{what}:rate5m")
    branches = set(re.findall(r'cause="([a-z_]+)"',
                              fleet["gpu_owner_cause:gpudoctor_lost_gpu_seconds:rate5m"]))
    check(branches == causes, f"the per-owner cause branches {sorted(branches)} are not the "
                              f"causes serve exports {sorted(causes)}")
    branches = set(re.findall(r'state="([a-z_]+)"',
                              fleet["gpu_owner_state:gpudoctor_gpu_seconds:rate5m"]))
    check(branches == states, f"the per-owner state branches {sorted(branches)} are not the "
                              f"states serve exports {sorted(states)}")

    # Grafana: every query's metric names are exported (or recorded by the rules).
    dash = json.load(open(os.path.join(deploy, "grafana/gpudoctor.json")))
    exprs, used = dashboard_names(dash)
    check(len(exprs) >= 10, f"only {len(exprs)} queries in the dashboard")
    unknown = used - exported
    check(not unknown, f"the dashboard queries {sorted(unknown)}, which serve does not export")
    for wanted in ("DCGM_FI_DEV_POWER_USAGE", "gpudoctor_power_default_limit_watts",
                   "DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_PROF_SM_ACTIVE", "gpudoctor_efficiency_ratio",
                   "DCGM_FI_DEV_SM_CLOCK", "DCGM_FI_DEV_GPU_TEMP", "gpudoctor_finding"):
        check(wanted in used, f"the dashboard does not show {wanted}")
    titles = [p["title"] for p in dash["panels"]]
    check(len(set(p["id"] for p in dash["panels"])) == len(titles), "panel ids repeat")
    fdash = json.load(open(os.path.join(deploy, "grafana/gpudoctor-fleet.json")))
    exprs, used = dashboard_names(fdash)
    check(len(exprs) >= 12, f"only {len(exprs)} queries in the fleet dashboard")
    unknown = used - exported - recorded
    check(not unknown, f"the fleet dashboard queries {sorted(unknown)}, which neither serve "
                       f"exports nor a recording rule of deploy/prometheus defines")
    for wanted in ("gpudoctor_lost_gpu_seconds_total", "gpudoctor_gpu_seconds_total",
                   "node_cause:gpudoctor_lost_gpu_seconds:rate5m",
                   "gpu_owner_cause:gpudoctor_lost_gpu_seconds:rate5m",
                   "gpu_owner_state:gpudoctor_gpu_seconds:rate5m"):
        check(wanted in used, f"the fleet dashboard does not show {wanted}")
    check(any('state="idle_allocated"' in e for e in exprs), "no idle-but-allocated panel")
    check(fdash["schemaVersion"] == dash["schemaVersion"] and fdash["uid"] != dash["uid"],
          "the fleet dashboard's schema version and uid")
    check(len(set(p["id"] for p in fdash["panels"])) == len(fdash["panels"]), "panel ids repeat")
    variables = {v["name"] for v in fdash["templating"]["list"]}
    check({"datasource", "Hostname", "namespace"} <= variables, f"fleet variables: {variables}")
    for e in exprs:
        check("$Hostname" in e, f"a fleet panel ignores the node variable: {e}")

    # systemd: an unprivileged, hardened service whose command line works.
    unit = systemd_unit(os.path.join(deploy, "systemd/gpudoctor.service"))
    check({"Unit", "Service", "Install"} <= set(unit), f"sections: {list(unit)}")
    service = dict(unit["Service"])
    check(service.get("User") not in (None, "", "root", "0"), "the service must not run as root")
    for key, value in (("NoNewPrivileges", "yes"), ("ProtectSystem", "strict"),
                       ("ProtectHome", "yes"), ("PrivateTmp", "yes"),
                       ("CapabilityBoundingSet", "")):
        check(service.get(key) == value, f"systemd: {key}={service.get(key)!r}, want {value!r}")
    exec_start = shlex.split(service["ExecStart"])
    check(exec_start[0].startswith("/") and exec_start[0].endswith("/gpudoctor"), exec_start[0])
    check("--listen" in exec_start and exec_start[exec_start.index("--listen") + 1]
          .startswith("127.0.0.1:"), "the unit listens on loopback")
    starts_serve(binary, work, "systemd", exec_start[1:])
    analyze = shutil.which("systemd-analyze")
    if analyze:  # where systemd is installed, its own check too
        r = run([analyze, "verify", "--man=no", os.path.join(deploy, "systemd/gpudoctor.service")])
        check("Unknown key" not in r.stderr and "Unknown section" not in r.stderr, r.stderr)

    # Kubernetes: the three objects agree with each other.
    docs = {}
    for name in ("daemonset.yaml", "service.yaml", "servicemonitor.yaml"):
        for d in yaml.safe_load_all(open(os.path.join(deploy, "kubernetes", name))):
            docs[d["kind"]] = d
    check(set(docs) == {"DaemonSet", "Service", "ServiceMonitor"}, f"kinds: {list(docs)}")
    ds, svc, sm = docs["DaemonSet"], docs["Service"], docs["ServiceMonitor"]
    pod_labels = ds["spec"]["template"]["metadata"]["labels"]
    check(ds["spec"]["selector"]["matchLabels"].items() <= pod_labels.items(),
          "DaemonSet selector vs pod labels")
    check(svc["spec"]["selector"].items() <= pod_labels.items(), "Service selector vs pod labels")
    check(sm["spec"]["selector"]["matchLabels"].items() <= svc["metadata"]["labels"].items(),
          "ServiceMonitor selector vs Service labels")
    check(svc["metadata"]["namespace"] in sm["spec"]["namespaceSelector"]["matchNames"],
          "ServiceMonitor namespace")
    container = ds["spec"]["template"]["spec"]["containers"][0]
    port = {p["name"]: p["containerPort"] for p in container["ports"]}
    check(svc["spec"]["ports"][0]["targetPort"] in port, "Service targetPort names a container port")
    check(sm["spec"]["endpoints"][0]["port"] == svc["spec"]["ports"][0]["name"],
          "ServiceMonitor endpoint port")
    listen = [a for a in container["args"] if a.startswith("--listen=")]
    check(listen and listen[0].endswith(f":{port['metrics']}"), "--listen matches the port")
    for probe in ("readinessProbe", "livenessProbe"):
        check(container[probe]["httpGet"]["path"] == "/healthz", f"{probe} path")
    pod_spec = ds["spec"]["template"]["spec"]
    pod_sec = pod_spec["securityContext"]
    sec = container["securityContext"]
    # UID 0 only to reach the kubelet's socket (root's): every capability dropped, none added, no
    # privilege escalation, not privileged, a read-only root.
    check((pod_sec.get("runAsNonRoot") is True and pod_sec.get("runAsUser", 0) != 0)
          or pod_sec.get("runAsUser") == 0, "the pod's user is chosen, not the image's")
    check(sec.get("allowPrivilegeEscalation") is False and sec.get("readOnlyRootFilesystem")
          and not sec.get("privileged"), "container security context")
    check(sec["capabilities"]["drop"] == ["ALL"] and not sec["capabilities"].get("add"),
          "drops all capabilities and adds none")
    # Owners: other pods' processes visible (NVML names host PIDs), and the kubelet's
    # pod-resources socket mounted read-only where --kubelet-socket looks.
    check(pod_spec.get("hostPID") is True, "hostPID: true (other pods' /proc/PID)")
    volumes = {v["name"]: v for v in pod_spec.get("volumes", [])}
    mounts = {m["name"]: m for m in container.get("volumeMounts", [])}
    kubelet_dir = "/var/lib/kubelet/pod-resources"
    pr = [n for n, v in volumes.items() if v.get("hostPath", {}).get("path") == kubelet_dir]
    check(len(pr) == 1, f"a hostPath volume of {kubelet_dir}")
    check(pr[0] in mounts and mounts[pr[0]].get("readOnly") is True,
          "the pod-resources directory is mounted read-only")
    check(set(volumes) == set(mounts) == {pr[0]}, f"no other host paths: {sorted(volumes)}")
    sockets = [a.split("=", 1)[1] for a in container["args"] if a.startswith("--kubelet-socket=")]
    check(sockets and os.path.dirname(sockets[0]) == mounts[pr[0]]["mountPath"],
          "--kubelet-socket names the socket in the mounted directory")
    env = {e["name"]: e for e in container["env"]}
    check(env["NODE_NAME"]["valueFrom"]["fieldRef"]["fieldPath"] == "spec.nodeName",
          "NODE_NAME from the node")
    starts_serve(binary, work, "kubernetes", container["args"])


if __name__ == "__main__":
    main(body)
