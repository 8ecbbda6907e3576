#!/bin/sh
# Launch commands planopt deploy wrote from the plan (one per group); the manifests run
# the same commands. Weights are read from /models/<model>.

# agents-moe: coreweave-h200-sxm · fp8 · tp4 — sglang v0.5.5
#   note: sized on vllm; deployed on sglang: measure it (planopt calibrate PLAN --bench RUN.json --deployment agents-moe --manifests DIR) and solve again
python3 -m sglang.launch_server --model-path /models/qwen3-235b-a22b --served-model-name qwen3-235b-a22b --host 0.0.0.0 --port 30000 --tp-size 4 --quantization fp8 --kv-cache-dtype fp8_e4m3 --max-running-requests 177 --context-length 16384 --mem-fraction-static 0.9
