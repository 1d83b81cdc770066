"""Warp stall samples of a megakernel per task function, from ncu's SASS source page as CSV
(bench/megakernel_once.py says how to make it):

    python bench/megakernel_stalls.py mk_sass.csv[.gz] [--top 40]

Task functions are __noinline__ (codegen/cuda_megakernel.py), so each is its own SASS function; the
instructions of one are summed. Columns summed: every one whose header names samples."""
import argparse
import csv
import gzip
import re
import sys
from collections import defaultdict

LABEL = re.compile(r"^\s*(?:Function\s*:\s*)?\.?(?:text\.)?([A-Za-z_][\w$]*)\s*:?\s*$")


def rows(path: str):
    op = gzip.open if path.endswith(".gz") else open
    with op(path, "rt", errors="replace") as fh:
        lines = fh.read().splitlines()
    start = next(i for i, line in enumerate(lines) if "Source" in line and "," in line)
    return list(csv.reader(lines[start:]))


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("csv")
    ap.add_argument("--top", type=int, default=40)
    a = ap.parse_args()
    table = rows(a.csv)
    head = table[0]
    src = head.index("Source")
    cols = [i for i, h in enumerate(head) if "ampl" in h]
    func = "(start)"
    acc: dict = defaultdict(lambda: [0.0] * len(cols))
    inst: dict = defaultdict(int)
    for r in table[1:]:
        if len(r) <= src:
            continue
        text = r[src].strip()
        m = LABEL.match(text) if not any(r[i].strip() for i in cols if i < len(r)) else None
        if m and not text.startswith(("@", "/*")):
            func = m.group(1)
            continue
        inst[func] += 1
        for j, i in enumerate(cols):
            try:
                acc[func][j] += float(r[i].replace(",", "")) if i < len(r) and r[i].strip() else 0.0
            except ValueError:
                pass
    total = [sum(v[j] for v in acc.values()) or 1.0 for j in range(len(cols))]
    print("function".ljust(40), "instrs", *[head[i][:28].rjust(28) for i in cols])
    for f_, v in sorted(acc.items(), key=lambda kv: -kv[1][0])[:a.top]:
        print(f_[:40].ljust(40), str(inst[f_]).rjust(6), *[f"{x:10.0f} {100 * x / t:5.1f}%".rjust(28) for x, t in zip(v, total)])
    return 0


if __name__ == "__main__":
    sys.exit(main())
