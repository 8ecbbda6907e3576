"""Weights and KV cache of catalog models against published checkpoints and hand-computed figures.

tests/data/checkpoint_sizes.csv lists published checkpoints: their exact parameter counts and tensor
bytes (bf16, FP8 with block scales, MXFP4 experts), each with its source. The planner's sizing of the
catalog entry at the checkpoint's precision must land within 1 % of the bytes the checkpoint holds.
The KV figures are worked out by hand from the architecture (layers, KV heads, head size, latent
sizes, windows, recurrent state), not by calling the code under test.
"""

from __future__ import annotations

import csv

import pytest
from ruamel.yaml import YAML

from optimizer.inputs.schema.catalog import CatalogFile
from optimizer.physics import memory
from optimizer.resources import catalogs_dir

from tests.helpers.paths import DATA

CHECKPOINTS = DATA / "checkpoint_sizes.csv"
TOLERANCE = 0.01


def _load(name: str) -> dict:
    data = YAML(typ="safe").load((catalogs_dir() / f"{name}.yaml").read_text(encoding="utf-8"))
    return {e.id: e for e in getattr(CatalogFile.model_validate(data), name)}


MOD = _load("models")
PREC = _load("precisions")
ROWS = list(csv.DictReader(CHECKPOINTS.open(encoding="utf-8")))


def _row_id(row: dict) -> str:
    return f"{row['model_id']}-{row['precision']}"


# --- weights against published checkpoints ------------------------------------------------------


def test_the_checkpoint_table_is_sourced_and_broad():
    assert len(ROWS) >= 8
    for row in ROWS:
        assert row["model_id"] in MOD, row["model_id"]
        assert row["precision"] in PREC, row["precision"]
        assert row["params_source"].strip() and row["bytes_source"].strip(), _row_id(row)
        assert row["bytes_basis"] in ("published", "computed"), _row_id(row)
    published = {(r["model_id"], r["precision"]) for r in ROWS if r["bytes_basis"] == "published"}
    assert {p for _, p in published} >= {"bf16", "fp8", "mxfp4"}  # 16-bit and quantized checkpoints
    assert {("llama-3.1-8b", "bf16"), ("llama-3.1-70b", "bf16"), ("qwen3-32b", "bf16"),
            ("qwen3-235b-a22b", "bf16"), ("deepseek-v3", "fp8"), ("kimi-k2", "fp8"),
            ("gpt-oss-20b", "mxfp4"), ("gpt-oss-120b", "mxfp4")} <= published


@pytest.mark.parametrize("row", ROWS, ids=_row_id)
def test_weights_match_the_published_checkpoint(row: dict):
    model, precision = MOD[row["model_id"]], PREC[row["precision"]]
    published = int(row["checkpoint_bytes"])
    sized = memory.weights_bytes(model, precision)
    assert sized == pytest.approx(published, rel=TOLERANCE), (
        f"{_row_id(row)}: sized {sized / 1e9:.3f} GB, the checkpoint holds {published / 1e9:.3f} GB")


@pytest.mark.parametrize("row", [r for r in ROWS if r["precision"] == "bf16"], ids=_row_id)
def test_params_match_the_published_count(row: dict):
    """A 16-bit checkpoint holds every parameter the model loads: params_b (+ its MTP module)."""
    model = MOD[row["model_id"]]
    total = (model.params_b + (model.mtp_params_b or 0.0)) * 1e9
    assert total == pytest.approx(int(row["total_params"]), rel=0.005), _row_id(row)


def test_what_the_layout_fields_are_worth():
    """Why the catalog says what a checkpoint quantizes and what it ships beside the body: without
    `quantized_scope: experts` gpt-oss would be sized as if attention were MXFP4 too, and without
    the MTP module DeepSeek-V3's FP8 release would be sized 2 % light — both outside 1 %."""
    by_id = {(r["model_id"], r["precision"]): int(r["checkpoint_bytes"]) for r in ROWS}
    gpt = MOD["gpt-oss-20b"]
    every_linear = gpt.model_copy(update={"quantized_scope": "linear"})
    published = by_id[("gpt-oss-20b", "mxfp4")]
    assert abs(memory.weights_bytes(gpt, PREC["mxfp4"]) / published - 1) < TOLERANCE
    assert abs(memory.weights_bytes(every_linear, PREC["mxfp4"]) / published - 1) > TOLERANCE
    v3 = MOD["deepseek-v3"]
    published = by_id[("deepseek-v3", "fp8")]
    assert abs(memory.weights_bytes(v3.model_copy(update={"mtp_params_b": None}), PREC["fp8"]) / published - 1) > TOLERANCE


def test_mxfp4_is_4_bits_and_one_e8m0_scale_per_32():
    """gpt-oss-120b: 114,661,785,600 expert values stored as 57,330,892,800 B of 4-bit blocks and
    3,583,180,800 one-byte scales; 2,167,371,072 other parameters in bf16 = 65,248,815,744 B."""
    experts, others = 114_661_785_600, 2_167_371_072
    assert experts // 2 + experts // 32 + 2 * others == 65_248_815_744
    assert PREC["mxfp4"].bytes_per_param * experts == experts // 2 + experts // 32


# --- the KV cache, by hand ----------------------------------------------------------------------


def test_kv_gqa_llama_3_1_70b():
    """80 layers x 8 KV heads x 128 x (K and V) x 2 bytes."""
    m = MOD["llama-3.1-70b"]
    per_token = 2 * 80 * 8 * 128 * 2
    assert per_token == 327_680
    assert memory.kv_bytes_per_token(m, 2.0) == per_token
    assert memory.kv_bytes_per_seq(m, 8192, 2.0) == per_token * 8192
    assert memory.kv_bytes_per_seq(m, 8192, 1.0) == per_token * 8192 / 2  # FP8 cache
    assert memory.kv_copies(m, 8) == 1  # 8 KV heads shard over TP 8
    assert memory.kv_copies(m, 16) == 2  # past one head per GPU, each head lives on 2 GPUs


def test_kv_mla_deepseek_v3():
    """61 layers x (512 latent + 64 RoPE key) x 2 bytes, shared by all 128 heads."""
    m = MOD["deepseek-v3"]
    per_token = 61 * (512 + 64) * 2
    assert per_token == 70_272
    assert memory.kv_bytes_per_token(m, 2.0) == per_token
    assert memory.kv_bytes_per_seq(m, 4096, 2.0) == per_token * 4096
    # The latent is not split by head: under tensor parallelism every GPU keeps the whole latent,
    # with data-parallel attention (attention TP 1) a sequence lives on one GPU.
    assert memory.kv_copies(m, 8) == 8
    assert memory.kv_copies(m, 1) == 1
    assert memory.kv_bytes_per_token(MOD["kimi-k2"], 2.0) == per_token  # 64 heads, same latent


def test_kv_mla_with_sparse_attention_indexer_deepseek_v3_2():
    """V3.2 adds one 128-wide FP8 indexer key and a 4-byte fp32 scale per token and layer."""
    m = MOD["deepseek-v3.2"]
    assert memory.kv_bytes_per_token(m, 2.0) == 61 * (512 + 64) * 2 + 61 * (128 + 4) == 78_324


def test_kv_sliding_window_gpt_oss_120b():
    """18 full-attention layers grow with the context; 18 window layers stop at 128 tokens.
    Per layer and token: 2 x 8 KV heads x 64 x 2 bytes = 2,048."""
    m = MOD["gpt-oss-120b"]
    per_layer_token = 2 * 8 * 64 * 2
    ctx = 32_768
    assert memory.kv_bytes_per_seq(m, ctx, 2.0) == 18 * per_layer_token * ctx + 18 * per_layer_token * 128
    assert memory.kv_bytes_per_seq(m, ctx, 2.0) == 1_212_678_144
    short = 100  # inside the window every layer holds every token
    assert memory.kv_bytes_per_seq(m, short, 2.0) == 36 * per_layer_token * short


def test_kv_sliding_window_gemma_3_27b():
    """10 global layers grow with the context; 52 local layers stop at 1,024 tokens.
    Per layer and token: 2 x 16 KV heads x 128 x 2 bytes = 8,192."""
    m = MOD["gemma-3-27b"]
    ctx = 65_536
    assert memory.kv_bytes_per_seq(m, ctx, 2.0) == 10 * 8_192 * ctx + 52 * 8_192 * 1_024
    growth = memory.kv_bytes_per_seq(m, 2 * ctx, 2.0) - memory.kv_bytes_per_seq(m, ctx, 2.0)
    assert growth == 81_920 * ctx  # only the global layers grow


def test_kv_chunked_attention_llama_4_scout():
    """12 NoPE global layers grow; 36 chunked layers are bounded by the 8,192-token chunk.
    Per layer and token: 2 x 8 KV heads x 128 x 2 bytes = 4,096."""
    m = MOD["llama-4-scout"]
    ctx = 131_072
    assert memory.kv_bytes_per_seq(m, ctx, 2.0) == 12 * 4_096 * ctx + 36 * 4_096 * 8_192


def test_kv_hybrid_linear_attention_qwen3_next():
    """12 of 48 layers are full attention (2 KV heads x 256, gated); the 36 Gated DeltaNet layers
    keep a fixed state per sequence: a 32 x 128 x 128 recurrent state and a 3 x 8,192 conv state,
    at 2 bytes = 1,048,576 + 49,152 = 1,097,728 B per layer."""
    m = MOD["qwen3-next-80b-a3b"]
    per_token = 12 * 2 * 2 * 256 * 2
    state = 32 * 128 * 128 * 2 + 3 * (2 * 16 * 128 + 32 * 128) * 2
    assert (per_token, state) == (24_576, 1_097_728)
    for ctx in (1_000, 65_536, 262_144):
        assert memory.kv_bytes_per_seq(m, ctx, 2.0) == per_token * ctx + 36 * state
    growth = memory.kv_bytes_per_seq(m, 20_000, 2.0) - memory.kv_bytes_per_seq(m, 10_000, 2.0)
    assert growth == per_token * 10_000  # the linear layers do not grow
    assert memory.kv_bytes_per_token(m, 2.0) == per_token  # per token: full-attention layers only
