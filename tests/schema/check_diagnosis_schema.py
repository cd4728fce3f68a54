#!/usr/bin/env python3
"""Validates `gpudoctor diagnose --format json` against docs/diagnosis.schema.json (with Debian's
python3-jsonschema) on inputs that exercise every part of the contract: each built-in simulator
scenario as a recording, logs in other formats, and degenerate inputs.

usage: check_diagnosis_schema.py GPUDOCTOR_BIN SOURCE_DIR WORK_DIR
"""
import json
import os
import shutil
import subprocess
import sys

import jsonschema


def main():
    binary, source_dir, work = sys.argv[1], sys.argv[2], sys.argv[3]
    os.makedirs(work, exist_ok=True)
    with open(os.path.join(source_dir, "docs", "diagnosis.schema.json")) as f:
        schema = json.load(f)
    jsonschema.Draft7Validator.check_schema(schema)
    validator = jsonschema.Draft7Validator(schema)
    listing = subprocess.run([binary, "sim", "--list"], capture_output=True, text=True, check=True)
    scenarios = []
    for line in listing.stdout.splitlines():
        if line.startswith("GPU models"):
            break
        if line.startswith("  ") and line.split():
            scenarios.append(line.split()[0])
    inputs = []
    for name in scenarios:
        out = os.path.join(work, name + ".db")
        r = subprocess.run([binary, "sim", name + ",duration=3m,interval=1s", "-o", out],
                           capture_output=True, text=True)
        if r.returncode == 0:
            inputs.append(out)
    if len(inputs) < 10:
        print("too few scenarios simulated: %d (%s)" % (len(inputs), listing.stdout[:400]))
        return 1
    logs = os.path.join(source_dir, "tests", "data", "logs")
    for family in sorted(os.listdir(logs)):
        for name in sorted(os.listdir(os.path.join(logs, family))):
            inputs.append(os.path.join(logs, family, name))
    # PyTorch profiler traces (HTA's, read in place from the shared data): the "trace" block and
    # the trace findings' evidence. Each must be read and carry the block.
    traces = os.path.join(source_dir, "..", "shared", "data", "traces", "hta")
    trace_inputs = []
    if os.path.isdir(traces):
        trace_inputs = [os.path.join(traces, n) for n in sorted(os.listdir(traces))
                        if n.endswith(".json.gz")]
    inputs += trace_inputs
    failures = 0
    seen = set()
    checked = 0
    for path in trace_inputs:
        r = subprocess.run([binary, "diagnose", path, "--format", "json"], capture_output=True,
                           text=True)
        if r.returncode != 0 or "trace" not in json.loads(r.stdout or "{}"):
            failures += 1
            print("%s: not diagnosed with a trace block (exit %d): %s" % (path, r.returncode,
                                                                          r.stderr[:300]))
    for path in inputs:
        r = subprocess.run([binary, "diagnose", path, "--format", "json"], capture_output=True,
                           text=True)
        if r.returncode != 0:
            continue  # unreadable test inputs (bad-input fixtures) are checked elsewhere
        doc = json.loads(r.stdout)
        errors = sorted(validator.iter_errors(doc), key=lambda e: list(e.path))
        checked += 1
        for e in errors[:5]:
            failures += 1
            print("%s: %s at %s" % (path, e.message, "/".join(map(str, e.path))))
        for f in doc["findings"]:
            seen.add(f["cause"])
    # With a baseline comparison (the optional "baseline" object).
    env = dict(os.environ, GPUDOCTOR_BASELINE_DIR=os.path.join(work, "baselines"))
    healthy = os.path.join(work, "healthy.db")
    starving = os.path.join(work, "data_starvation.db")
    subprocess.run([binary, "baseline", "save", healthy, "--name", "good"], env=env, check=True,
                   capture_output=True)
    r = subprocess.run([binary, "diagnose", starving, "--format", "json", "--baseline", "good"],
                       env=env, capture_output=True, text=True, check=True)
    doc = json.loads(r.stdout)
    checked += 1
    for e in list(validator.iter_errors(doc))[:5]:
        failures += 1
        print("--baseline: %s at %s" % (e.message, "/".join(map(str, e.path))))
    if not doc.get("baseline", {}).get("regressions"):
        failures += 1
        print("--baseline: expected regressions against a healthy baseline")
    # A folder of logs: the multi-run object of docs/diagnosis-runs.schema.json (grouped_by file),
    # each diagnosis checked on its own against diagnosis.schema.json, a log not read with its
    # error.
    with open(os.path.join(source_dir, "docs", "diagnosis-runs.schema.json")) as f:
        runs_schema = json.load(f)
    runs_schema["properties"]["runs"]["items"]["properties"]["diagnosis"] = {"type": "object"}
    runs_validator = jsonschema.Draft7Validator(runs_schema)
    folder = os.path.join(work, "folder")
    os.makedirs(folder, exist_ok=True)
    for family, name in (("smi-csv", "two_gpu_units.csv"), ("dmon", "a100_default_2gpu.txt")):
        shutil.copy(os.path.join(logs, family, name), folder)
    with open(os.path.join(folder, "notes.txt"), "w") as f:
        f.write("not a log\n")
    r = subprocess.run([binary, "diagnose", folder, "--format", "json"], capture_output=True,
                       text=True)
    doc = json.loads(r.stdout)
    errors = list(runs_validator.iter_errors(doc))
    for run in doc.get("runs", []):
        if "diagnosis" in run:
            errors += list(validator.iter_errors(run["diagnosis"]))
            checked += 1
    if [run.get("grouped_by") for run in [doc]] != ["file"] or len(doc.get("runs", [])) != 3:
        errors.append(jsonschema.ValidationError("expected 3 runs grouped by file"))
    for e in errors[:5]:
        failures += 1
        print("folder: %s at %s" % (e.message, "/".join(map(str, e.path))))
    print("validated %d diagnoses; finding causes seen: %s" % (checked, ", ".join(sorted(seen))))
    if len(seen) < 9:
        print("expected findings of at least 9 causes across the scenarios")
        return 1
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
