#!/bin/sh
# Launch commands planopt deploy wrote from the plan (one per group); the manifests run
# the same commands. Weights are read from /models/<model>.

# doc-extraction: coreweave-h100-sxm · fp8 · tp2 — vllm v0.11.2
vllm serve /models/llama-3.3-70b --served-model-name llama-3.3-70b --host 0.0.0.0 --port 8000 --tensor-parallel-size 2 --quantization fp8 --kv-cache-dtype fp8 --max-num-seqs 30 --max-model-len 16384 --gpu-memory-utilization 0.9
