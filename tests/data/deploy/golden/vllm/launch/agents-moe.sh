#!/bin/sh
# Launch commands planopt deploy wrote from the plan (one per group); the manifests run
# the same commands. Weights are read from /models/<model>.

# agents-moe: coreweave-h200-sxm · fp8 · tp4 — vllm v0.11.2
vllm serve /models/qwen3-235b-a22b --served-model-name qwen3-235b-a22b --host 0.0.0.0 --port 8000 --tensor-parallel-size 4 --quantization fp8 --kv-cache-dtype fp8 --max-num-seqs 177 --max-model-len 16384 --gpu-memory-utilization 0.9
