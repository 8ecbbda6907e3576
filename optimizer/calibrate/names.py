"""Model names as people write them (a Hugging Face repository, a served-model name) → the catalog's model ids.

vLLM and SGLang record the repository they serve (meta-llama/Llama-3.3-70B-Instruct), gateways log the
served-model name (Llama-3.3-70B-Instruct-FP8, Qwen3-32B-AWQ); the plan names catalog ids (llama-3.3-70b,
qwen3-32b). Load tests and usage logs both map names through `same_model`.
"""

from __future__ import annotations

import re

_CHECKPOINT_TAIL = re.compile(r"-(instruct|chat|it|hf|base)(-[\w.]+)*$")
_QUANT_TAIL = re.compile(r"-(fp8|fp8-dynamic|fp4|nvfp4|mxfp4|awq|gptq|int4|int8|w4a16|w8a8|w8a16|bf16|fp16|gguf)"
                         r"(-[\w.]+)*$")
_VENDOR_HEAD = re.compile(r"^meta-(?=llama)")


def model_key(name: str) -> str:
    """The part of a model name that tells models apart: the repository's last part, lower case, without its
    checkpoint (-Instruct-2411) or quantization (-FP8, -AWQ) tail; spaces as hyphens."""
    key = name.rsplit("/", 1)[-1].strip().lower().replace(" ", "-").replace("_", "-")
    key = _VENDOR_HEAD.sub("", key)
    for _ in range(2):  # -Instruct-AWQ and -AWQ-Instruct alike
        key = _QUANT_TAIL.sub("", _CHECKPOINT_TAIL.sub("", key))
    return key


def same_model(served: str, model_id: str) -> bool:
    """The engine's or gateway's model name names the catalog's model: meta-llama/Llama-3.3-70B-Instruct is
    llama-3.3-70b, Qwen/Qwen3-235B-A22B-Instruct-2507 qwen3-235b-a22b."""
    return served == model_id or model_key(served) == model_key(model_id)


def catalog_model(served: str, model_ids) -> str | None:
    """The one id of `model_ids` that `served` names (None when none or several do)."""
    hits = [m for m in model_ids if same_model(served, m)]
    return hits[0] if len(hits) == 1 else None
