#!/usr/bin/env python3
"""Our NVML declarations (src/sources/nvml/nvml_types.hpp) against NVIDIA's own nvml.h.

Every struct, union and constant the header declares is listed by parsing it; one small C++
program printing each struct's size, each member's offset and each constant's value is compiled
twice, once against our header and once against NVIDIA's, and the two outputs must be equal.

usage: check_layout.py CXX SOURCE_DIR NVIDIA_ROOT WORK_DIR
"""
import re
import subprocess
import sys
from pathlib import Path

# Our name -> NVIDIA's, where they differ on purpose.
ALIASES = {"kGpmMetricCapacity": "NVML_GPM_METRIC_MAX"}

# Declarations newer than the nvml.h in Debian 12's libnvidia-ml-dev (CUDA 11.8's header: field
# ids end at NVML_FI_MAX 167, nvmlValue_t has no int or short member), which the 535 driver
# library beside it implements. Each must really be absent from that header: a header that gains
# one fails this test until it is removed from here (and then it is compared like the others).
NEWER_THAN_HEADER = {
    "NVML_FI_DEV_POWER_AVERAGE", "NVML_FI_DEV_POWER_INSTANT",
    "NVML_VALUE_TYPE_SIGNED_INT", "NVML_VALUE_TYPE_UNSIGNED_SHORT",
    "nvmlValue_t.siVal", "nvmlValue_t.usVal",
}


def parse_ours(text):
    """-> (records: [(name, [member paths])], constants: [name])"""
    text = re.sub(r"//[^\n]*", "", text)
    records, constants = [], []
    for body in re.findall(r"enum\s*:\s*\w+\s*\{(.*?)\};", text, re.S):
        for item in body.split(","):
            item = item.strip()
            if item:
                constants.append(re.match(r"(\w+)\s*=", item).group(1))
    constants += re.findall(r"inline\s+constexpr\s+[\w\s]+?\s(\w+)\s*=", text)
    # Records: walk the text with a brace-aware scanner so nested anonymous structs work.
    for m in re.finditer(r"^(struct|union)\s+(\w+)\s*\{", text, re.M):
        name, i = m.group(2), m.end()
        members, prefix_stack, depth = [], [], 1
        stmt = ""
        while depth:
            c = text[i]
            i += 1
            if c == "{":
                depth += 1
                prefix_stack.append(len(members))
                stmt = ""
            elif c == "}":
                depth -= 1
                if depth:
                    # `} name;` closes an anonymous nested record: prefix its members.
                    inner = re.match(r"\s*(\w+)\s*;", text[i:])
                    start = prefix_stack.pop()
                    members[start:] = [f"{inner.group(1)}.{x}" for x in members[start:]]
                    i += inner.end()
                stmt = ""
            elif c == ";":
                decl = stmt.strip()
                mm = re.match(r"^[\w\s\*]+?[\s\*](\w+)\s*(\[[^\]]*\])?$", decl)
                if not mm:
                    sys.exit(f"check_layout: cannot read member `{decl}` of {name}")
                members.append(mm.group(1))
                stmt = ""
            else:
                stmt += c
        records.append((name, members))
    return records, constants


def program(include, records, constants, rename):
    out = [f"#include {include}", "#include <cstddef>", "#include <cstdio>", "int main() {"]
    for name, members in records:
        out.append(f'  std::printf("sizeof {name} %zu\\n", sizeof({rename(name)}));')
        for m in members:
            out.append(f'  std::printf("offsetof {name}.{m} %zu\\n", offsetof({rename(name)}, {m}));')
    for c in constants:
        out.append(f'  std::printf("value {c} %llu\\n", static_cast<unsigned long long>({rename(c)}));')
    out.append("}")
    return "\n".join(out) + "\n"


def run(cxx, work, tag, src, flags):
    cpp, exe = work / f"layout_{tag}.cpp", work / f"layout_{tag}"
    cpp.write_text(src)
    subprocess.run([cxx, "-std=c++20", *flags, str(cpp), "-o", str(exe)], check=True)
    return subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout.splitlines()


def main():
    cxx, source_dir, root, work = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3]), Path(sys.argv[4])
    header = root / "usr/include/nvml.h"
    if not header.is_file():
        sys.exit(f"check_layout: {header} missing: run scripts/fetch-nvidia-nvml.sh")
    work.mkdir(parents=True, exist_ok=True)
    ours = source_dir / "src/sources/nvml/nvml_types.hpp"
    records, constants = parse_ours(ours.read_text())
    nvidia_text = header.read_text(errors="replace")
    failures = []
    present = []
    for c in constants:
        there = re.search(rf"\b{ALIASES.get(c, c)}\b", nvidia_text) is not None
        if c in NEWER_THAN_HEADER:
            if there:
                failures.append(f"{c} is in NVIDIA's header now: drop it from NEWER_THAN_HEADER")
            continue
        if not there:
            failures.append(f"{c}: not in NVIDIA's header")
            continue
        present.append(c)
    for name, members in records:
        if not re.search(rf"\b{name}\b", nvidia_text):
            failures.append(f"{name}: no such type in NVIDIA's header")
        for m in [m for m in members if f"{name}.{m}" in NEWER_THAN_HEADER]:
            members.remove(m)
            probe = f"#include <nvml.h>\n#include <cstddef>\nstd::size_t x = offsetof({name}, {m});\n"
            (work / "probe.cpp").write_text(probe)
            cc = subprocess.run([cxx, "-std=c++20", "-fsyntax-only", f"-I{header.parent}",
                                 str(work / "probe.cpp")], capture_output=True)
            if cc.returncode == 0:
                failures.append(f"{name}.{m} is in NVIDIA's header now: drop it from NEWER_THAN_HEADER")
    mine = run(cxx, work, "ours", program('"sources/nvml/nvml_types.hpp"', records, present, lambda n: n),
               [f"-I{source_dir / 'src'}"])
    theirs = run(cxx, work, "nvidia", program("<nvml.h>", records, present, lambda n: ALIASES.get(n, n)),
                 [f"-I{header.parent}"])
    for a, b in zip(mine, theirs):
        if a != b:
            failures.append(f"ours: {a}  NVIDIA: {b}")
    if len(mine) != len(theirs):
        failures.append("the two programs printed different numbers of lines")
    checks = sum(1 + len(m) for _, m in records) + len(present)
    if failures:
        print(f"check_layout: {len(failures)} difference(s) from {header}:")
        print("\n".join("  " + f for f in failures))
        sys.exit(1)
    print(f"check_layout: {len(records)} structs/unions, {checks - len(present)} sizes and offsets, "
          f"{len(present)} constants equal to NVIDIA's nvml.h "
          f"({len(NEWER_THAN_HEADER)} declarations newer than that header, absent from it)")


if __name__ == "__main__":
    main()
