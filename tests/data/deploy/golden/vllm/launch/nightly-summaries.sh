#!/bin/sh
# Launch commands planopt deploy wrote from the plan (one per group); the manifests run
# the same commands. Weights are read from /models/<model>.

# nightly-summaries: coreweave-h200-sxm · fp8 · tp1 — vllm v0.11.2
vllm serve /models/llama-3.1-8b --served-model-name llama-3.1-8b --host 0.0.0.0 --port 8000 --tensor-parallel-size 1 --quantization fp8 --kv-cache-dtype fp8 --max-num-seqs 585 --max-model-len 3300 --gpu-memory-utilization 0.9
