# Sourced by the device scripts (bench/gpu_*.sh): carried wheels on the path, Ember from this tree,
# $OUT made, and the machine and versions written to $OUT/env.txt (EXTRA_VERSIONS: more packages).
# (carry [".whl"], or only [".whl/serve"] when the tree is near the 64 MiB the device takes)
WHEELS=$(ls .whl/*.whl .whl/serve/*.whl 2>/dev/null)
[ -n "$WHEELS" ] && python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site $WHEELS 2>/dev/null && export PYTHONPATH=/tmp/site
export PYTHONPATH=$PWD:${PYTHONPATH:-} PYTHONUNBUFFERED=1 EMBER_CACHE_DIR=/tmp/ember_cache
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
  python3 -c "import importlib, sys; print(*(f'{m} {importlib.import_module(m).__version__}' for m in sys.argv[1:]))" cuda.core torch numpy ${EXTRA_VERSIONS:-}
  date -u; } 2>&1 | tee "$OUT/env.txt"
