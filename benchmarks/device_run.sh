#!/usr/bin/env bash
# One device call that checks and measures everything GPU-side: the GPU tests, then the benchmarks, each step with
# its own time limit so one slow step cannot hide the others. Run by the device tool from the repository root with
# `carry: [".whl"]` (expecttest, pytest-xdist, execnet and ninja wheels):
#   STEPS="tests overhead models" bash benchmarks/device_run.sh        (results land in $OUT)
# Steps (STEPS, in this order; default all): tests overhead models encoders cudnn_host conv attention masks softcap
# sinks alibi bias host speed decode conv_update distributed demo, and bwd_tiles, native, gap and mask_tiles when
# named. Every step's output goes to $OUT/steps.log (the device tool returns at most 8 files); the benchmarks that
# write a table write it to $OUT/<step>.md. Knobs: TESTS (test files or node ids), TESTS_K (a pytest -k expression,
# spaces allowed), MODELS, MODEL_STEPS, MODEL_BUDGET (seconds for one model's variants),
# <STEP>_LIMIT (seconds), <STEP>_ARGS (a benchmark's arguments).
set -u
OUT="${OUT:-/tmp/out}"; mkdir -p "$OUT"
LOG="$OUT/steps.log"
export PYTHONUNBUFFERED=1
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site
  export PATH="/tmp/site/bin:$PATH"  # ninja, for the native backward's extension (kernels/native.py)
fi
# The package is not installed there: map patterns/ and lowerings/ as pyproject does.
ln -sfn ../lowerings inductor_conv/lowerings
ln -sfn ../patterns inductor_conv/patterns
export PYTHONPATH="$PWD:${PYTHONPATH:-}"
python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__, torch.cuda.get_device_name())" | tee -a "$LOG"
STEPS=" ${STEPS:-tests overhead models encoders cudnn_host conv attention masks softcap sinks alibi bias host speed decode conv_update distributed demo} "
want() { [[ "$STEPS" == *" $1 "* ]]; }
step() {  # step NAME SECONDS COMMAND...   (output appended to $LOG as it comes, the tail printed at the end)
  local name=$1 limit=$2; shift 2
  local start=$SECONDS
  echo "=== $name (limit ${limit}s)" | tee -a "$LOG"
  timeout "$limit" "$@" > "/tmp/step_$name.txt" 2>&1
  local rc=$?
  cat "/tmp/step_$name.txt" >> "$LOG"
  echo "rc=$rc in $((SECONDS - start)) s" | tee -a "$LOG"
  tail -n "${TAIL:-12}" "/tmp/step_$name.txt"
}
GPU_TESTS="tests/test_ops_eager_path.py tests/test_kernels_causal_conv1d.py tests/test_kernels_attention.py tests/test_mla.py
  tests/test_attention_decode.py tests/test_causal_conv1d_update.py tests/test_gpu_cudagraphs.py
  tests/test_inductor_guard.py tests/test_lowerings_causal_conv1d.py tests/test_lowerings_attention.py
  tests/test_patterns_attention.py tests/test_gpu_distributed.py tests/test_gpu_models.py tests/test_hf_models.py
  tests/test_attention_sinks.py tests/test_table_grad.py tests/test_ops_attention.py tests/test_native_backward.py"
want tests && TAIL=30 step tests "${TESTS_LIMIT:-330}" python3 -m pytest -q -p no:cacheprovider -m gpu -n 12 \
  --maxfail=30 -rf ${TESTS_K:+-k "$TESTS_K"} ${TESTS:-$GPU_TESTS}
want overhead && TAIL=60 step overhead "${OVERHEAD_LIMIT:-120}" python3 benchmarks/overhead.py --out "$OUT/overhead.md" \
  ${OVERHEAD_ARGS:-}
want models && TAIL=40 step models "${MODELS_LIMIT:-570}" python3 benchmarks/models.py \
  --models "${MODELS:-llama,llama_p0,gpt2,gemma2,qwen3,mamba,mamba2,lfm2,nemotron_h,qwen3_next}" \
  --steps "${MODEL_STEPS:-10}" --budget "${MODEL_BUDGET:-90}" --out "$OUT/models.md" ${MODELS_ARGS:-}
want encoders && TAIL=20 step encoders "${ENCODERS_LIMIT:-560}" python3 benchmarks/models.py --models encoders \
  --steps "${MODEL_STEPS:-10}" --budget "${ENCODERS_BUDGET:-150}" --variants inductor,plugin --out "$OUT/encoders.md" \
  ${ENCODERS_ARGS:-}
want cudnn_host && TAIL=20 step cudnn_host "${CUDNN_HOST_LIMIT:-180}" python3 benchmarks/diagnostics/cudnn_host.py
want conv && TAIL=40 step conv "${CONV_LIMIT:-90}" python3 benchmarks/conv.py ${CONV_ARGS---quick}
want attention && TAIL=80 step attention "${ATTENTION_LIMIT:-120}" python3 benchmarks/attention.py \
  ${ATTENTION_ARGS---quick}
want masks && TAIL=60 step masks "${MASKS_LIMIT:-240}" python3 benchmarks/attention_masks.py --out "$OUT/masks.md" \
  ${MASKS_ARGS---quick}
want softcap && TAIL=20 step softcap "${SOFTCAP_LIMIT:-120}" python3 benchmarks/attention_softcap.py \
  ${SOFTCAP_ARGS---quick}
want sinks && TAIL=20 step sinks "${SINKS_LIMIT:-120}" python3 benchmarks/attention_sinks.py ${SINKS_ARGS---quick}
want alibi && TAIL=20 step alibi "${ALIBI_LIMIT:-120}" python3 benchmarks/attention_alibi.py ${ALIBI_ARGS---quick}
want bias && TAIL=20 step bias "${BIAS_LIMIT:-150}" python3 benchmarks/attention_bias.py --out "$OUT/bias.md" \
  ${BIAS_ARGS:-}
want host && TAIL=80 step host "${HOST_LIMIT:-200}" python3 benchmarks/diagnostics/model_host.py \
  --models "${HOST_MODELS:-parakeet}" ${HOST_ARGS:-}
want speed && TAIL=60 step speed "${SPEED_LIMIT:-560}" python3 benchmarks/diagnostics/model_speed.py ${SPEED_TYPES:-} \
  --budget "${SPEED_BUDGET:-90}" --out "$OUT/speed.md" ${SPEED_ARGS:-}
want decode && TAIL=40 step decode "${DECODE_LIMIT:-120}" python3 benchmarks/attention_decode.py \
  --out "$OUT/decode.md" ${DECODE_ARGS:-}
want conv_update && TAIL=40 step conv_update "${CONV_UPDATE_LIMIT:-90}" python3 benchmarks/conv_update.py \
  ${CONV_UPDATE_ARGS:-}
want distributed && TAIL=30 step distributed "${DISTRIBUTED_LIMIT:-180}" torchrun --standalone --nproc-per-node 1 \
  benchmarks/distributed.py --out "$OUT/distributed.md" ${DISTRIBUTED_ARGS:-}
want demo && step demo "${DEMO_LIMIT:-120}" python3 -m inductor_conv demo
# The eager ops' C++ backward node (Note [native backward]; not in the default list): its GPU tests, then the host
# time of both eager ops by phase and with the node on and off.
# (The tests took 225 s in one process on an H100, most of it compiling kernels: four workers.)
want native && TAIL=40 step native "${NATIVE_LIMIT:-420}" bash -c "python3 -m pytest -q -p no:cacheprovider -n 4 \
  tests/test_native_backward.py; python3 benchmarks/diagnostics/host_phases.py"
# Where the eager ops' host and wall time go at overhead.py's tiny shapes (not in the default list): the wall / host
# comparison with the CUDA calls and kernels of one call (also without dropout, beside SDPA's backends), the phases
# of one call.
want gap && TAIL=80 step gap "${GAP_LIMIT:-300}" bash -c "python3 benchmarks/diagnostics/wall_gap.py; \
  python3 benchmarks/diagnostics/host_phases.py"
# The attention backward's tiles at Gemma 2's head dim 256 (diagnostics/attention_bwd_tiles.py; not in the default
# list): BWD_TILES_ARGS='--tiles "64,64,8,2;32,64,8,2" --p 0,0.1' and the like.
want bwd_tiles && TAIL=30 step bwd_tiles "${BWD_TILES_LIMIT:-240}" bash -c \
  "python3 benchmarks/diagnostics/attention_bwd_tiles.py ${BWD_TILES_ARGS:-} | tee '$OUT/bwd_tiles.md'"
# The compiled masked templates against is_causal at other tiles or configs (diagnostics/mask_template_tiles.py; not in
# the default list): one run per line of MASK_TILES_ARGS, e.g. $'--p 0.1 --fwd 0 --bwd=\n--shape 4,8,4,2048,256 --p 0'.
want mask_tiles && TAIL=60 step mask_tiles "${MASK_TILES_LIMIT:-300}" bash -c \
  'while IFS= read -r line; do eval "python3 benchmarks/diagnostics/mask_template_tiles.py $line"; done <<< "$0"' \
  "${MASK_TILES_ARGS:---p 0.1 --fwd 0 --bwd=}"
exit 0
