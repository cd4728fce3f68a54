#!/usr/bin/env python3
"""Writes the synthetic capture fixtures in tests/data/captures/ (docs/capture-format.md).

Deterministic: every fixture comes from a fixed seed, so running this again gives the same bytes.
The values are made to look like the named GPUs under the named workload (limits, clocks and
memory sizes of the real boards; noise that wanders rather than jumps) but they are invented,
not measured. Replace a fixture with a real `gpudoctor capture` when one is available.

Usage: python3 tests/data/make_captures.py [output_dir]
"""

import json
import math
import os
import random
import sys

SEED = 20240611
FORMAT = "gpudoctor-nvml-capture"
CREATED_BY = "tests/data/make_captures.py (synthetic)"

# Board facts: name, architecture, memory, power limits (W), max/application clocks (MHz),
# slowdown temperature, PCIe link maximum, GPM support.
H100 = dict(name="NVIDIA H100 80GB HBM3", arch="hopper", mem_total=81559, limit=700,
            limit_min=200, limit_max=700, sm_max=1980, mem_max=2619, app_sm=1980, app_mem=2619,
            slowdown=89, gen_max=5, width_max=16, gpm=True, mig=False, serial_prefix="1654922",
            instant=True)
A100_40 = dict(name="NVIDIA A100-SXM4-40GB", arch="ampere", mem_total=40960, limit=400,
               limit_min=100, limit_max=400, sm_max=1410, mem_max=1215, app_sm=1410, app_mem=1215,
               slowdown=89, gen_max=4, width_max=16, gpm=False, mig=False,
               serial_prefix="1562020", instant=True)
L4 = dict(name="NVIDIA L4", arch="ada", mem_total=23034, limit=72, limit_min=40, limit_max=72,
          sm_max=2040, mem_max=6251, app_sm=2040, app_mem=6251, slowdown=92, gen_max=4,
          width_max=16, gpm=False, mig=None, serial_prefix="1322623", instant=True)
V100_32 = dict(name="Tesla V100-SXM2-32GB", arch="volta", mem_total=32510, limit=300,
               limit_min=150, limit_max=300, sm_max=1530, mem_max=877, app_sm=1290, app_mem=877,
               slowdown=87, gen_max=3, width_max=16, gpm=False, mig=None,
               serial_prefix="0323918", instant=False)

MODERN = {"driver_version": "550.54.15", "cuda_driver_version": 12040,
          "nvml_version": "12.550.54.15"}
OLD = {"driver_version": "470.57.02", "cuda_driver_version": 11040,
       "nvml_version": "11.470.57.02"}

# DGX H100 bus numbers, in nvidia-smi order.
DGX_BUSES = [0x1B, 0x43, 0x52, 0x61, 0x9D, 0xC3, 0xD1, 0xDF]

# Catalogue field order (core/fields.def), for tidy output.
FIELD_ORDER = [
    "util_gpu_pct", "util_mem_pct", "util_enc_pct", "util_dec_pct", "power_w", "power_instant_w",
    "energy_mj", "power_limit_enforced_w", "power_limit_w", "power_limit_default_w",
    "power_limit_min_w", "power_limit_max_w", "temp_c", "temp_mem_c", "temp_slowdown_c",
    "clock_sm_mhz", "clock_mem_mhz", "clock_sm_max_mhz", "clock_mem_max_mhz", "clock_app_sm_mhz",
    "clock_app_mem_mhz", "pstate", "clock_event_reasons", "mem_used_mib", "mem_total_mib",
    "pcie_tx_mibs", "pcie_rx_mibs", "pcie_link_gen", "pcie_link_gen_max", "pcie_link_width",
    "pcie_link_width_max", "pcie_replays", "nvlink_mibs", "fan_pct", "xid",
    "remapped_rows_corrected", "remapped_rows_uncorrected", "remap_failure", "vgpu_licensed",
    "gpm_graphics_util_pct", "gpm_sm_util_pct", "gpm_sm_occupancy_pct", "gpm_tensor_util_pct",
    "gpm_dram_bw_util_pct", "gpm_fp64_util_pct", "gpm_fp32_util_pct", "gpm_fp16_util_pct",
    "gpm_pcie_tx_mibs", "gpm_pcie_rx_mibs", "gpm_nvlink_rx_mibs", "gpm_nvlink_tx_mibs",
]

REASON_IDLE = 0x1
REASON_SW_POWER_CAP = 0x4


class Wander:
    """A value that wanders smoothly around `mean` (AR(1) noise, `sd` wide, memory `tau_s`)."""

    def __init__(self, rng, mean, sd, tau_s, dt, lo=None, hi=None):
        self.rng, self.mean, self.sd, self.lo, self.hi = rng, mean, sd, lo, hi
        self.a = math.exp(-dt / tau_s)
        self.x = rng.gauss(0, 1)

    def next(self):
        self.x = self.a * self.x + math.sqrt(1 - self.a * self.a) * self.rng.gauss(0, 1)
        v = self.mean + self.sd * self.x
        if self.lo is not None:
            v = max(self.lo, v)
        if self.hi is not None:
            v = min(self.hi, v)
        return v


def r1(x):
    return round(x, 1)


def r2(x):
    return round(x, 2)


def uuid(rng):
    h = "%032x" % rng.getrandbits(128)
    return "GPU-%s-%s-%s-%s-%s" % (h[:8], h[8:12], h[12:16], h[16:20], h[20:])


def static_values(spec):
    return {
        "power_limit_default_w": float(spec["limit"]),
        "power_limit_min_w": float(spec["limit_min"]),
        "power_limit_max_w": float(spec["limit_max"]),
        "temp_slowdown_c": spec["slowdown"],
        "clock_sm_max_mhz": spec["sm_max"],
        "clock_mem_max_mhz": spec["mem_max"],
        "mem_total_mib": spec["mem_total"],
        "pcie_link_gen_max": spec["gen_max"],
        "pcie_link_width_max": spec["width_max"],
    }


# ---- Workloads: each returns a function giving (values, processes) for sample i -------------

def idle(rng, spec, dt, power=70.5, temp=31):
    """Idle in P0 under persistence mode: no kernels, clocks parked, GPU-idle reason set."""
    p = Wander(rng, power, 0.5, 5, dt)
    t = Wander(rng, temp, 0.4, 20, dt)
    tx = Wander(rng, 0.15, 0.1, 2, dt, lo=0)
    rx = Wander(rng, 0.2, 0.1, 2, dt, lo=0)

    def sample(i):
        pw = p.next()
        v = {"util_gpu_pct": 0, "util_mem_pct": 0, "power_w": r2(pw),
             "power_instant_w": r2(pw + rng.gauss(0, 1.2)), "temp_c": round(t.next()),
             "clock_sm_mhz": 345, "clock_mem_mhz": spec["mem_max"], "pstate": 0,
             "clock_event_reasons": REASON_IDLE, "mem_used_mib": 0.5,
             "pcie_tx_mibs": r2(tx.next()), "pcie_rx_mibs": r2(rx.next()),
             "pcie_link_gen": spec["gen_max"], "pcie_link_width": spec["width_max"]}
        if spec["gpm"]:
            v.update({"gpm_graphics_util_pct": 0.0, "gpm_sm_util_pct": 0.0,
                      "gpm_sm_occupancy_pct": 0.0, "gpm_tensor_util_pct": 0.0,
                      "gpm_dram_bw_util_pct": 0.0, "gpm_fp64_util_pct": 0.0,
                      "gpm_fp32_util_pct": 0.0, "gpm_fp16_util_pct": 0.0,
                      "gpm_pcie_tx_mibs": v["pcie_tx_mibs"], "gpm_pcie_rx_mibs": v["pcie_rx_mibs"],
                      "gpm_nvlink_rx_mibs": 0.0, "gpm_nvlink_tx_mibs": 0.0})
        return v, []
    return sample


def training(rng, spec, dt, pid, temp=62, power=655, proc_mib=69800, name="python"):
    """Large-model training: kernels always running, tensor cores busy, NVLink all-reduce,
    power close to the limit (the SW power cap engages now and then and trims the clock)."""
    limit = spec["limit"]
    p = Wander(rng, power, 0.018 * limit, 3, dt, lo=0.885 * limit, hi=limit - 9)
    t = Wander(rng, temp, 1.5, 15, dt, lo=55, hi=70)
    sm = Wander(rng, 90, 2.5, 4, dt, lo=85, hi=95)
    occ = Wander(rng, 42, 3, 4, dt, lo=30, hi=55)
    tensor = Wander(rng, 67, 3.5, 4, dt, lo=60, hi=75)
    dram = Wander(rng, 55, 5, 4, dt, lo=40, hi=70)
    memu = Wander(rng, 44, 5, 4, dt, lo=30, hi=60)
    tx = Wander(rng, 160, 60, 3, dt, lo=20)
    rx = Wander(rng, 620, 250, 3, dt, lo=50)
    nvl = Wander(rng, 38000, 9000, 2, dt, lo=15000, hi=62000)
    mem = Wander(rng, proc_mib, 40, 30, dt)

    def sample(i):
        pw = p.next()
        capped = pw > limit - 22 and rng.random() < 0.7
        if capped:
            clock = round(rng.uniform(1755, 1860) / 15) * 15
        else:
            clock = round(rng.uniform(spec["sm_max"] - 60, spec["sm_max"]) / 15) * 15
        util = 100 if rng.random() < 0.8 else rng.choice([98, 99])
        mu = round(memu.next())
        pmem = round(mem.next())
        nv = nvl.next()
        v = {"util_gpu_pct": util, "util_mem_pct": mu, "power_w": r2(pw),
             "power_instant_w": r2(min(pw + rng.gauss(0, 18), limit + 25)),
             "temp_c": round(t.next()), "clock_sm_mhz": clock, "clock_mem_mhz": spec["mem_max"],
             "pstate": 0, "clock_event_reasons": REASON_SW_POWER_CAP if capped else 0,
             "mem_used_mib": pmem + 530, "pcie_tx_mibs": r1(tx.next()),
             "pcie_rx_mibs": r1(rx.next()), "pcie_link_gen": spec["gen_max"],
             "pcie_link_width": spec["width_max"]}
        if spec["gpm"]:
            v.update({"gpm_graphics_util_pct": r1(min(100, util - rng.uniform(0, 1.5))),
                      "gpm_sm_util_pct": r1(sm.next()), "gpm_sm_occupancy_pct": r1(occ.next()),
                      "gpm_tensor_util_pct": r1(tensor.next()),
                      "gpm_dram_bw_util_pct": r1(dram.next()), "gpm_fp64_util_pct": 0.0,
                      "gpm_fp32_util_pct": r1(rng.uniform(8, 15)),
                      "gpm_fp16_util_pct": r1(rng.uniform(3, 8)),
                      "gpm_pcie_tx_mibs": r1(v["pcie_tx_mibs"] * rng.uniform(0.9, 1.1)),
                      "gpm_pcie_rx_mibs": r1(v["pcie_rx_mibs"] * rng.uniform(0.9, 1.1)),
                      "gpm_nvlink_rx_mibs": r1(nv), "gpm_nvlink_tx_mibs": r1(nv * rng.uniform(0.97, 1.03))})
        proc = {"pid": pid, "name": name, "used_memory_mib": pmem,
                "sm_util_pct": min(100, util - rng.choice([0, 0, 1, 2])), "mem_util_pct": mu}
        return v, [proc]
    return sample


def busy_idle(rng, spec, dt, pid):
    """GPU-Util pinned at 99-100 % while the SMs are nearly empty: a process that keeps one tiny
    kernel (or a spin/wait kernel) resident. Power stays low, tensor cores idle."""
    p = Wander(rng, 185, 5, 4, dt, lo=170, hi=200)
    t = Wander(rng, 41, 1, 20, dt)
    sm = Wander(rng, 16, 2, 4, dt, lo=12, hi=20)
    occ = Wander(rng, 6, 1.2, 4, dt, lo=3, hi=9)
    tensor = Wander(rng, 2, 0.6, 4, dt, lo=1, hi=3)
    dram = Wander(rng, 7.5, 1.3, 4, dt, lo=5, hi=10)
    memu = Wander(rng, 5, 1, 4, dt, lo=3, hi=7)

    def sample(i):
        pw = p.next()
        util = 100 if rng.random() < 0.6 else 99
        mu = round(memu.next())
        tx, rx = r1(rng.uniform(4, 18)), r1(rng.uniform(6, 30))
        v = {"util_gpu_pct": util, "util_mem_pct": mu, "power_w": r2(pw),
             "power_instant_w": r2(pw + rng.gauss(0, 6)), "temp_c": round(t.next()),
             "clock_sm_mhz": spec["sm_max"], "clock_mem_mhz": spec["mem_max"], "pstate": 0,
             "clock_event_reasons": 0, "mem_used_mib": 12870, "pcie_tx_mibs": tx,
             "pcie_rx_mibs": rx, "pcie_link_gen": spec["gen_max"],
             "pcie_link_width": spec["width_max"],
             "gpm_graphics_util_pct": r1(util - rng.uniform(0, 1)), "gpm_sm_util_pct": r1(sm.next()),
             "gpm_sm_occupancy_pct": r1(occ.next()), "gpm_tensor_util_pct": r1(tensor.next()),
             "gpm_dram_bw_util_pct": r1(dram.next()), "gpm_fp64_util_pct": 0.0,
             "gpm_fp32_util_pct": r1(rng.uniform(3, 6)), "gpm_fp16_util_pct": r1(rng.uniform(0.5, 2)),
             "gpm_pcie_tx_mibs": r1(tx * rng.uniform(0.9, 1.1)),
             "gpm_pcie_rx_mibs": r1(rx * rng.uniform(0.9, 1.1)),
             "gpm_nvlink_rx_mibs": 0.0, "gpm_nvlink_tx_mibs": 0.0}
        proc = {"pid": pid, "name": "python", "used_memory_mib": 12340,
                "sm_util_pct": util - rng.choice([0, 0, 1]), "mem_util_pct": mu}
        return v, [proc]
    return sample


def data_loader_bound(rng, spec, dt, pid, proc_utilization=True):
    """Moderate load: kernels run 50-75 % of the time, the rest waiting on input over PCIe."""
    p = Wander(rng, 220, 22, 3, dt, lo=150, hi=spec["limit"] - 30)
    t = Wander(rng, 50, 2, 15, dt)
    util = Wander(rng, 63, 7, 3, dt, lo=45, hi=80)
    rx = Wander(rng, 1500, 450, 3, dt, lo=300)

    def sample(i):
        pw = p.next()
        u = round(util.next())
        mu = max(5, round(u * 0.42 + rng.gauss(0, 2)))
        v = {"util_gpu_pct": u, "util_mem_pct": mu, "power_w": r2(pw),
             "power_instant_w": r2(pw + rng.gauss(0, 12)), "temp_c": round(t.next()),
             "clock_sm_mhz": spec["sm_max"], "clock_mem_mhz": spec["mem_max"], "pstate": 0,
             "clock_event_reasons": 0, "mem_used_mib": 18544,
             "pcie_tx_mibs": r1(rng.uniform(60, 260)), "pcie_rx_mibs": r1(rx.next()),
             "pcie_link_gen": spec["gen_max"], "pcie_link_width": spec["width_max"]}
        proc = {"pid": pid, "name": "python3", "used_memory_mib": 18012}
        if proc_utilization:
            proc.update({"sm_util_pct": u, "mem_util_pct": mu})
        return v, [proc]
    return sample


GPM_ZERO_FIELDS = ("gpm_graphics_util_pct", "gpm_sm_util_pct", "gpm_sm_occupancy_pct",
                   "gpm_tensor_util_pct", "gpm_dram_bw_util_pct", "gpm_fp64_util_pct",
                   "gpm_fp32_util_pct", "gpm_fp16_util_pct", "gpm_pcie_tx_mibs",
                   "gpm_pcie_rx_mibs", "gpm_nvlink_rx_mibs", "gpm_nvlink_tx_mibs")


def idle_with_memory(rng, spec, dt, pid, gen, width, power=27.5):
    """A process holds a CUDA context and memory but launches nothing (a notebook left open)."""
    p = Wander(rng, power, 0.5, 5, dt)
    t = Wander(rng, 37, 0.5, 20, dt)

    def sample(i):
        pw = p.next()
        v = {"util_gpu_pct": 0, "util_mem_pct": 0, "power_w": r2(pw),
             "power_instant_w": r2(pw + rng.gauss(0, 0.8)), "temp_c": round(t.next()),
             "clock_sm_mhz": spec["sm_max"], "clock_mem_mhz": spec["mem_max"], "pstate": 0,
             "clock_event_reasons": REASON_IDLE, "mem_used_mib": 9618,
             "pcie_tx_mibs": r2(rng.uniform(0, 0.3)), "pcie_rx_mibs": r2(rng.uniform(0, 0.4)),
             "pcie_link_gen": gen, "pcie_link_width": width}
        if spec["gpm"]:
            v.update({k: 0.0 for k in GPM_ZERO_FIELDS})
        proc = {"pid": pid, "name": "python3", "used_memory_mib": 9296, "sm_util_pct": 0,
                "mem_util_pct": 0}
        return v, [proc]
    return sample


def volta_training(rng, spec, dt, pid):
    """Older training job on V100s: busy but not saturated, power cap touched now and then."""
    limit = spec["limit"]
    p = Wander(rng, 245, 22, 3, dt, lo=170, hi=limit - 3)
    t = Wander(rng, 58, 2.5, 15, dt)
    util = Wander(rng, 89, 4, 3, dt, lo=75, hi=99)

    def sample(i):
        pw = p.next()
        capped = pw > limit - 18
        u = round(util.next())
        mu = round(u * 0.45 + rng.gauss(0, 3))
        v = {"util_gpu_pct": u, "util_mem_pct": mu, "power_w": r2(pw), "temp_c": round(t.next()),
             "clock_sm_mhz": int(round(rng.uniform(1380, 1455) / 7.5) * 7.5) if capped else spec["sm_max"],
             "clock_mem_mhz": spec["mem_max"], "pstate": 0,
             "clock_event_reasons": REASON_SW_POWER_CAP if capped else 0, "mem_used_mib": 24722,
             "pcie_tx_mibs": r1(rng.uniform(80, 300)), "pcie_rx_mibs": r1(rng.uniform(300, 1500)),
             "pcie_link_gen": spec["gen_max"], "pcie_link_width": spec["width_max"]}
        proc = {"pid": pid, "name": "python", "used_memory_mib": 24310, "sm_util_pct": u,
                "mem_util_pct": mu}
        return v, [proc]
    return sample


def with_counters(inner, extra):
    """Any workload plus dcgm-exporter's other default counters: extra(i, values) returns the
    fields to add to sample i (memory temperature, video engines, NVLink, PCIe replays, remapped
    rows, XID events, vGPU license)."""
    def sample(i):
        v, procs = inner(i)
        v.update(extra(i, v))
        return v, procs
    return sample


# ---- Assembly ---------------------------------------------------------------------------------

def power_capped(rng, spec, dt, pid, enforced_w):
    """Training under a power limit lowered to enforced_w: power pinned just under it, the SW
    power cap reason always set, SM clock pulled far below its maximum."""
    capped_spec = dict(spec, limit=enforced_w)
    inner = training(rng, capped_spec, dt, pid, power=enforced_w - 6)

    def sample(i):
        v, procs = inner(i)
        v["clock_event_reasons"] = REASON_SW_POWER_CAP
        v["clock_sm_mhz"] = round(rng.uniform(1290, 1380) / 15) * 15
        return v, procs
    return sample


def pcie_degraded(inner, width=None, gen=None):
    """Any workload on a PCIe link that trained below its maximum (wider or faster is possible)."""
    def sample(i):
        v, procs = inner(i)
        if width is not None:
            v["pcie_link_width"] = width
        if gen is not None:
            v["pcie_link_gen"] = gen
        return v, procs
    return sample


def running_hot(rng, inner, dt, temp):
    """Any workload in a warm chassis: the temperature wanders close to `temp`."""
    t = Wander(rng, temp, 0.8, 15, dt)

    def sample(i):
        v, procs = inner(i)
        v["temp_c"] = round(t.next())
        return v, procs
    return sample


def device(rng, index, spec, workload, n, dt, bus, persistence=True, errors=None, delays=None,
           lost_at_s=None, samples_until=None, enforced_w=None, health=None):
    """One device: identity, then n samples every dt seconds with energy integrated from power."""
    energy = float(rng.randint(1_000_000_000, 9_000_000_000))  # mJ since the driver loaded
    samples = []
    prev_power = None
    for i in range(n):
        t = round(i * dt, 3)
        if samples_until is not None and t > samples_until + 1e-9:
            break
        values, processes = workload(i)
        if not spec["instant"]:
            values.pop("power_instant_w", None)
        if errors:
            for field in errors:
                values.pop(field, None)
        values["power_limit_enforced_w"] = float(enforced_w or spec["limit"])
        values["power_limit_w"] = float(enforced_w or spec["limit"])
        values["clock_app_sm_mhz"] = spec["app_sm"]
        values["clock_app_mem_mhz"] = spec["app_mem"]
        if prev_power is not None:
            energy += (prev_power + values["power_w"]) / 2 * dt * 1000
        prev_power = values["power_w"]
        values["energy_mj"] = round(energy)
        if i == 0:
            values.update(static_values(spec))
        values = {k: values[k] for k in FIELD_ORDER if k in values}
        samples.append({"t_s": t, "values": values, "processes": processes})
    out = {
        "index": index,
        "name": spec["name"],
        "uuid": uuid(rng),
        "pci_bus_id": "00000000:%02X:00.0" % bus,
        "serial": spec["serial_prefix"] + "%06d" % rng.randint(0, 999999),
        "architecture": spec["arch"],
        "persistence_mode": persistence,
        "mig_mode": spec["mig"],
        "gpm_supported": spec["gpm"],
        "errors": errors or {},
        "delays_ms": delays or {},
        "lost_at_s": lost_at_s,
    }
    if health is not None:  # only captures made for `gpudoctor check` carry it
        out["health"] = health
    out["samples"] = samples
    return out


def capture(host, system, devices):
    return {"format": FORMAT, "version": 1, "created_by": CREATED_BY, "host": host,
            "system": system, "devices": devices}


def dumps(doc):
    """JSON with the document indented but each sample on one line (small, diff-friendly)."""
    compact = {}
    for d in doc["devices"]:
        for i, s in enumerate(d["samples"]):
            key = "@@sample-%d-%d@@" % (d["index"], i)
            compact[key] = json.dumps(s, separators=(", ", ": "))
            d["samples"][i] = key
    text = json.dumps(doc, indent=2)
    for key, s in compact.items():
        text = text.replace('"%s"' % key, s)
    return text + "\n"


def fixtures():
    rng = random.Random(SEED)
    out = {}

    out["idle-1gpu.json"] = capture("node-h100-01", MODERN, [
        device(rng, 0, H100, idle(rng, H100, 1.0), 40, 1.0, DGX_BUSES[0])])

    devs = []
    for g in range(8):
        work = training(rng, H100, 1.0, pid=48211 + g, temp=58 + g % 4 * 2.5,
                        power=rng.uniform(650, 668), proc_mib=69700 + rng.randint(0, 400))
        devs.append(device(rng, g, H100, work, 40, 1.0, DGX_BUSES[g]))
    out["busy-8gpu.json"] = capture("dgx-h100-07", MODERN, devs)

    out["busy-idle-1gpu.json"] = capture("node-h100-02", MODERN, [
        device(rng, 0, H100, busy_idle(rng, H100, 1.0, pid=30917), 45, 1.0, DGX_BUSES[0])])

    out["mixed-unsupported.json"] = capture("ws-mixed-03", MODERN, [
        device(rng, 0, A100_40, data_loader_bound(rng, A100_40, 1.0, pid=21877,
                                                  proc_utilization=False),
               40, 1.0, 0x07, errors={"power_instant_w": "NO_PERMISSION",
                                      "process_utilization": "NOT_SUPPORTED"}),
        device(rng, 1, L4, idle_with_memory(rng, L4, 1.0, pid=22410, gen=1, width=4), 40, 1.0,
               0x85, persistence=None),
    ])

    out["old-driver.json"] = capture("legacy-v100-04", OLD, [
        device(rng, g, V100_32, volta_training(rng, V100_32, 1.0, pid=7702 + g), 40, 1.0,
               [0x15, 0x16][g]) for g in range(2)])

    out["faults-lost.json"] = capture("dgx-h100-09", MODERN, [
        device(rng, 0, H100, training(rng, H100, 0.1, pid=51001), 30, 0.1, DGX_BUSES[0]),
        device(rng, 1, H100, training(rng, H100, 0.1, pid=51002), 30, 0.1, DGX_BUSES[1],
               lost_at_s=0.35, samples_until=0.3),
    ])

    out["faults-slow.json"] = capture("dgx-h100-10", MODERN, [
        device(rng, 0, H100, training(rng, H100, 0.1, pid=52001), 30, 0.1, DGX_BUSES[0],
               delays={"util_gpu_pct": 3000}),
        device(rng, 1, H100, training(rng, H100, 0.1, pid=52002), 30, 0.1, DGX_BUSES[1]),
    ])

    # The README's demo: one node, four stories.
    out["demo-4gpu.json"] = capture("demo-node", MODERN, [
        device(rng, 0, H100, training(rng, H100, 1.0, pid=61001), 60, 1.0, DGX_BUSES[0]),
        device(rng, 1, H100, busy_idle(rng, H100, 1.0, pid=61002), 60, 1.0, DGX_BUSES[1]),
        device(rng, 2, H100, idle_with_memory(rng, H100, 1.0, pid=61003, gen=5, width=16,
                                              power=92), 60,
               1.0, DGX_BUSES[2]),
        device(rng, 3, H100, power_capped(rng, H100, 1.0, pid=61004, enforced_w=350), 60, 1.0,
               DGX_BUSES[3], enforced_w=350),
    ])
    # `gpudoctor check`'s faults, with its own seed so the fixtures above never change.
    crng = random.Random(SEED + 1)
    out["check-faults-2gpu.json"] = capture("node-check-05", MODERN, [
        # H100 in training under a power limit lowered to 500 W, persistence mode off, ECC errors
        # since the driver loaded and a row remap waiting for a reset.
        device(crng, 0, H100, power_capped(crng, H100, 1.0, pid=70001, enforced_w=500), 20, 1.0,
               DGX_BUSES[0], persistence=False, enforced_w=500,
               health={"ecc_mode": True, "ecc_mode_pending": True,
                       "ecc_volatile_corrected": 41, "ecc_volatile_uncorrected": 2,
                       "ecc_aggregate_corrected": 187, "ecc_aggregate_uncorrected": 3,
                       "remapped_rows_corrected": 2, "remapped_rows_uncorrected": 1,
                       "remap_pending": True, "remap_failure": False,
                       "app_clock_default_sm_mhz": H100["app_sm"],
                       "app_clock_default_mem_mhz": H100["app_mem"]}),
        # V100 in a warm chassis, its link trained at x8 of x16 while busy, and retired pages,
        # one retirement pending (pre-Ampere boards retire pages instead of remapping rows).
        device(crng, 1, V100_32,
               running_hot(crng, pcie_degraded(volta_training(crng, V100_32, 1.0, pid=70002),
                                               width=8), 1.0, temp=80),
               20, 1.0, 0x86,
               health={"ecc_mode": True, "ecc_volatile_corrected": 0,
                       "ecc_volatile_uncorrected": 0, "ecc_aggregate_corrected": 12,
                       "ecc_aggregate_uncorrected": 0, "retired_pages_sbe": 2,
                       "retired_pages_dbe": 1, "retired_pages_pending": True,
                       "app_clock_default_sm_mhz": V100_32["app_sm"],
                       "app_clock_default_mem_mhz": V100_32["app_mem"]}),
    ])
    # dcgm-exporter's default counters beyond the basics, with its own seed as well. GPU 0: an
    # H100 in training (HBM temperature, NVDEC idle and no NVENC, NVLink all-reduce, PCIe
    # replays creeping up, two remapped rows, XID 31 at 4 s and XID 13 at 9 s). GPU 1: an L4
    # inside a vGPU VM (GDDR: no memory temperature, no row remapping; NVENC busy; no NVLink;
    # the license acquired at 6 s; XID events not available to the guest).
    nrng = random.Random(SEED + 2)
    h100 = training(nrng, H100, 1.0, pid=80001)
    mem_t = Wander(nrng, 71, 1.2, 15, 1.0, lo=64, hi=80)

    def h100_counters(i, v):
        out = {"temp_mem_c": round(mem_t.next()), "util_dec_pct": 0,
               "nvlink_mibs": r1(2 * v["gpm_nvlink_rx_mibs"]),
               "pcie_replays": 12 + i // 5, "remapped_rows_corrected": 2,
               "remapped_rows_uncorrected": 0, "remap_failure": 0}
        if i in (4, 9):
            out["xid"] = 31 if i == 4 else 13
        return out

    l4 = data_loader_bound(nrng, L4, 1.0, pid=80002)

    def l4_counters(i, v):
        return {"util_enc_pct": 38 + i % 5, "util_dec_pct": 12 + i % 3, "pcie_replays": 0,
                "vgpu_licensed": 1 if i >= 6 else 0}
    out["counters-2gpu.json"] = capture("node-counters-06", MODERN, [
        device(nrng, 0, H100, with_counters(h100, h100_counters), 20, 1.0, DGX_BUSES[0]),
        device(nrng, 1, L4, with_counters(l4, l4_counters), 20, 1.0, 0x41,
               errors={"xid": "NOT_SUPPORTED"}),
    ])
    return out


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    outdir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "captures")
    os.makedirs(outdir, exist_ok=True)
    for name, doc in fixtures().items():
        path = os.path.join(outdir, name)
        with open(path, "w", encoding="utf-8") as f:
            f.write(dumps(doc))
        print("wrote %s (%d bytes)" % (path, os.path.getsize(path)))


if __name__ == "__main__":
    main()
