"""The thirty-fourth session's CPU correctness survey of the real KernelBench as one table: for each
(level, precision, problem) the last run listed wins (reruns at larger sizes of problems the
shrunk sizes broke in PyTorch itself). `python bench/kb_survey_summary.py`; the runs and how they
were made: bench/results/kb-cpu-survey-2026-11-27/README.md."""
import json
import sys
import collections
D = "bench/results/kb-cpu-survey-2026-11-27/"
runs = {  # in order: later files override earlier ones for the problems they hold
    ("1", "fp32"): ["level1-fp32-shrink8.json"],
    ("2", "fp32"): ["level2-fp32-shrink8.json", "level2-fp32-shrink2-reruns.json", "level2-fp32-full-size-batch2.json"],
    ("3", "fp32"): ["level3-fp32-shrink4.json", "level3-fp32-full-size-batch2.json", "level3-fp32-efficientnetb2-full-size-batch2.json"],
    ("1", "bf16"): ["level1-bf16-shrink8.json", "level1-bf16-46-rerun.json"],
    ("2", "bf16"): ["level2-bf16-shrink8.json", "level2-bf16-shrink2-reruns.json", "level2-bf16-full-size-batch2.json"],
    ("3", "bf16"): ["level3-bf16-shrink4-partial.json"],
}
print("| level | precision | problems checked | correct | incorrect, eager as far off | not checkable here |")
print("|---|---|---|---|---|---|")
for (lv, pr), files in runs.items():
    final = {}
    for f in files:
        try:
            for r in json.load(open(D + f))["problems"]:
                final[r["name"]] = r
        except FileNotFoundError:
            print("missing", f, file=sys.stderr)
    c = collections.Counter(r["status"] for r in final.values())
    bad = [r for r in final.values() if r["status"] == "incorrect"]
    eager_too = [r for r in bad if r.get("eager_within_tol") is False]
    other = [r["name"] + ": " + r["status"] for r in final.values() if r["status"] not in ("correct", "incorrect")]
    wrong = [r["name"] for r in bad if r not in eager_too]
    print(f"| {lv} | {pr} | {len(final)} | {c['correct']} | {len(eager_too)} ({', '.join(r['name'] for r in eager_too) or '-'})"
          f"{'; WRONG: ' + ', '.join(wrong) if wrong else ''} | {'; '.join(other) or '-'} |")
