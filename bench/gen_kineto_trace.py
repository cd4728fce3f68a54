#!/usr/bin/env python3
"""A large PyTorch profiler (Kineto) trace for the reading bench (bench/RESULTS.md): the events of
a real trace repeated N times in one traceEvents array, each copy moved on by the trace's length
and its correlation ids by 10^8 so that launches still match their kernels. Write it under /tmp;
never commit it.

    python3 bench/gen_kineto_trace.py ../shared/data/traces/hta/df_index_resolver_df_index_resolver.json.gz /tmp/trace-1g.json 22
"""
import gzip
import json
import sys


def main() -> None:
    src, out, copies = sys.argv[1], sys.argv[2], int(sys.argv[3])
    opener = gzip.open if src.endswith(".gz") else open
    with opener(src, "rt") as f:
        trace = json.load(f)
    events = trace.pop("traceEvents")
    stamps = [e["ts"] for e in events if isinstance(e.get("ts"), (int, float))]
    shift = max(stamps) - min(stamps) + 1000
    with open(out, "w") as f:
        f.write(json.dumps(trace)[:-1] + ', "traceEvents": [')
        first = True
        for k in range(copies):
            for e in events:
                if k:
                    e = dict(e)
                    if isinstance(e.get("ts"), (int, float)):
                        e["ts"] += k * shift
                    args = e.get("args")
                    if isinstance(args, dict) and isinstance(args.get("correlation"), int):
                        e["args"] = dict(args, correlation=args["correlation"] + k * 10**8)
                f.write(("" if first else ",\n") + json.dumps(e))
                first = False
        f.write("]}\n")


if __name__ == "__main__":
    main()
