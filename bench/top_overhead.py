#!/usr/bin/env python3
"""Measures `gpudoctor top` running in a pseudo-terminal: CPU time of the whole process as a share
of one core, peak RSS, and the bytes it wrote to the terminal per second.
Usage: bench/top_overhead.py BUILD_DIR [SECONDS] [INTERVAL] [SOURCE] [COLSxROWS]
  SOURCE: a --source spec (default sim:straggler,gpus=8), or stand-in:CAPTURE to replay a capture
  through the stand-in NVML (e.g. stand-in:tests/data/captures/busy-8gpu.json)."""
import fcntl
import os
import pty
import select
import struct
import subprocess
import sys
import termios
import time

build = sys.argv[1] if len(sys.argv) > 1 else "build/release"
seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 60
interval = sys.argv[3] if len(sys.argv) > 3 else "500ms"
source = sys.argv[4] if len(sys.argv) > 4 else "sim:straggler,gpus=8"
cols, rows = (int(x) for x in (sys.argv[5] if len(sys.argv) > 5 else "120x40").split("x"))

env = dict(os.environ)
env["LANG"] = "C.UTF-8"
env["TERM"] = "xterm-256color"
env.pop("NO_COLOR", None)
args = [f"{build}/src/gpudoctor", "top", "-i", interval]
if source.startswith("stand-in:"):
    env["GPUDOCTOR_NVML_LIB"] = os.path.abspath(f"{build}/tests/fake_nvml/libnvidia-ml.so.1")
    env["GPUDOCTOR_FAKE_NVML_CAPTURE"] = os.path.abspath(source[len("stand-in:"):])
    env["GPUDOCTOR_FAKE_NVML_LOOP"] = "1"
else:
    args += ["--source", source]

master, slave = pty.openpty()
fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
proc = subprocess.Popen(args, env=env, stdin=slave, stdout=slave, stderr=slave,
                        start_new_session=True)
os.close(slave)
ticks = os.sysconf("SC_CLK_TCK")
written = 0
start = time.monotonic()
while time.monotonic() - start < seconds:
    ready, _, _ = select.select([master], [], [], 0.2)
    if ready:
        try:
            written += len(os.read(master, 65536))
        except OSError:
            break
with open(f"/proc/{proc.pid}/stat") as f:
    fields = f.read().rsplit(")", 1)[1].split()
cpu_s = (int(fields[11]) + int(fields[12])) / ticks  # utime + stime
with open(f"/proc/{proc.pid}/status") as f:
    hwm_kib = next(int(l.split()[1]) for l in f if l.startswith("VmHWM:"))
wall = time.monotonic() - start
os.write(master, b"q")
deadline = time.monotonic() + 5
while proc.poll() is None and time.monotonic() < deadline:
    if select.select([master], [], [], 0.1)[0]:
        try:
            os.read(master, 65536)
        except OSError:
            pass
if proc.poll() is None:
    proc.terminate()
proc.wait()
print(f"top -i {interval} --source {source} at {cols}x{rows} for {wall:.1f} s: "
      f"CPU {cpu_s:.2f} s = {100 * cpu_s / wall:.2f} % of one core, peak RSS {hwm_kib / 1024:.1f} MiB, "
      f"{written / wall / 1024:.1f} KiB/s to the terminal, exit {proc.returncode}")
