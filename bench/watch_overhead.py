#!/usr/bin/env python3
"""Measures `gpudoctor watch` (or `record`) running against the stand-in NVML: CPU time as a share
of one core and peak RSS.
Usage: bench/watch_overhead.py BUILD_DIR [CAPTURE] [SECONDS] [INTERVAL] [watch|record]."""
import os
import subprocess
import sys
import time

build = sys.argv[1] if len(sys.argv) > 1 else "build/release"
capture = sys.argv[2] if len(sys.argv) > 2 else "tests/data/captures/busy-8gpu.json"
seconds = float(sys.argv[3]) if len(sys.argv) > 3 else 30
interval = sys.argv[4] if len(sys.argv) > 4 else "100ms"
command = sys.argv[5] if len(sys.argv) > 5 else "watch"

env = dict(os.environ)
env["GPUDOCTOR_NVML_LIB"] = os.path.abspath(f"{build}/tests/fake_nvml/libnvidia-ml.so.1")
env["GPUDOCTOR_FAKE_NVML_CAPTURE"] = os.path.abspath(capture)
env["GPUDOCTOR_FAKE_NVML_LOOP"] = "1"
ticks = os.sysconf("SC_CLK_TCK")

db = f"/tmp/gpudoctor-overhead-{os.getpid()}.db"
args = ["watch", "-i", interval, "--format", "csv"] if command == "watch" else \
    ["record", "-i", interval, "-o", db]
proc = subprocess.Popen([f"{build}/src/gpudoctor"] + args, env=env, stdout=subprocess.DEVNULL,
                        stderr=subprocess.DEVNULL)
start = time.monotonic()
time.sleep(seconds)
with open(f"/proc/{proc.pid}/stat") as f:
    fields = f.read().rsplit(")", 1)[1].split()
cpu_s = (int(fields[11]) + int(fields[12])) / ticks  # utime + stime
with open(f"/proc/{proc.pid}/status") as f:
    hwm_kib = next(int(l.split()[1]) for l in f if l.startswith("VmHWM:"))
wall = time.monotonic() - start
proc.terminate()
proc.wait()
for suffix in ("", "-wal", "-shm"):
    if os.path.exists(db + suffix):
        os.remove(db + suffix)
print(f"{command} -i {interval} on {os.path.basename(capture)} for {wall:.1f} s: "
      f"CPU {cpu_s:.2f} s = {100 * cpu_s / wall:.2f} % of one core, peak RSS {hwm_kib / 1024:.1f} MiB")
