#!/usr/bin/env python3
"""Writes HWiNFO logs of a whole machine for tests/data/logs/tools/, as HWiNFO64 writes them
(its CSV log: "Date","Time", then one column per sensor reading with its unit in brackets, in
the machine's sensor order, so a desktop's GPU comes after a couple of hundred CPU, memory, board
and drive columns; latin-1; d.m.yyyy and h:m:s.ms without leading zeros):

- hwinfo_machine.csv: no footer. The header is longer than the 4 KiB gpudoctor looks at to tell
  formats, and the RAM's "Memory Clock [MHz]" comes before the GPU's "GPU Memory Clock [MHz]".
- hwinfo_machine_footer.csv: the same with HWiNFO's footer: the header again and a line naming
  each column's sensor group ("GPU [#0]: NVIDIA GeForce RTX 3060: ...").

An RTX 3060 at 170 W, 99 % busy, then idle; "Total GPU Power [% of TDP]" says 100 % and 10 %.
Run: python3 tests/data/make_machine_logs.py
"""
import os

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "logs", "tools")

CPU = ["Virtual Memory Committed [MB]", "Physical Memory Used [MB]", "Memory Clock [MHz]",
       "Total CPU Usage [%]", "CPU Package Power [W]", "Motherboard [\xb0C]"]
for core in range(12):
    CPU += [f"Core {core} Clock (perf #{core % 4 + 1}/1) [MHz]", f"Core {core} T0 Usage [%]",
            f"Core {core} Power [W]", f"Core {core} VID [V]", f"Core {core} C6 Residency [%]"]
for drive in range(3):
    CPU += ["Read Activity [%]", "Write Activity [%]", "Read Rate [MB/s]", "Write Rate [MB/s]",
            "Drive Temperature [\xb0C]"]
CPU += [f"Temperature {i} [\xb0C]" for i in range(60)]
CPU += [f"VIN{i} [V]" for i in range(100)]
GPU = ["GPU Temperature [\xb0C]", "GPU Power [W]", "GPU Clock [MHz]", "GPU Memory Clock [MHz]",
       "GPU Core Load [%]", "GPU Memory Controller Load [%]", "Performance Limit - Power [Yes/No]",
       "Performance Limit - Thermal [Yes/No]", "Total GPU Power [% of TDP] [%]"]


def group(name):
    if name in GPU:
        return "GPU [#0]: NVIDIA GeForce RTX 3060: " + ("Enhanced" if "Limit" in name else "")
    if name.startswith("Core") or name.startswith("CPU") or name.startswith("Total CPU"):
        return "CPU [#0]: AMD Ryzen 5 5600X"
    if "Drive" in name or "Read" in name or "Write" in name:
        return "S.M.A.R.T.: WDC WDS100T2B0A"
    return "System: ASUS PRIME B550M"


def rows():
    out = []
    for i in range(20):
        busy = i < 12
        sec = 7 + 2 * i
        cpu = [f"{1000 + i}", "9446", "1800.0", "12.5", "45.1", "38"] + ["1.0"] * (len(CPU) - 6)
        gpu = ["66" if busy else "41", "170.2" if busy else "17.0", "1852" if busy else "210",
               "7501" if busy else "405", "99" if busy else "0", "41" if busy else "0",
               "Yes" if busy else "No", "No", "100.1" if busy else "10.0"]
        out.append([f"9.1.2026", f"0:5:{sec}.93"] + cpu + gpu)
    return out


def write(name, footer):
    header = ["Date", "Time"] + CPU + GPU
    text = ",".join(f'"{h}"' if i > 1 else h for i, h in enumerate(header)) + ",\r\n"
    for r in rows():
        text += ",".join(r) + ",\r\n"
    if footer:
        text += ",".join(f'"{h}"' for h in header) + ",\r\n"
        text += ",".join(['""', '""'] + [f'"{group(h)}"' for h in CPU + GPU]) + ",\r\n"
    with open(os.path.join(HERE, name), "wb") as f:
        f.write(text.encode("latin-1"))


if __name__ == "__main__":
    write("hwinfo_machine.csv", False)
    write("hwinfo_machine_footer.csv", True)
