#!/usr/bin/env bash
# The real-GPU check in one command (run it on a machine with an NVIDIA GPU and nvcc):
#   1. installs PyCUDA for this Python (pip builds it against the local CUDA toolkit),
#   2. runs the GPU test suite with MXREF_CUDA=pycuda (the same tests the emulator runs in CI),
#   3. runs benchmarks/bench_gpu.py (bandwidth, GEMM TFLOP/s, training samples/s).
# Usage: benchmarks/gpu_check.sh [python]      (default: python3)
set -euo pipefail
PY=${1:-python3}
cd "$(dirname "$0")/.."
nvidia-smi -L
"$PY" -m pip install -q "pycuda>=2022.1"
"$PY" -c "import pycuda.autoinit, pycuda.driver as d; print('PyCUDA sees', d.Device.count(), 'device(s)')"
export MXREF_CUDA=pycuda PYTHONPATH=.
"$PY" -m pytest -q tests/_ext/cuda tests/ops/gpu tests/docs/test_howto_gpu_kernel.py
MXREF_CUDA_CUBLAS=0 "$PY" -m pytest -q tests/ops/gpu/test_gemm.py tests/ops/gpu/test_conv_pool.py   # the teaching GEMM
"$PY" benchmarks/bench_gpu.py
