"""Memory of one replica: weights, KV cache per sequence, and how many sequences fit.

Units: GB = 1e9 bytes. Formulas follow DESIGN.md ("Sizing physics", "Precise semantics").
"""

from __future__ import annotations

from dataclasses import dataclass

from optimizer.inputs.schema.catalog import Model, Precision
from optimizer.vocab import GB, floor_tol


def weights_gb(model: Model, precision: Precision) -> float:
    """Resident weights, GB = params_b × bytes_per_param (MoE: all experts are resident)."""
    return model.params_b * precision.bytes_per_param


def head_dim_of(model: Model) -> int | None:
    if model.head_dim is not None:
        return model.head_dim
    if model.hidden_size and model.attention_heads:
        return model.hidden_size // model.attention_heads
    return None


def kv_bytes_per_token(
    model: Model, kv_bytes_per_elem: float = 2.0, context_tokens: int | None = None
) -> float:
    """KV cache bytes per token, from the architecture.

    GQA/MHA: 2 (K and V) × layers × kv_heads × head_dim × bytes.
    MLA (DeepSeek-V2/V3): layers × (kv_lora_rank + qk_rope_head_dim) × bytes — one latent
    shared by all heads plus the decoupled RoPE key (DeepSeek-V3 config_671B.json).

    Sliding-window layers hold at most `sliding_window` tokens. With `context_tokens` the
    result is the average per token of a sequence of that length: window layers contribute
    min(context, window) / context of a full layer. Without it, every layer counts in full
    (the uncapped value, an upper bound): a per-token figure cannot be capped without a length.
    """
    if model.attention == "mla":
        if model.layers is None or model.kv_lora_rank is None:
            raise ValueError(f"model '{model.id}': MLA needs layers and kv_lora_rank")
        per_layer = (model.kv_lora_rank + (model.qk_rope_head_dim or 0)) * kv_bytes_per_elem
    else:
        hd = head_dim_of(model)
        if model.layers is None or model.kv_heads is None or hd is None:
            raise ValueError(
                f"model '{model.id}' gives no layers/kv_heads/head_dim to compute its KV cache"
            )
        per_layer = 2 * model.kv_heads * hd * kv_bytes_per_elem
    layers = model.layers
    window_layers = min(model.sliding_window_layers, layers) if model.sliding_window else 0
    full_layers = layers - window_layers
    if context_tokens is None or window_layers == 0:
        return layers * per_layer
    if context_tokens <= 0:
        raise ValueError("context_tokens must be positive")
    share = min(context_tokens, model.sliding_window) / context_tokens  # type: ignore[type-var]
    return per_layer * (full_layers + window_layers * share)


def kv_gb_per_seq(model: Model, context_tokens: int, kv_bytes_per_elem: float = 2.0) -> float:
    """KV cache of one sequence at `context_tokens`, GB.

    A model that states `kv_gb_per_seq` (the seed: 1.6 GB) is taken at its word, whatever the
    context and element size; otherwise kv_bytes_per_token(model, bytes, context) × context.
    """
    if model.kv_gb_per_seq is not None:
        return model.kv_gb_per_seq
    return kv_bytes_per_token(model, kv_bytes_per_elem, context_tokens) * context_tokens / GB


@dataclass(frozen=True)
class Fit:
    """Memory of one replica: weights + KV cache for `kv_concurrency` sequences + reserve."""

    weights_gb: float
    kv_gb_per_seq: float
    total_gb: float
    """GPUs × memory per GPU."""
    reserve_gb: float
    """total × memory_reserve, kept for activations, engine buffers and fragmentation."""
    usable_gb: float
    free_gb: float
    """usable − weights: what is left for the KV cache."""
    kv_concurrency: int
    """floor(free / kv_gb_per_seq); 0 when nothing is free."""

    def fits(self, needed_concurrency: int) -> bool:
        """KV concurrency ≥ the concurrency needed (and at least one sequence)."""
        return self.kv_concurrency >= max(1, needed_concurrency)


def fit(
    model: Model,
    precision: Precision,
    memory_gb_per_gpu: float,
    gpus: int,
    context_tokens: int,
    memory_reserve: float = 0.10,
    kv_bytes_per_elem: float | None = None,
) -> Fit:
    """Does the model fit, and for how many sequences?

    usable = gpus × memory × (1 − reserve); free = usable − weights;
    kv_concurrency = floor(free / kv_gb_per_seq) (DESIGN.md "Sizing physics").
    Seed golden case: 70 B at 1 byte, 1.6 GB/seq, 2 × 80 GB → 70 of 160 GB, free 74, 46 sequences.
    For a MIG slice pass the slice's memory and gpus=1. `kv_bytes_per_elem` defaults to the
    precision's KV element size. `kv_gb_per_seq` is what the replica spends per sequence: with
    tensor parallelism, KV that cannot be split across the GPUs is stored on each of them
    (kv_replication).
    """
    if gpus < 1:
        raise ValueError("gpus must be ≥ 1")
    if not 0 <= memory_reserve < 1:
        raise ValueError("memory_reserve must be in [0, 1)")
    kvb = precision.kv_bytes_per_elem if kv_bytes_per_elem is None else kv_bytes_per_elem
    w = weights_gb(model, precision)
    kv = kv_gb_per_seq(model, context_tokens, kvb) * kv_replication(model, gpus)
    total = gpus * memory_gb_per_gpu
    usable = total * (1 - memory_reserve)
    free = usable - w
    concurrency = floor_tol(free / kv) if free > 0 else 0
    return Fit(
        weights_gb=w,
        kv_gb_per_seq=kv,
        total_gb=total,
        reserve_gb=total - usable,
        usable_gb=usable,
        free_gb=free,
        kv_concurrency=max(concurrency, 0),
    )


def kv_replication(model: Model, tp: int) -> float:
    """How many copies of each sequence's KV a TP group stores.

    GQA/MHA shard KV heads across the GPUs; past one head per GPU (TP > kv_heads) each head is
    copied on TP / kv_heads GPUs. MLA's compressed latent is not split by head: every GPU keeps
    the whole latent (as vLLM and SGLang do without data-parallel attention). A model that gives
    kv_gb_per_seq directly is taken as measured for its replica: no copies added.
    """
    if model.kv_gb_per_seq is not None or tp <= 1:
        return 1.0
    if model.attention == "mla":
        return float(tp)
    if model.kv_heads is not None and tp > model.kv_heads:
        return tp / model.kv_heads
    return 1.0


