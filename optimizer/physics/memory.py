"""Memory of one replica: weights by part, the KV cache (and recurrent state) of a sequence, and how
many sequences fit.

Units: bytes inside, GB = 1e9 bytes in results. Device memory is what the driver reports
(`Accelerator.memory_bytes`: an "80 GB" H100 holds 85.52e9 bytes), never the marketed GB.
The formulas and the golden case they reproduce: docs/design.md ("Physics").
"""

from __future__ import annotations

from dataclasses import dataclass

from optimizer.inputs.schema.catalog import Model, Precision
from optimizer.physics.kept import kept as _kept
from optimizer.units import GB, floor_tol

SIXTEEN_BIT = 2.0
"""Bytes per parameter of what stays 16-bit in a quantized checkpoint (embeddings, output layer)."""


# --- weights --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class WeightParts:
    """A model's parameters by how a quantized checkpoint stores them (counts, not billions)."""

    embedding: float
    """Input embedding, vocab × hidden: a lookup table, never quantized."""
    output: float
    """Output layer (lm_head), vocab × hidden unless tied to the embedding: kept 16-bit."""
    experts: float
    """Routed experts (MoE), all resident."""
    other: float
    """Everything else in the body: attention, dense FFN, shared experts, norms."""
    mtp: float
    """Multi-token-prediction module shipped with the checkpoint."""

    @property
    def total(self) -> float:
        return self.embedding + self.output + self.experts + self.other + self.mtp


@_kept
def moe_layer_count(model: Model) -> int:
    """Layers with routed experts: all but the leading dense ones, every `moe_layer_interval`-th."""
    layers = model.layers or 0
    return max(0, (layers - (model.dense_layers or 0)) // (model.moe_layer_interval or 1))


@_kept
def expert_split(model: Model) -> tuple[float, float]:
    """(routed-expert params, params of one routed expert across its layers). From the expert width
    when the catalog gives it (gate, up and down projections: 3 × hidden × width per MoE layer),
    else from total and active parameters: per expert = (total − active) / (E − k). 0 for a dense
    model or an unknown layout."""
    k, e = model.active_experts, model.experts
    if not (k and e and e > k):
        return 0.0, 0.0
    if model.moe_intermediate_size and model.hidden_size and moe_layer_count(model):
        per = 3.0 * model.hidden_size * model.moe_intermediate_size * moe_layer_count(model)
        return e * per, per
    if model.active_b >= model.params_b:
        return 0.0, 0.0
    per = (model.params_b - model.active_b) * GB / (e - k)
    return e * per, per


@_kept
def weight_parts(model: Model) -> WeightParts:
    embed = float(model.vocab_size * model.hidden_size) if model.vocab_size and model.hidden_size else 0.0
    output = 0.0 if (model.tied_embeddings or not embed) else embed
    experts, _ = expert_split(model)
    other = model.params_b * GB - embed - output - experts
    return WeightParts(embed, output, experts, max(other, 0.0), (model.mtp_params_b or 0.0) * GB)


@_kept
def weight_bytes(model: Model, precision: Precision) -> WeightParts:
    """Each part's bytes at a precision (a WeightParts of bytes, not counts): the quantized parts at the
    precision's bytes per parameter (scales included), the rest 16-bit. A quantized checkpoint leaves the
    embedding and the output layer 16-bit and, for `quantized_scope: experts` (gpt-oss), everything but
    the routed experts; the routed experts and an MTP module are at the precision."""
    parts = weight_parts(model)
    bpp = precision.bytes_per_param
    if bpp >= SIXTEEN_BIT:
        return WeightParts(*(x * bpp for x in (parts.embedding, parts.output, parts.experts, parts.other, parts.mtp)))
    other = SIXTEEN_BIT if model.quantized_scope == "experts" and parts.experts else bpp
    return WeightParts(parts.embedding * SIXTEEN_BIT, parts.output * SIXTEEN_BIT, parts.experts * bpp,
                       parts.other * other, parts.mtp * bpp)


def weights_bytes(model: Model, precision: Precision) -> float:
    """Resident weights (weight_bytes): MoE: every expert is resident; an MTP module is counted (engines
    that speculate with it load it)."""
    return weight_bytes(model, precision).total


def weights_gb(model: Model, precision: Precision) -> float:
    """Resident weights, GB (weights_bytes / 1e9)."""
    return weights_bytes(model, precision) / GB


def dense_weights_bytes(model: Model, precision: Precision) -> float:
    """The weights each data-parallel attention group keeps a copy of: the body but the routed experts
    (attention, dense FFN, shared experts, norms), the embedding and the output layer. The routed experts
    (and the MTP module, mostly experts) are spread once."""
    b = weight_bytes(model, precision)
    return b.embedding + b.output + b.other


def resident_weights_gb(model: Model, precision: Precision, dense_copies: int = 1) -> float:
    """Weights a replica holds, GB: one copy of the experts, `dense_copies` of the rest (ep layouts:
    one per attention group — SGLang's and TensorRT-LLM's attention data parallelism)."""
    extra = (dense_copies - 1) * dense_weights_bytes(model, precision) if dense_copies > 1 else 0.0
    return (weights_bytes(model, precision) + extra) / GB


# --- the KV cache ----------------------------------------------------------------------------------


@_kept
def head_dim_of(model: Model) -> int | None:
    if model.head_dim is not None:
        return model.head_dim
    if model.hidden_size and model.attention_heads:
        return model.hidden_size // model.attention_heads
    return None


INDEXER_SCALE_BYTES = 4
"""DeepSeek sparse attention: one fp32 scale beside each token's FP8 indexer key."""


@dataclass(frozen=True)
class KvLayout:
    """Bytes one sequence keeps per layer kind (at a KV element size), and how many layers of each."""

    per_token: float
    """Bytes per token of one full-attention layer (GQA: 2 × kv_heads × head_dim × bytes; MLA: the latent)."""
    full_layers: int
    window_layers: int
    window: int | None
    linear_layers: int
    state_bytes: float
    """Recurrent state of one sequence in one linear-attention layer."""
    indexer_per_token: float
    """Sparse-attention indexer keys per token and layer (every attention layer)."""
    attention: str
    kv_heads: int | None


@_kept
def kv_layout(model: Model, kv_bytes_per_elem: float = 2.0) -> KvLayout:
    if model.attention == "mla":
        if model.layers is None or model.kv_lora_rank is None:
            raise ValueError(f"model '{model.id}': MLA needs layers and kv_lora_rank")
        per_layer = (model.kv_lora_rank + (model.qk_rope_head_dim or 0)) * kv_bytes_per_elem
    else:
        hd = head_dim_of(model)
        if model.layers is None or model.kv_heads is None or hd is None:
            raise ValueError(f"model '{model.id}' gives no layers/kv_heads/head_dim to compute its KV cache")
        per_layer = 2 * model.kv_heads * hd * kv_bytes_per_elem
    window = model.sliding_window_layers if model.sliding_window else 0
    linear = model.linear_attention_layers
    full = model.layers - window - linear
    state = model.linear_state_bytes_per_layer or 0.0  # kept in the model's dtype whatever the KV format
    indexer = (model.indexer_head_dim + INDEXER_SCALE_BYTES) if model.indexer_head_dim else 0.0
    return KvLayout(per_layer, full, window, model.sliding_window, linear, state, indexer,
                    model.attention, model.kv_heads)


def kv_bytes_per_seq(model: Model, context_tokens: int, kv_bytes_per_elem: float = 2.0) -> float:
    """One copy of a sequence's KV cache (and recurrent state) at `context_tokens`, bytes:
    full-attention layers grow with the context, sliding-window (and chunked) layers stop at the
    window, linear-attention layers keep a fixed state, a sparse-attention indexer adds its keys."""
    if context_tokens <= 0:
        raise ValueError("context_tokens must be positive")
    k = kv_layout(model, kv_bytes_per_elem)
    windowed = min(context_tokens, k.window) if k.window else context_tokens
    attention_layers = k.full_layers + k.window_layers
    return (k.per_token * (k.full_layers * context_tokens + k.window_layers * windowed)
            + k.linear_layers * k.state_bytes + k.indexer_per_token * attention_layers * context_tokens)


def sparse_context(model: Model, context_tokens: float) -> float:
    """Tokens a decode step attends to in a full-attention layer: the whole context, or under sparse
    attention (`sparse_topk`) at most the top k the indexer selects."""
    return min(context_tokens, model.sparse_topk) if model.sparse_topk else context_tokens


def kv_bytes_read_per_step(model: Model, context_tokens: int, kv_bytes_per_elem: float = 2.0) -> float:
    """KV bytes one decode step reads for one sequence at `context_tokens`: its whole cache, except under
    sparse attention (`sparse_topk`), where attention reads the latents of only the top-k tokens and the
    indexer every token's key."""
    attended = int(sparse_context(model, context_tokens))
    unread = context_tokens - attended  # tokens whose latents are not read; their indexer keys are
    k = kv_layout(model, kv_bytes_per_elem)
    return (kv_bytes_per_seq(model, attended, kv_bytes_per_elem)
            + k.indexer_per_token * (k.full_layers + k.window_layers) * unread)


def kv_bytes_per_token(model: Model, kv_bytes_per_elem: float = 2.0, context_tokens: int | None = None) -> float:
    """KV bytes per token. With `context_tokens`: the average per token of a sequence that long
    (windows capped, recurrent state spread over it); without: every attention layer in full, the
    uncapped value (a per-token figure cannot be capped without a length)."""
    if context_tokens is not None:
        return kv_bytes_per_seq(model, context_tokens, kv_bytes_per_elem) / context_tokens
    k = kv_layout(model, kv_bytes_per_elem)
    return (k.per_token + k.indexer_per_token) * (k.full_layers + k.window_layers)


def kv_gb_per_seq(model: Model, context_tokens: int, kv_bytes_per_elem: float = 2.0) -> float:
    """KV cache of one sequence at `context_tokens`, GB. A model that states `kv_gb_per_seq` (the
    seed: 1.6 GB) is taken at its word, whatever the context and element size."""
    if model.kv_gb_per_seq is not None:
        return model.kv_gb_per_seq
    return kv_bytes_per_seq(model, context_tokens, kv_bytes_per_elem) / GB


def kv_copies(model: Model, attention_tp: int) -> float:
    """How many copies of each sequence's KV cache one attention group of `attention_tp` GPUs keeps.

    GQA/MHA shard KV heads across the group; past one head per GPU (TP > kv_heads) each head is
    copied on TP / kv_heads GPUs. MLA's latent is not split by head: every GPU of a tensor-parallel
    group keeps the whole latent (vLLM, SGLang); with data-parallel attention (attention_tp = 1)
    a sequence lives on one GPU and there is one copy. A model that gives kv_gb_per_seq directly
    is taken as measured for its replica: one copy.
    """
    if model.kv_gb_per_seq is not None or attention_tp <= 1:
        return 1.0
    if model.attention == "mla":
        return float(attention_tp)
    if model.kv_heads is not None and attention_tp > model.kv_heads:
        return attention_tp / model.kv_heads
    return 1.0


# --- does it fit ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Fit:
    """Memory of one replica: weights + KV cache for `kv_concurrency` sequences + reserve."""

    weights_gb: float
    kv_gb_per_seq: float
    """What the replica spends per sequence: one copy × kv_copies."""
    kv_copies: float
    """Copies of each sequence's KV the replica keeps (MLA under tensor parallelism: one per GPU)."""
    total_gb: float
    """GPUs × device memory (bytes as the driver reports them), GB."""
    reserve_gb: float
    """Kept for activations, engine buffers and fragmentation: memory_reserve of the total, and
    never less than the engine's runtime per GPU."""
    usable_gb: float
    free_gb: float
    """usable − weights: what is left for the KV cache."""
    kv_concurrency: int
    """floor(free / kv_gb_per_seq); 0 when nothing is free."""

    def fits(self, needed_concurrency: int) -> bool:
        """KV concurrency ≥ the concurrency needed (and at least one sequence)."""
        return self.kv_concurrency >= max(1, needed_concurrency)


def fit(model: Model, precision: Precision, memory_gb_per_gpu: float, gpus: int, context_tokens: int,
        memory_reserve: float = 0.10, kv_bytes_per_elem: float | None = None, *,
        attention_tp: int | None = None, runtime_gb_per_gpu: float = 0.0, dense_copies: int = 1,
        draft: Model | None = None) -> Fit:
    """Does the model fit, and for how many sequences?

    usable = gpus × (memory − max(memory × memory_reserve, runtime)); free = usable − weights;
    kv_concurrency = floor(free / (KV per sequence × copies)) (docs/design.md, "Physics").
    Seed golden case: 70 B at 1 byte, 1.6 GB/seq, 2 × 80 GB → 70 of 160 GB, free 74, 46 sequences.
    `memory_gb_per_gpu` is device memory in GB of 1e9 bytes (Accelerator.memory_bytes / 1e9, or a
    MIG slice's). `attention_tp` is the tensor-parallel degree of attention (default `gpus`; 1 with
    data-parallel attention). `runtime_gb_per_gpu` is the engine's floor per GPU (CUDA context,
    graphs, activation buffers): the reserve is never below it. `dense_copies` is the data-parallel
    attention groups of an ep layout: each holds its own copy of all but the routed experts
    (resident_weights_gb). `draft`: a speculative-decoding draft model served beside it (its weights and
    KV count too).
    """
    if gpus < 1:
        raise ValueError("gpus must be ≥ 1")
    if not 0 <= memory_reserve < 1:
        raise ValueError("memory_reserve must be in [0, 1)")
    kvb = precision.kv_bytes_per_elem if kv_bytes_per_elem is None else kv_bytes_per_elem
    w = resident_weights_gb(model, precision, dense_copies)
    copies = kv_copies(model, gpus if attention_tp is None else attention_tp)
    kv = kv_gb_per_seq(model, context_tokens, kvb) * copies
    if draft is not None:  # speculative decoding's draft model: its weights and KV beside the target's
        w += resident_weights_gb(draft, precision, dense_copies)
        kv += kv_gb_per_seq(draft, context_tokens, kvb) * kv_copies(draft, gpus if attention_tp is None else attention_tp)
    total = gpus * memory_gb_per_gpu
    reserve = gpus * max(memory_gb_per_gpu * memory_reserve, min(runtime_gb_per_gpu, memory_gb_per_gpu))
    usable = total - reserve
    free = usable - w
    concurrency = floor_tol(free / kv) if free > 0 else 0
    return Fit(weights_gb=w, kv_gb_per_seq=kv, kv_copies=copies, total_gb=total, reserve_gb=reserve,
               usable_gb=usable, free_gb=free, kv_concurrency=max(concurrency, 0))
