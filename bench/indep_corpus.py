#!/usr/bin/env python3
"""An independent labelled corpus for the diagnosis (issue 14).

It shares no code, model or constant with src/sources/sim: each cause has its own small model
here, written from how the hardware behaves (DOMAIN.md), with noise, sampling intervals from
100 ms to 15 s, and five log layouts a user might hold:

  smi       nvidia-smi --query-gpu CSV with units (name, limits, reasons as a hex mask)
  smi_nohdr nvidia-smi --query-gpu CSV, noheader,nounits (read with --columns, as a user would)
  dmon      nvidia-smi dmon -s pucm -o DT (no name: read with --gpu-name, as a user would)
  dcgm      dcgmi dmon with DCGM's short tags (power, util, activity, DRAM)
  generic   a home-made pynvml logger's CSV (epoch seconds, mW power, 0-1 SM activity)

The hardware truth is a 100 ms timeline per GPU (kernel running or not, power, clocks...);
each layout samples it at its interval the way its tool does (GPU-Util: share of the interval
with a kernel running; power: the mean over the last second; the rest: the instant value).

With --no-name, each case is written instead with no model name and no limit column, in the
layouts that carry a percent-of-limit, clock-reason or activity column (issue 24):

  gpuz      GPU-Z sensor log: Board Power Draw [W], Power Consumption (%) [% TDP], PerfCap
            Reason (1 power, 2 thermal), latin-1, one GPU
  hwinfo    HWiNFO CSV: GPU Power [W], Total GPU Power [% of TDP], Performance Limit - Power /
            Thermal [Yes/No], d.m.yyyy dates, one GPU
  wandb     W&B's wandb-events.jsonl: system.gpu.N.powerWatts and .powerPercent (of the enforced
            limit), .gpu, .memory, .temp
  dcgm      dcgmi dmon with DCGM's short tags, read without --gpu-name (SMACT, DRAMA, POWER)

A layout takes only the causes its columns can show: a lowered cap and heat need the reason
columns (GPU-Z, HWiNFO); locked clocks need the maximum clock, which none of these has, so that
cause is left out of this set.

  indep_corpus.py OUT_DIR [RUNS_PER_CAUSE=6] [SEED=1] [--no-name]

Writes OUT_DIR/*.{csv,txt} and OUT_DIR/labels.jsonl (read by gpudoctor_accuracy).
"""
import json
import math
import os
import random
import sys

# name, default power limit W, max SM clock MHz, memory MiB, idle W
MODELS = [
    ("NVIDIA A100-SXM4-80GB", 400, 1410, 81920, 55),
    ("NVIDIA H100 80GB HBM3", 700, 1980, 81559, 70),
    ("Tesla V100-SXM2-32GB", 300, 1530, 32768, 40),
    ("NVIDIA L4", 72, 2040, 23034, 16),
    ("NVIDIA RTX A6000", 300, 2100, 49140, 25),
    ("NVIDIA GeForce RTX 4090", 450, 2520, 24564, 20),
]

CAUSES = ["healthy", "idle", "data_starvation", "launch_overhead", "communication_wait",
          "memory_bound", "power_capped", "thermal_throttle", "clocks_limited"]

INTERVALS = [0.1, 0.5, 1, 2, 5, 10, 15]
LAYOUTS = ["smi", "smi_nohdr", "dmon", "dcgm", "generic"]
TICK = 0.1

SMI_COLS = ["timestamp", "index", "name", "utilization.gpu", "utilization.memory", "power.draw",
            "power.limit", "power.default_limit", "clocks.sm", "clocks.max.sm", "temperature.gpu",
            "memory.used", "memory.total", "pstate", "clocks_event_reasons.active"]
SMI_UNITS = {"utilization.gpu": "%", "utilization.memory": "%", "power.draw": "W",
             "power.limit": "W", "power.default_limit": "W", "clocks.sm": "MHz",
             "clocks.max.sm": "MHz", "memory.used": "MiB", "memory.total": "MiB"}


class Gpu:
    """The hardware truth of one GPU, tick by tick."""

    def __init__(self, rng, model, cause, role, n):
        self.rng, self.model, self.cause, self.role = rng, model, cause, role
        name, tdp, clk, mem, idle_w = model
        self.tdp, self.clk, self.mem, self.idle_w = tdp, clk, mem, idle_w
        self.cap = tdp
        self.temp = 45.0
        self.period = rng.uniform(1.0, 6.0)
        self.duty = rng.uniform(0.3, 0.6)
        self.phase = rng.uniform(0, self.period)
        self.level = rng.uniform(0.85, 0.97)  # healthy power share
        # A well-fed job need not sit at 100 %: some healthy runs keep ~85 % of each interval
        # busy at three quarters of the limit (small gaps between steps, no duty cycle).
        self.partial = cause == "healthy" and rng.random() < 0.4
        self.n = n
        self.mem_used = mem * rng.uniform(0.3, 0.9) if cause != "idle" or rng.random() < 0.5 else 5
        if cause == "power_capped":
            self.cap = round(tdp * rng.uniform(0.5, 0.75))

    def tick(self, t):
        """Returns the instant state: running, power, sm, dram, mem_util, clock, temp, reasons."""
        r, c = self.rng, self.cause
        noise = lambda s: r.gauss(0, s)
        run, p, sm, dram, mu, clk, reasons, pstate = 1.0, 0.0, 0.0, 0.0, 0.0, self.clk, 0, 0
        if c == "healthy" and self.partial:
            run = r.uniform(0.78, 0.92)
            p = self.tdp * (0.76 + noise(0.03))
            sm, dram, mu = 64 + noise(3), 30 + noise(4), 35 + noise(5)
        elif c == "healthy":
            p = self.tdp * (self.level + noise(0.03))
            sm, dram, mu = 88 + noise(3), 35 + noise(5), 40 + noise(6)
            if p >= self.tdp * 0.98:
                reasons, clk = 0x4, self.clk * 0.93
        elif c == "idle":
            run, p, sm, mu, clk, reasons, pstate = 0.0, self.idle_w * (1 + noise(0.05)), 0, 0, \
                210, 0x1, 8
        elif c == "data_starvation":
            busy = ((t + self.phase) % self.period) < self.duty * self.period
            run = 1.0 if busy else 0.0
            p = self.tdp * (0.85 if busy else 0.25) * (1 + noise(0.04))
            sm, dram, mu = (85, 35, 40) if busy else (0, 0, 0)
        elif c == "launch_overhead":
            # many tiny kernels: a kernel is resident most of each 100 ms, gaps between launches
            run = min(1.0, max(0.0, r.uniform(0.88, 1.0)))
            p = self.tdp * r.uniform(0.2, 0.38)
            sm, dram, mu = 20 + noise(4), 8 + noise(2), 8 + noise(2)
        elif c == "communication_wait":
            if self.role == "straggler":
                p = self.tdp * (0.9 + noise(0.02))
                sm, dram, mu = 88 + noise(3), 40, 45
            else:  # spinning NCCL kernel: resident all the time, little power
                p = self.tdp * (0.3 + noise(0.03))
                sm, dram, mu = 30 + noise(4), 5, 5
        elif c == "memory_bound":
            run = 1.0
            p = self.tdp * r.uniform(0.5, 0.7)
            sm, dram, mu = 80 + noise(4), 80 + noise(5), r.uniform(75, 95)
        elif c == "power_capped":
            p = self.cap * (0.99 + noise(0.005))
            sm, dram, mu = 90, 40, 45
            reasons, clk = 0x4, self.clk * r.uniform(0.7, 0.8)
        elif c == "thermal_throttle":
            p = self.tdp * (0.7 + noise(0.03))
            sm, dram, mu = 90, 40, 45
            self.temp = 90 + noise(1)
            reasons, clk = 0x20 | (0x40 if r.random() < 0.3 else 0), self.clk * r.uniform(0.6, 0.8)
        elif c == "clocks_limited":
            p = self.tdp * (0.5 + noise(0.03))
            sm, dram, mu = 90, 40, 45
            reasons, clk = 0x2, self.clk * 0.55
        if c != "thermal_throttle":
            target = 35 + 45 * p / self.tdp
            self.temp += (target - self.temp) * 0.01 + noise(0.05)
        return {"run": run, "power": max(self.idle_w * 0.8, p), "sm": max(0, min(100, sm)),
                "dram": max(0, min(100, dram)), "mu": max(0, min(100, mu)), "clock": clk,
                "temp": self.temp, "reasons": reasons, "pstate": pstate}


def simulate(rng, cause, interval):
    model = rng.choice(MODELS if cause not in ("power_capped",) else MODELS[:3] + MODELS[4:])
    ngpu = rng.randint(2, 4) if cause == "communication_wait" else rng.randint(1, 3)
    duration = max(300.0, 60 * interval)
    n_ticks = int(duration / TICK)
    roles = ["waiter"] * ngpu
    # Communication wait: one straggler the others wait for, or (a third of the runs) all ranks
    # spinning in collectives on a slow link, GPU-Util pinned at 100 %.
    if cause == "communication_wait" and rng.random() < 0.67:
        roles[rng.randrange(ngpu)] = "straggler"
    gpus = [Gpu(rng, model, cause, roles[g], n_ticks) for g in range(ngpu)]
    truth = [[g.tick(i * TICK) for i in range(n_ticks)] for g in gpus]
    # Sample at the interval, as the tools do.
    per = max(1, int(round(interval / TICK)))
    samples = []
    for k in range(per, n_ticks + 1, per):
        row = []
        for g, tl in zip(gpus, truth):
            window = tl[k - per:k]
            last_s = tl[max(0, k - 10):k]
            inst = tl[k - 1]
            row.append({
                "util": round(100 * sum(x["run"] for x in window) / len(window)),
                "power": sum(x["power"] for x in last_s) / len(last_s),
                "sm": sum(x["sm"] for x in window) / len(window),
                "dram": sum(x["dram"] for x in window) / len(window),
                "mu": round(sum(x["mu"] for x in window) / len(window)),
                "clock": round(inst["clock"]), "temp": round(inst["temp"]),
                "reasons": inst["reasons"], "pstate": inst["pstate"],
                "mem_used": round(g.mem_used), "cap": g.cap,
            })
        samples.append((k * TICK, row))
    return model, ngpu, gpus, samples


def stamp(base, t, style):
    import datetime
    d = datetime.datetime.fromtimestamp(base + t, datetime.timezone.utc)
    if style == "smi":
        return d.strftime("%Y/%m/%d %H:%M:%S.") + f"{d.microsecond // 1000:03d}"
    if style == "dmon":
        return d.strftime("%Y%m%d"), d.strftime("%H:%M:%S")
    return f"{base + t:.3f}"


def write_smi(path, model, samples, base, header):
    lines = []
    if header:
        lines.append(", ".join(f"{c} [{SMI_UNITS[c]}]" if c in SMI_UNITS else c
                               for c in SMI_COLS))
    for t, row in samples:
        for g, s in enumerate(row):
            u = (lambda v, unit: f"{v} {unit}") if header else (lambda v, unit: f"{v}")
            cells = [stamp(base, t, "smi"), str(g), model[0], u(s["util"], "%"),
                     u(s["mu"], "%"), u(f"{s['power']:.2f}", "W"), u(f"{s['cap']:.2f}", "W"),
                     u(f"{model[1]:.2f}", "W"), u(s["clock"], "MHz"), u(model[2], "MHz"),
                     str(s["temp"]), u(s["mem_used"], "MiB"), u(model[3], "MiB"),
                     f"P{s['pstate']}", f"0x{s['reasons']:016X}"]
            lines.append(", ".join(cells))
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def write_dmon(path, model, samples, base):
    lines = ["#Date       Time        gpu    pwr  gtemp  mtemp     sm    mem    enc    dec   mclk   pclk",
             "#YYYYMMDD   HH:MM:SS    Idx      W      C      C      %      %      %      %    MHz    MHz"]
    for t, row in samples:
        day, hms = stamp(base, t, "dmon")
        for g, s in enumerate(row):
            lines.append(f" {day}   {hms}  {g:5d}  {round(s['power']):5d}  {s['temp']:5d}"
                         f"      -  {s['util']:5d}  {s['mu']:5d}      0      0   1593  {s['clock']:5d}")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def write_dcgm(path, model, samples):
    tags = ["POWER", "TMPTR", "GPUTL", "MCUTL", "SMCLK", "FBUSD", "GRACT", "SMACT", "DRAMA"]
    lines = ["#Entity   " + "".join(f"{t:<14}" for t in tags),
             "ID        " + "".join(f"{u:<14}" for u in ["W", "C", "", "", "", "", "", "", ""])]
    for _, row in samples:
        for g, s in enumerate(row):
            vals = [f"{s['power']:.3f}", s["temp"], s["util"], s["mu"], s["clock"],
                    s["mem_used"], f"{min(1, s['util'] / 100):.3f}", f"{s['sm'] / 100:.3f}",
                    f"{s['dram'] / 100:.3f}"]
            lines.append(f"GPU {g:<6}" + "".join(f"{str(v):<14}" for v in vals))
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def write_generic(path, model, samples, base):
    lines = ["timestamp,gpu_index,name,power_mw,gpu_util_pct,mem_util_pct,memory_used_mib,"
             "temp_c,sm_clock_mhz,sm_active,throttle_reasons"]
    for t, row in samples:
        for g, s in enumerate(row):
            lines.append(f"{base + t:.3f},{g},{model[0]},{round(s['power'] * 1000)},{s['util']},"
                         f"{s['mu']},{s['mem_used']},{s['temp']},{s['clock']},"
                         f"{s['sm'] / 100:.3f},{s['reasons']}")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


PERFCAP = {"power": 1, "thermal": 2, "idle": 16}
NONAME_LAYOUTS = ["gpuz", "hwinfo", "wandb", "dcgm"]
NONAME_CAN = {
    "gpuz": {"healthy", "idle", "data_starvation", "launch_overhead", "memory_bound",
             "power_capped", "thermal_throttle"},
    "hwinfo": {"healthy", "idle", "data_starvation", "launch_overhead", "memory_bound",
               "power_capped", "thermal_throttle"},
    "wandb": {"healthy", "idle", "data_starvation", "launch_overhead", "communication_wait",
              "memory_bound"},
    "dcgm": {"healthy", "idle", "data_starvation", "launch_overhead", "communication_wait",
             "memory_bound"},
}


def reason_kind(mask):
    if mask & 0x4:
        return "power"
    if mask & 0x60:
        return "thermal"
    if mask & 0x1:
        return "idle"
    return ""


def write_gpuz(path, model, samples, base):
    import datetime
    cols = ["Date", "GPU Clock [MHz]", "GPU Temperature [\u00b0C]", "Memory Used [MB]",
            "GPU Load [%]", "Memory Controller Load [%]", "Board Power Draw [W]",
            "Power Consumption (%) [% TDP]", "PerfCap Reason []"]
    lines = [" , ".join(f"{c:>12}" for c in cols) + " ,"]
    for t, row in samples:
        s = row[0]
        d = datetime.datetime.fromtimestamp(base + t, datetime.timezone.utc)
        cells = [d.strftime("%Y-%m-%d %H:%M:%S"), f"{s['clock']:.1f}", f"{s['temp']:.1f}",
                 str(s["mem_used"]), str(s["util"]), str(s["mu"]), f"{s['power']:.1f}",
                 f"{100 * s['power'] / model[1]:.1f}", str(PERFCAP.get(reason_kind(s["reasons"]), 0))]
        lines.append(" , ".join(f"{c:>12}" for c in cells) + " ,")
    with open(path, "w", encoding="latin-1") as f:
        f.write("\r\n".join(lines) + "\r\n")


def write_hwinfo(path, model, samples, base):
    import datetime
    cols = ["Date", "Time", "GPU Temperature [\u00b0C]", "GPU Core Load [%]",
            "GPU Memory Controller Load [%]", "GPU Clock [MHz]", "GPU Power [W]",
            "Total GPU Power [% of TDP]", "GPU Memory Allocated [MB]",
            "Performance Limit - Power [Yes/No]", "Performance Limit - Thermal [Yes/No]"]
    lines = [",".join(f'"{c}"' for c in cols)]
    for t, row in samples:
        s = row[0]
        d = datetime.datetime.fromtimestamp(base + t, datetime.timezone.utc)
        kind = reason_kind(s["reasons"])
        cells = [f"{d.day}.{d.month}.{d.year}", d.strftime("%H:%M:%S.") + f"{d.microsecond // 1000:03d}",
                 f"{s['temp']:.1f}", f"{s['util']:.1f}", f"{s['mu']:.1f}", f"{s['clock']:.1f}",
                 f"{s['power']:.3f}", f"{100 * s['power'] / model[1]:.1f}", str(s["mem_used"]),
                 "Yes" if kind == "power" else "No", "Yes" if kind == "thermal" else "No"]
        lines.append(",".join(cells))
    with open(path, "w", encoding="latin-1") as f:
        f.write("\n".join(lines) + "\n")


def write_wandb(path, model, samples, base):
    lines = []
    for t, row in samples:
        rec = {}
        for g, s in enumerate(row):
            p = f"system.gpu.{g}."
            rec[p + "gpu"] = s["util"]
            rec[p + "memory"] = s["mu"]
            rec[p + "memoryAllocated"] = round(100 * s["mem_used"] / model[3], 2)
            rec[p + "temp"] = s["temp"]
            rec[p + "powerWatts"] = round(s["power"], 2)
            rec[p + "powerPercent"] = round(100 * s["power"] / s["cap"], 2)
        rec["_wandb"] = True
        rec["_timestamp"] = round(base + t, 3)
        rec["_runtime"] = round(t, 3)
        lines.append(json.dumps(rec))
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    no_name = "--no-name" in sys.argv
    args = [a for a in sys.argv[1:] if a != "--no-name"]
    out = args[0]
    runs = int(args[1]) if len(args) > 1 else 6
    seed = int(args[2]) if len(args) > 2 else 1
    os.makedirs(out, exist_ok=True)
    rng = random.Random(seed)
    labels = []
    base = 1_735_000_000.0
    for cause in CAUSES:
        if no_name and cause == "clocks_limited":
            continue
        for k in range(runs):
            interval = INTERVALS[(k + CAUSES.index(cause)) % len(INTERVALS)]
            if no_name:
                # The next layout (in turn) whose columns can show the cause.
                j = k + 2 * CAUSES.index(cause)
                while cause not in NONAME_CAN[NONAME_LAYOUTS[j % len(NONAME_LAYOUTS)]]:
                    j += 1
                layout = NONAME_LAYOUTS[j % len(NONAME_LAYOUTS)]
                # GPU-Z stamps whole seconds; W&B samples every few seconds at the fastest.
                interval = max(interval, {"gpuz": 1, "wandb": 2}.get(layout, 0))
                model, ngpu, gpus, samples = simulate(rng, cause, interval)
                if layout in ("gpuz", "hwinfo"):
                    samples = [(t, row[:1]) for t, row in samples]
                    ngpu = 1
                name = f"{cause}_{k:02d}_{layout}_{str(interval).replace('.', 'p')}s"
                label = {"cause": cause, "scenario": cause, "format": layout, "model": model[0],
                         "interval_s": interval, "gpu_causes": [cause] * ngpu}
                if layout == "gpuz":
                    name += ".txt"
                    write_gpuz(os.path.join(out, name), model, samples, base)
                elif layout == "hwinfo":
                    name += ".CSV"
                    write_hwinfo(os.path.join(out, name), model, samples, base)
                elif layout == "wandb":
                    name += ".jsonl"
                    write_wandb(os.path.join(out, name), model, samples, base)
                else:
                    name += ".txt"
                    write_dcgm(os.path.join(out, name), model, samples)
                label["file"] = name
                labels.append(label)
                continue
            layout = LAYOUTS[(k + 2 * CAUSES.index(cause)) % len(LAYOUTS)]
            # Layouts that cannot carry a cause's evidence: a lowered cap needs the limit or the
            # power-cap reason (dmon and DCGM's dump here have neither); clocks held by
            # application clocks need the reason or the maximum clock.
            if cause in ("power_capped", "clocks_limited") and layout in ("dmon", "dcgm"):
                layout = "smi"
            model, ngpu, gpus, samples = simulate(rng, cause, interval)
            name = f"{cause}_{k:02d}_{layout}_{str(interval).replace('.', 'p')}s"
            label = {"cause": cause, "scenario": cause, "format": layout, "model": model[0],
                     "interval_s": interval, "gpu_causes": [cause] * ngpu}
            if layout == "smi":
                name += ".csv"
                write_smi(os.path.join(out, name), model, samples, base, True)
            elif layout == "smi_nohdr":
                name += ".csv"
                write_smi(os.path.join(out, name), model, samples, base, False)
                label["columns"] = ",".join(SMI_COLS)
            elif layout == "dmon":
                name += ".txt"
                write_dmon(os.path.join(out, name), model, samples, base)
                label["gpu_name"] = model[0]
            elif layout == "dcgm":
                name += ".txt"
                write_dcgm(os.path.join(out, name), model, samples)
                label["gpu_name"] = model[0]
            else:
                name += ".csv"
                write_generic(os.path.join(out, name), model, samples, base)
            label["file"] = name
            labels.append(label)
    with open(os.path.join(out, "labels.jsonl"), "w") as f:
        for lab in labels:
            f.write(json.dumps(lab) + "\n")
    print(f"{len(labels)} runs in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
