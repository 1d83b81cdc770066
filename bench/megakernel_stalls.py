"""Warp stall samples of a megakernel per task function, from ncu's SASS source page as CSV
(bench/megakernel_once.py says how to make it):

    python bench/megakernel_stalls.py mk_sass.csv[.gz] [--top 40]

Task functions are __noinline__ (codegen/cuda_megakernel.py), so each is a range of its own in the
SASS, starting at a `CALL.REL.NOINC` target; everything before the first target is the dispatcher.
The page names no functions, so each range is printed with what identifies it: its size, its
tensor-core (HMMA), special-function (MUFU), barrier and shuffle counts, and the instructions it
executed. Per range: its share of all samples, and the share of its own samples per stall reason
(`no_inst`: waiting for instructions; `long_sb`: for memory; `barrier`: at a barrier)."""
import argparse
import bisect
import csv
import gzip
import re
import sys
from collections import Counter, defaultdict

REASONS = ["stall_long_sb", "stall_barrier", "stall_no_inst", "stall_wait", "stall_short_sb", "stall_membar", "stall_lg",
           "stall_math", "stall_mio", "stall_selected", "stall_not_selected", "stall_branch_resolving", "stall_sleep"]
OPS = ["HMMA", "MUFU", "BAR", "SHFL", "LDG", "STG", "LDGSTS", "ATOM", "RED", "CALL"]


def read(path: str):
    op = gzip.open if path.endswith(".gz") else open
    with op(path, "rt", errors="replace") as fh:
        lines = fh.read().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith('"Address"'))
    table = list(csv.reader(lines[start:]))
    return table[0], [r for r in table[1:] if r and r[0].startswith("0x")]


def num(x: str) -> float:
    try:
        return float(x.replace(",", ""))
    except ValueError:
        return 0.0


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("csv")
    ap.add_argument("--top", type=int, default=40)
    a = ap.parse_args()
    head, rows = read(a.csv)
    col = {h: i for i, h in enumerate(head)}
    src, samples, executed = col["Source"], col["Warp Stall Sampling (All Samples)"], col.get("Instructions Executed")
    targets: list = []
    for r in rows:
        m = re.search(r"CALL\.REL\.NOINC (0x[0-9a-f]+)", r[src])
        if m and int(m.group(1), 16) not in targets:
            targets.append(int(m.group(1), 16))
    starts = sorted(targets)
    name = {t: f"fn@{t - int(rows[0][0], 16):#x} (call #{targets.index(t)})" for t in starts}
    acc: dict = defaultdict(Counter)
    for r in rows:
        j = bisect.bisect_right(starts, int(r[0], 16)) - 1
        f = name[starts[j]] if j >= 0 else "dispatcher"
        c = acc[f]
        c["samples"] += num(r[samples])
        c["instrs"] += 1
        c["executed"] += num(r[executed]) if executed is not None else 0
        for reason in REASONS:
            if reason in col:
                c[reason] += num(r[col[reason]])
        words = r[src].split()
        op = (words[1] if words and words[0].startswith("@") and len(words) > 1 else words[0] if words else "").split(".")[0]
        if op in OPS:
            c[op] += 1
    total = sum(c["samples"] for c in acc.values()) or 1.0
    print("function".ljust(26), "share", "instrs", " ".join(o.rjust(5) for o in OPS), " ".join(r[6:14].rjust(8) for r in REASONS))
    for f, c in sorted(acc.items(), key=lambda kv: -kv[1]["samples"])[:a.top]:
        own = c["samples"] or 1.0
        print(f[:26].ljust(26), f"{100 * c['samples'] / total:5.1f}", str(c["instrs"]).rjust(6),
              " ".join(str(c[o]).rjust(5) for o in OPS), " ".join(f"{100 * c[r] / own:8.1f}" for r in REASONS))
    return 0


if __name__ == "__main__":
    sys.exit(main())
