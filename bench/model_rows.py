"""bench/gpu_models.py's output lines as one summary line per model (for the device scripts, not a test):

    python3 bench/gpu_models.py ... | python3 bench/model_rows.py LABEL
"""
import json
import sys

label = sys.argv[1] if len(sys.argv) > 1 else ""
for line in sys.stdin:
    if "case" not in line:
        continue
    try:
        r = json.loads(line)
    except ValueError:
        continue
    print(label, r["case"], r.get("dtype", ""), r.get("ember_ms"), "eager", r.get("eager_ms"),
          "compile", r.get("torch_compile_ms"), "err", r.get("ember_err"))
