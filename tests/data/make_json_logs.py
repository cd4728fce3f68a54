#!/usr/bin/env python3
"""Writes the JSON fixtures of tests/data/logs/json/ (run: python3 tests/data/make_json_logs.py):

- gpustat-loop.json: `while true; do gpustat --json; sleep 2; done >> ...` for 2 minutes:
  gpustat's indented objects one after another (hostname, driver_version, query_time, gpus[]
  under nvidia-smi's query names, each with its processes). GPU 0 trains at 97 %, GPU 1 is idle.
- samples-array.json: a home-made logger's json.dump() of a list of flat samples (time, gpu,
  util, power_w, sm_clock_mhz) at 1 s.
- columnar.json: an object of equal-length lists, the time under "ts" (seconds) and a power
  trace per GPU under "per_gpu" whose name says no quantity (a user gives it with --map).
"""
import datetime
import json
import os

START = datetime.datetime(2024, 12, 1, 10, 0, 0)


def gpustat():
    with open("gpustat-loop.json", "w") as f:
        for i in range(0, 120, 2):
            t = START + datetime.timedelta(seconds=i)
            gpus = []
            for g in range(2):
                busy = g == 0
                procs = [{"username": "alice", "command": "python",
                          "full_command": ["python", "train.py"], "gpu_memory_usage": 61000,
                          "cpu_percent": 101.0, "cpu_memory_usage": 9000000000, "pid": 4242}]
                gpus.append({"index": g, "uuid": f"GPU-0a1b2c3d-0000-4000-8000-00000000000{g}",
                             "name": "NVIDIA A100-SXM4-80GB", "temperature.gpu": 61 if busy else 34,
                             "fan.speed": None, "utilization.gpu": 97 if busy else 0,
                             "utilization.enc": 0, "utilization.dec": 0,
                             "power.draw": 371 if busy else 62, "enforced.power.limit": 400,
                             "memory.used": 61234 if busy else 4, "memory.total": 81920,
                             "processes": procs if busy else []})
            f.write(json.dumps({"hostname": "trainer-07", "driver_version": "535.104.05",
                                "query_time": t.isoformat() + ".123456", "gpus": gpus},
                               indent=4) + "\n")


def samples_array():
    rows = []
    for i in range(180):
        t = START + datetime.timedelta(seconds=i)
        for g in range(2):
            rows.append({"time": t.strftime("%Y-%m-%d %H:%M:%S"), "gpu": g,
                         "util": 95 if g == 0 else 3, "power_w": 280.5 if g == 0 else 41.0,
                         "sm_clock_mhz": 1410 if g == 0 else 210})
    with open("samples-array.json", "w") as f:
        json.dump(rows, f)


def columnar():
    n = 300
    ts = [round(i * 1.01, 4) for i in range(n)]
    busy = lambda i: 15 <= i < 280
    doc = {"ts": ts,
           "pw": [round((1010.0 if busy(i) else 230.0) + (i % 7), 3) for i in range(n)],
           "per_gpu": {"0": [round((515.0 if busy(i) else 116.0) + (i % 5), 3) for i in range(n)],
                       "1": [round((498.0 if busy(i) else 114.0) + (i % 3), 3) for i in range(n)]},
           "phases": [{"phase": "loading", "t_start": 0.0, "t_end": 14.1},
                      {"phase": "inference", "t_start": 15.1, "t_end": 282.0}],
           "run_id": "fixture_h200x2"}
    with open("columnar.json", "w") as f:
        json.dump(doc, f)


if __name__ == "__main__":
    os.chdir(os.path.join(os.path.dirname(os.path.abspath(__file__)), "logs", "json"))
    gpustat()
    samples_array()
    columnar()
