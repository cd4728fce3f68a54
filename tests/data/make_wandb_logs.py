#!/usr/bin/env python3
"""Writes the W&B fixtures of tests/data/logs/wandb/, following W&B's own description of its files and
sharing no code with gpudoctor's reader:

- run-fixture.wandb: a run file as wandb/sdk/internal/datastore.py writes it (header ":W&B",
  0xBEE1, version 0; 32 KiB blocks of records with zlib.crc32 over type and data, FULL or
  FIRST/MIDDLE/LAST), holding protobuf Records of wandb/proto/wandb_internal.proto: a RunRecord
  (host), StatsRecords (timestamp, items "gpu.N.key" = JSON value) every 15 s, one large
  OutputRecord that spans blocks, and "gpu.process.0.*" items as W&B adds for the run's GPU.
- wandb-events.jsonl: the older text form, "system.gpu.N.key" with "_timestamp"/"_runtime".
- run-2025-split.wandb: as SDKs from 2024 on write it: each round's figures in several
  StatsRecords a few ms apart (the GPUs' "gpu.N.*" and "gpu.process.N.*", then the CPU's, disk's,
  network's and memory's, each on its own), and the run's metadata in an EnvironmentRecord
  (Record field 26: gpu, gpu_count, gpu_nvidia with each GPU's name and UUID). Two RTX 4090s.
- run-2023-percent.wandb: as the 2023 SDK writes it: powerWatts and powerPercent, no limit key
  and no GPU name in the file (GPU 0 at 300 W = 66.67 % of a 450 W limit).
- ../../no-gpu-metric/run-no-gpu.wandb: system metrics of a machine without a GPU (cpu, disk, network only).

Two GPUs for 10 minutes: GPU 0 works (98 % util, 385 of 400 W), GPU 1 sits idle (0 %, 60 W).
Run: python3 tests/data/make_wandb_logs.py (writes tests/data/logs/wandb/).
"""
import json
import os
import struct
import zlib

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "logs", "wandb")
BLOCK = 32768
START = 1733047200  # 2024-12-01 10:00:00 UTC


def varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def field_varint(num, value):
    return varint(num << 3 | 0) + varint(value)


def field_bytes(num, data):
    if isinstance(data, str):
        data = data.encode()
    return varint(num << 3 | 2) + varint(len(data)) + data


def gpu_items(t):
    items = []
    for gpu, (util, power, sm) in enumerate([(98 - (t % 3), 385.0 + (t % 5), 1980), (0, 60.5, 345)]):
        items += [
            (f"gpu.{gpu}.gpu", util),
            (f"gpu.{gpu}.memory", 41 if gpu == 0 else 0),
            (f"gpu.{gpu}.memoryAllocated", 52.5 if gpu == 0 else 0.9),
            (f"gpu.{gpu}.temp", 71 if gpu == 0 else 33),
            (f"gpu.{gpu}.powerWatts", power),
            (f"gpu.{gpu}.enforcedPowerLimitWatts", 400.0),
            (f"gpu.{gpu}.powerPercent", round(power / 400.0 * 100, 2)),
            (f"gpu.{gpu}.smClock", sm),
            (f"gpu.{gpu}.memoryClock", 1593),
        ]
    items += [("gpu.process.0.gpu", 98), ("gpu.process.0.powerWatts", 385.0), ("cpu", 12.5)]
    return items


def stats_record(t):
    ts = field_varint(1, START + t) + field_varint(2, 250_000_000)
    body = field_varint(1, 0) + field_bytes(2, ts)
    for key, value in gpu_items(t):
        body += field_bytes(3, field_bytes(1, key) + field_bytes(16, json.dumps(value)))
    return field_varint(1, t // 15 + 2) + field_bytes(7, body)


class Log:
    def __init__(self):
        self.buf = bytearray(b":W&B" + struct.pack("<HB", 0xBEE1, 0))

    def _record(self, dtype, data):
        crc = zlib.crc32(data, zlib.crc32(bytes([dtype]))) & 0xFFFFFFFF
        self.buf += struct.pack("<IHB", crc, len(data), dtype) + data

    def write(self, data):
        left = BLOCK - len(self.buf) % BLOCK
        if left < 7:
            self.buf += b"\0" * left
            left = BLOCK
        if len(data) + 7 <= left:
            self._record(1, data)
            return
        room = left - 7
        self._record(2, data[:room])
        data = data[room:]
        while len(data) > BLOCK - 7:
            self._record(3, data[: BLOCK - 7])
            data = data[BLOCK - 7 :]
        self._record(4, data)


def stats_items(t, items, nanos=250_000_000):
    ts = field_varint(1, START + t) + field_varint(2, nanos)
    body = field_varint(1, 0) + field_bytes(2, ts)
    for key, value in items:
        body += field_bytes(3, field_bytes(1, key) + field_bytes(16, json.dumps(value)))
    return field_varint(1, 1) + field_bytes(7, body)


def write_split():
    log = Log()
    run = field_bytes(1, "split1") + field_bytes(13, "ws-4090")
    log.write(field_varint(1, 1) + field_bytes(17, run))
    env = field_bytes(1, "Linux-6.8.0-x86_64") + field_bytes(18, "NVIDIA GeForce RTX 4090")
    env += field_varint(19, 2)
    for i in range(2):
        info = field_bytes(1, "NVIDIA GeForce RTX 4090") + field_varint(2, 25757220864)
        info += field_bytes(4, "Ada") + field_bytes(5, f"GPU-4090000{i}-0000-0000-0000-000000000000")
        env += field_bytes(24, info)
    log.write(field_varint(1, 2) + field_bytes(26, env))
    for t in range(0, 300, 15):
        gpu = []
        for g, (util, power) in enumerate([(97, 400.0 + t % 7), (0, 21.5)]):
            gpu += [(f"gpu.{g}.gpu", util), (f"gpu.{g}.memory", 30 if g == 0 else 0),
                    (f"gpu.{g}.powerWatts", power), (f"gpu.{g}.powerPercent", round(power / 4.5, 2)),
                    (f"gpu.{g}.temp", 66 if g == 0 else 30)]
        gpu += [("gpu.process.0.gpu", 97), ("gpu.process.0.powerWatts", 400.0 + t % 7)]
        log.write(stats_items(t, gpu, 100_000_000))
        log.write(stats_items(t, [("cpu", 8.5), ("proc.cpu.threads", 64)], 120_000_000))
        log.write(stats_items(t, [("disk./.usageGB", 512.0)], 135_000_000))
        log.write(stats_items(t, [("network.sent", 1e6 + t), ("network.recv", 2e6 + t)], 150_000_000))
        log.write(stats_items(t, [("memory_percent", 21.5)], 170_000_000))
    with open(os.path.join(HERE, "run-2025-split.wandb"), "wb") as f:
        f.write(log.buf)


def write_percent():
    log = Log()
    log.write(field_varint(1, 1) + field_bytes(17, field_bytes(1, "pct1") + field_bytes(13, "old-box")))
    for t in range(0, 300, 30):
        items = [("gpu.0.gpu", 95), ("gpu.0.powerWatts", 300.0), ("gpu.0.powerPercent", 66.67),
                 ("gpu.0.temp", 70), ("cpu", 10.0)]
        log.write(stats_items(t, items))
    with open(os.path.join(HERE, "run-2023-percent.wandb"), "wb") as f:
        f.write(log.buf)


def write_no_gpu():
    log = Log()
    log.write(field_varint(1, 1) + field_bytes(17, field_bytes(1, "cpu1") + field_bytes(13, "laptop")))
    for t in range(0, 120, 15):
        log.write(stats_items(t, [("cpu", 35.0), ("disk./.usagePercent", 71.2), ("network.sent", 10.0 * t)]))
    with open(os.path.join(HERE, "..", "..", "no-gpu-metric", "run-no-gpu.wandb"), "wb") as f:
        f.write(log.buf)


def main():
    write_split()
    write_percent()
    write_no_gpu()
    log = Log()
    run = field_bytes(1, "fx1run") + field_bytes(3, "gpudoctor-fixture") + field_bytes(13, "trainer-07")
    log.write(field_varint(1, 1) + field_bytes(17, run))
    for t in range(0, 600, 15):
        log.write(stats_record(t))
        if t == 300:  # console output long enough to span a block boundary
            out = field_varint(1, 1) + field_bytes(3, "step loss " * 3600)
            log.write(field_varint(1, 999) + field_bytes(4, out))
    with open(os.path.join(HERE, "run-fixture.wandb"), "wb") as f:
        f.write(log.buf)

    with open(os.path.join(HERE, "wandb-events.jsonl"), "w") as f:
        for t in range(0, 600, 15):
            row = {f"system.{k}": v for k, v in gpu_items(t) if k.startswith("gpu.") and ".process." not in k}
            row["system.cpu"] = 12.5
            row.update({"_wandb": True, "_timestamp": START + t + 0.25, "_runtime": t})
            f.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()
