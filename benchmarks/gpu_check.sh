#!/usr/bin/env bash
# The GPU device check of dlc's nvptx target: one short run (a few minutes) on a machine with
# an NVIDIA GPU and its driver. Run from the repository root: benchmarks/gpu_check.sh
#   1. tests/gpu (numerical tests against onnx.reference, index checks, torch tensors);
#      without a usable GPU they are skipped, with the reason, and the script says so;
#   2. benchmarks/gpu_zoo.py: ResNet-50 (torchvision), BERT-base and GPT-2 small
#      (transformers), random weights, compiled by dlc.gpu and compared with onnxruntime
#      (onnxruntime-gpu where installed, else its CPU provider) and eager PyTorch on CUDA, with
#      the latency of each (see that file for what each figure includes).
# Environment: PYTHON (default .venv/bin/python), REPEAT (default 20), OUT (default
# build/gpu_check) for the logs and JSON results, MODELS (default resnet50,bert,gpt2),
# MODEL_TIMEOUT (seconds per model, default 300).
set -uo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-.venv/bin/python}
REPEAT=${REPEAT:-20}
OUT=${OUT:-build/gpu_check}
MODELS=${MODELS:-resnet50,bert,gpt2}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1

"$PYTHON" -c "from dlc.runtime import cuda; r = cuda.unavailable(); print('GPU:', r or cuda.device())"
"$PYTHON" -m pytest -p no:cacheprovider -rs tests/gpu 2>&1 | tee "$OUT/tests.txt"
tests=$?
zoo=0
for model in ${MODELS//,/ }; do  # (one process per model: a crash loses that model alone)
    timeout "${MODEL_TIMEOUT:-300}" "$PYTHON" benchmarks/gpu_zoo.py --models "$model" \
        --repeat "$REPEAT" --profile --out "$OUT/$model" 2>&1 | grep -v -E "Warning|^  " \
        | tee -a "$OUT/zoo.txt"
    status=$?
    [ $status -eq 0 ] || { echo "$model: exit $status"; zoo=$status; }
done
echo "tests/gpu exit $tests, gpu_zoo exit $zoo; results in $OUT/MODEL/gpu_zoo.json"
exit $(( tests || zoo ))
