#!/usr/bin/env python3
"""gpudoctor against NVIDIA's real libnvidia-ml.so.1 (Debian's libnvidia-ml1) on a machine
without the NVIDIA kernel module.

1. Every entry point of src/sources/nvml/entry_points.def resolves in the real library under the
   name we ask for first (the newest version): a fallback is for older drivers, not for this one.
2. status, watch, serve and check load the real library (GPUDOCTOR_NVML_LIB), nvmlInit_v2 answers
   DRIVER_NOT_LOADED, and each prints the driver-not-loaded message and exits 1 (README: 1
   failure), within seconds.

usage: check_real_library.py GPUDOCTOR SOURCE_DIR NVIDIA_ROOT
"""
import ctypes
import os
import re
import subprocess
import sys
from pathlib import Path

DRIVER_NOT_LOADED = 9
MESSAGE = "gpudoctor: NVIDIA driver is not loaded (NVML: Driver Not Loaded (DRIVER_NOT_LOADED))"
COMMANDS = [["status"], ["status", "--json"], ["watch", "-c", "1"], ["check"],
            ["serve", "--listen", "127.0.0.1:0"]]


def main():
    gpudoctor, source_dir, root = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])
    libs = sorted(root.glob("usr/lib/*/nvidia/current/libnvidia-ml.so.1"))
    if not libs:
        sys.exit(f"check_real_library: no libnvidia-ml.so.1 under {root}: run scripts/fetch-nvidia-nvml.sh")
    lib_path = str(libs[0])
    lib = ctypes.CDLL(lib_path, mode=os.RTLD_LOCAL)
    failures = []

    table = (source_dir / "src/sources/nvml/entry_points.def").read_text()
    entries = re.findall(r"^GPUDOCTOR_NVML\((\w+),.*$", table, re.M)
    lines = [l for l in table.splitlines() if l.startswith("GPUDOCTOR_NVML(")]
    for line in lines:
        first = re.findall(r'"(\w+)"', line)[0]
        if not hasattr(lib, first):
            failures.append(f"{first} (entry {line.split('(')[1].split(',')[0]}) is not in {lib_path}")
    if len(lines) != len(entries) or not lines:
        failures.append("could not read entry_points.def")

    init = lib.nvmlInit_v2()
    if init != DRIVER_NOT_LOADED:
        sys.exit(f"check_real_library: nvmlInit_v2 returned {init}, not DRIVER_NOT_LOADED: "
                 "this test needs a machine without the NVIDIA kernel module")

    env = dict(os.environ, GPUDOCTOR_NVML_LIB=lib_path)
    for args in COMMANDS:
        try:
            p = subprocess.run([gpudoctor, *args], env=env, capture_output=True, text=True, timeout=20)
        except subprocess.TimeoutExpired:
            failures.append(f"gpudoctor {' '.join(args)}: still running after 20 s")
            continue
        err = p.stderr.strip()
        if p.returncode != 1 or not err.startswith(MESSAGE) or p.stdout.strip():
            failures.append(f"gpudoctor {' '.join(args)}: exit {p.returncode}, stderr {err!r}, "
                            f"stdout {p.stdout.strip()[:200]!r}")

    if failures:
        print("check_real_library: " + "\n  ".join([f"{len(failures)} failure(s):", *failures]))
        sys.exit(1)
    print(f"check_real_library: {len(lines)} entry points resolve by their first name in {lib_path}; "
          f"{len(COMMANDS)} commands say the driver is not loaded and exit 1")


if __name__ == "__main__":
    main()
