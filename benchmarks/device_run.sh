#!/usr/bin/env bash
# One device call that checks and measures everything GPU-side: GPU tests, both benchmarks (quick), the demo.
# Run by the device tool from the repository root with `carry: [".whl"]` (fla-core and expecttest wheels):
#   bash benchmarks/device_run.sh            (results land in $OUT)
# Each step has its own time limit so one slow step cannot hide the others.
set -u
OUT="${OUT:-/tmp/out}"; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site
fi
# The package is not installed there: map patterns/ and lowerings/ as pyproject does.
ln -sfn ../lowerings inductor_conv/lowerings
ln -sfn ../patterns inductor_conv/patterns
export PYTHONPATH="$PWD:${PYTHONPATH:-}"
python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__, torch.cuda.get_device_name())"
step() {  # step NAME SECONDS COMMAND...
  local name=$1 limit=$2; shift 2
  echo "=== $name (limit ${limit}s)"
  timeout "$limit" "$@" > "$OUT/$name.txt" 2>&1
  echo "rc=$?"; tail -n "${TAIL:-12}" "$OUT/$name.txt"
}
step gpu_conv_tests 90 python3 -m pytest -q -m gpu -n 4 --maxfail=20 tests/test_kernels_causal_conv1d.py tests/test_lowerings_causal_conv1d.py
[ -n "${SKIP_ATTENTION_TESTS:-}" ] || step gpu_attention_tests "${ATTENTION_TEST_LIMIT:-180}" python3 -m pytest -q -m gpu -n 8 --maxfail=20 tests/test_kernels_attention.py tests/test_lowerings_attention.py
step gpu_models 300 python3 -m pytest -q -m gpu tests/test_gpu_models.py tests/test_hf_models.py
# CONV_ARGS / ATTENTION_ARGS / SOFTCAP_ARGS: "--quick" by default, "" for every shape; SKIP="conv attention softcap
# demo" skips steps;
# CONV_TILES=1 adds the conv tile sweep (benchmarks/conv_tiles.py).
skip() { [[ " ${SKIP:-} " == *" $1 "* ]]; }
[ -z "${CONV_TILES:-}" ] || TAIL=60 step conv_tiles "${CONV_TILES_LIMIT:-240}" python3 benchmarks/conv_tiles.py ${CONV_TILES_ARGS:-}
skip conv || TAIL=40 step bench_conv "${CONV_LIMIT:-90}" python3 benchmarks/conv.py ${CONV_ARGS---quick}
skip attention || TAIL=80 step bench_attention "${ATTENTION_LIMIT:-120}" python3 benchmarks/attention.py ${ATTENTION_ARGS---quick}
skip softcap || TAIL=20 step bench_softcap "${SOFTCAP_LIMIT:-120}" python3 benchmarks/attention_softcap.py ${SOFTCAP_ARGS---quick}
skip demo || step demo 120 python3 -m inductor_conv demo
exit 0
