#!/bin/sh
# Launch commands planopt deploy wrote from the plan (one per group); the manifests run
# the same commands. Weights are read from /models/<model>.

# autocomplete: coreweave-h100-sxm · fp8 · MIG 3g.40gb — sglang v0.5.5
#   note: sized on vllm; deployed on sglang: measure it (planopt calibrate PLAN --bench RUN.json --deployment autocomplete --manifests DIR) and solve again
python3 -m sglang.launch_server --model-path /models/qwen3-8b --served-model-name qwen3-8b --host 0.0.0.0 --port 30000 --tp-size 1 --quantization fp8 --kv-cache-dtype fp8_e4m3 --max-running-requests 8 --context-length 2048 --mem-fraction-static 0.9
