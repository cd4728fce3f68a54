#!/usr/bin/env python3
"""Writes the Prometheus exposition fixtures of tests/data/logs/prom-text/, in the layout dcgm-exporter's
/metrics answers with (HELP and TYPE lines, then one sample per GPU with gpu, UUID, pci_bus_id,
device, modelName and Hostname labels; values in DCGM's units: FB in MiB, power in W, PROF
fields as 0-1 ratios):

- dcgm-loop.prom: `while true; do date; curl -s node7:9400/metrics; sleep 5; done >> ...`, for
  3 minutes: date(1) lines stamp each snapshot. GPU 0 works (util 99 %, SM active 0.82, 640 W of
  700 W); GPU 1 waits for data (util and power drop to idle for 10 s of every 20 s).
- dcgm-stamped.prom: one snapshot per minute written with explicit sample timestamps (ms), as
  a push to a text-file collector does.
Run: python3 tests/data/make_prom_text_logs.py (writes tests/data/logs/prom-text/).
"""
import os
import time

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "logs", "prom-text")
START = 1733047200  # 2024-12-01 10:00:00 UTC
METRICS = [
    ("DCGM_FI_DEV_SM_CLOCK", "gauge", "SM clock frequency (in MHz)."),
    ("DCGM_FI_DEV_MEM_CLOCK", "gauge", "Memory clock frequency (in MHz)."),
    ("DCGM_FI_DEV_GPU_TEMP", "gauge", "GPU temperature (in C)."),
    ("DCGM_FI_DEV_POWER_USAGE", "gauge", "Power draw (in W)."),
    ("DCGM_FI_DEV_GPU_UTIL", "gauge", "GPU utilization (in %)."),
    ("DCGM_FI_DEV_MEM_COPY_UTIL", "gauge", "Memory utilization (in %)."),
    ("DCGM_FI_DEV_FB_FREE", "gauge", "Framebuffer memory free (in MiB)."),
    ("DCGM_FI_DEV_FB_USED", "gauge", "Framebuffer memory used (in MiB)."),
    ("DCGM_FI_PROF_GR_ENGINE_ACTIVE", "gauge", "Ratio of time the graphics engine is active."),
    ("DCGM_FI_PROF_SM_ACTIVE", "gauge", "The ratio of cycles an SM has at least 1 warp assigned."),
    ("DCGM_FI_PROF_DRAM_ACTIVE", "gauge", "Ratio of cycles the device memory interface is active."),
]


def values(gpu, t):
    busy = gpu == 0 or (t % 20) < 10
    if busy:
        return [1980, 2619, 64, 640.0 if gpu == 0 else 610.0, 99, 38, 20000, 61000, 0.95, 0.82, 0.41]
    return [1980, 2619, 52, 118.0, 0, 0, 20000, 61000, 0.0, 0.0, 0.0]


def labels(gpu):
    return (f'gpu="{gpu}",UUID="GPU-5d0c7a2e-0000-4000-8000-00000000000{gpu}",'
            f'pci_bus_id="00000000:{0x18 + gpu:02X}:00.0",device="nvidia{gpu}",'
            f'modelName="NVIDIA H100 80GB HBM3",Hostname="node7",DCGM_FI_DRIVER_VERSION="535.104.05"')


def snapshot(t, stamp_ms=None):
    out = []
    for i, (name, kind, help_text) in enumerate(METRICS):
        out.append(f"# HELP {name} {help_text}")
        out.append(f"# TYPE {name} {kind}")
        for gpu in (0, 1):
            v = values(gpu, t)[i]
            out.append(f"{name}{{{labels(gpu)}}} {v}" + (f" {stamp_ms}" if stamp_ms else ""))
    return "\n".join(out) + "\n"


def main():
    with open(os.path.join(HERE, "dcgm-loop.prom"), "w") as f:
        for t in range(0, 180, 5):
            f.write(time.strftime("%a %b %e %H:%M:%S UTC %Y", time.gmtime(START + t)) + "\n")
            f.write(snapshot(t))
    with open(os.path.join(HERE, "dcgm-stamped.prom"), "w") as f:
        for t in range(0, 300, 60):
            f.write(snapshot(t, (START + t) * 1000))


if __name__ == "__main__":
    main()
