#!/bin/sh
# Launch commands planopt deploy wrote from the plan (one per group); the manifests run
# the same commands. Weights are read from /models/<model>.

# autocomplete: coreweave-h100-sxm · fp8 · MIG 3g.40gb — vllm v0.11.2
vllm serve /models/qwen3-8b --served-model-name qwen3-8b --host 0.0.0.0 --port 8000 --tensor-parallel-size 1 --quantization fp8 --kv-cache-dtype fp8 --max-num-seqs 8 --max-model-len 2048 --gpu-memory-utilization 0.9
