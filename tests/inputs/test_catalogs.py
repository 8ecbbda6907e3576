"""The built-in catalogs: schema-valid, sourced, cross-referenced, and the physics anchors hold."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from ruamel.yaml import YAML

from optimizer.inputs.schema.catalog import Accelerator, CatalogFile, Model
from optimizer.vocab import PRECISION_ALIASES, PRECISION_IDS

from tests.helpers.paths import ROOT


CATALOGS = ROOT / "catalogs"
FILES = {
    "accelerators": "accelerators.yaml",
    "models": "models.yaml",
    "precisions": "precisions.yaml",
    "offers": "offers.yaml",
    "systems": "systems.yaml",
}
AS_OF = re.compile(r"^\d{4}-\d{2}(-\d{2})?$")


def _raw(name: str) -> dict:
    return YAML(typ="safe").load((CATALOGS / FILES[name]).read_text(encoding="utf-8"))


def _load(name: str) -> CatalogFile:
    return CatalogFile(**_raw(name))


@pytest.fixture(scope="module")
def cats() -> dict[str, CatalogFile]:
    return {name: _load(name) for name in FILES}


def _entries(cats: dict[str, CatalogFile], section: str) -> list:
    return getattr(cats[section], section)


def _by_id(cats: dict[str, CatalogFile], section: str) -> dict:
    return {e.id: e for e in _entries(cats, section)}


@pytest.mark.parametrize("section", list(FILES))
def test_file_validates_and_holds_only_its_section(section: str) -> None:
    raw = _raw(section)
    assert list(raw) == [section]
    cat = CatalogFile(**raw)
    assert getattr(cat, section), f"{FILES[section]} is empty"


@pytest.mark.parametrize("section", list(FILES))
def test_ids_unique(cats, section: str) -> None:
    ids = [e.id for e in _entries(cats, section)]
    dupes = sorted({i for i in ids if ids.count(i) > 1})
    assert not dupes, f"duplicate ids in {section}: {dupes}"


def _unsourced(entries: list) -> list[str]:
    """Entries without a non-empty source or without an as_of date (YYYY-MM or YYYY-MM-DD)."""
    bad = []
    for e in entries:
        if not (e.source and e.source.strip()):
            bad.append(f"{e.id}: no source")
        if not (e.as_of and AS_OF.match(e.as_of)):
            bad.append(f"{e.id}: as_of {e.as_of!r} is not YYYY-MM[-DD]")
    return bad


@pytest.mark.parametrize("section", list(FILES))
def test_every_entry_has_source_and_as_of(cats, section: str) -> None:
    assert not _unsourced(_entries(cats, section)), f"{section}: {_unsourced(_entries(cats, section))}"


def test_the_provenance_check_catches_an_unsourced_entry() -> None:
    good = Accelerator(id="a", memory_gb=80, source="a datasheet", as_of="2026-12")
    assert not _unsourced([good, Model(id="m", params_b=1, kv_gb_per_seq=1, source="config.json", as_of="2026-12-01")])
    assert _unsourced([Accelerator(id="a", memory_gb=80, as_of="2026-12")]) == ["a: no source"]
    assert _unsourced([Accelerator(id="a", memory_gb=80, source="  ", as_of="2026-12")]) == ["a: no source"]
    assert _unsourced([Accelerator(id="a", memory_gb=80, source="x")]) == ["a: as_of None is not YYYY-MM[-DD]"]
    assert _unsourced([Accelerator(id="a", memory_gb=80, source="x", as_of="Dec 2026")])


def test_every_offer_names_a_known_accelerator(cats) -> None:
    accelerators = _by_id(cats, "accelerators")
    for o in _entries(cats, "offers"):
        assert o.accelerator in accelerators, f"offer {o.id}: unknown accelerator {o.accelerator}"


def test_offers_sell_something_and_have_no_caps(cats) -> None:
    for o in _entries(cats, "offers"):
        assert o.price_per_gpu_hour, o.id
        assert not o.available_gpus, f"{o.id}: the built-in catalog does not invent availability caps"
        for tier in o.price_per_gpu_hour:
            assert o.price(tier) > 0, f"{o.id}.{tier}"


def test_estimated_prices_say_how(cats) -> None:
    for o in _entries(cats, "offers"):
        for tier in o.price_per_gpu_hour:
            if o.estimated(tier):
                basis = o.price_per_gpu_hour[tier].basis
                assert basis and basis.strip(), f"{o.id}.{tier}: estimate without basis"


def test_spot_offers_say_what_spot_loses(cats) -> None:
    """Every spot tier comes with an interruption share (batch counts spot at 1 − it), and its notes
    say it is an estimate and how it was made."""
    for o in _entries(cats, "offers"):
        if o.price("spot") is None:
            continue
        assert o.spot_interruption > 0, f"{o.id}: spot without spot_interruption"
        assert o.notes and f"spot_interruption {o.spot_interruption} is an estimate" in o.notes, o.id
        od = o.price("on-demand")
        assert od is None or o.price("spot") < od, o.id


def test_offer_units_and_domains(cats) -> None:
    """The purchase unit is explicit; a rack-scale GB200/GB300 offer sells the rack and its 72-GPU
    NVLink domain, a tray offer 4 GPUs and their own 4-GPU domain; no offer grants more scale-up
    than its accelerator has."""
    accelerators = _by_id(cats, "accelerators")
    raw = {e["id"]: e for e in _raw("offers")["offers"]}
    for o in _entries(cats, "offers"):
        assert "unit" in raw[o.id], f"{o.id}: state the unit (gpu, node, tray or rack)"
        acc = accelerators[o.accelerator]
        if o.unit == "gpu":
            assert o.gpus_per_node == 1, o.id
        if o.unit == "rack":
            assert o.gpus_per_node == o.scale_up_gpus == acc.scale_up_gpus == 72, o.id
        if o.unit == "tray":
            assert o.gpus_per_node == 4 and o.scale_up_gpus == 4, o.id
        if acc.scale_up_gpus == 72:
            assert o.unit in ("tray", "rack"), f"{o.id}: an NVL72 offer sells trays or racks"
        if o.scale_up_gpus is not None:
            assert o.scale_up_gpus <= acc.scale_up_gpus, o.id
        if o.scale_out_gb_s == 0:
            assert "scale_out_gb_s 0" in (o.notes or ""), f"{o.id}: say why there is no inter-node network"
    offers = _by_id(cats, "offers")
    assert offers["coreweave-gb200"].scale_up_gpus == 4  # one tray of the rack
    assert offers["coreweave-gb200-rack"].scale_up_gpus == 72


def test_reserved_is_cheaper_than_on_demand(cats) -> None:
    for o in _entries(cats, "offers"):
        od = o.price("on-demand")
        if od is None:
            continue
        for tier in ("reserved-1y", "reserved-3y"):
            p = o.price(tier)
            if p is not None:
                assert p < od, f"{o.id}.{tier} {p} >= on-demand {od}"


REQUIRED = {
    "accelerators": {
        "a100-80gb", "h100-sxm", "h100-pcie", "h100-nvl", "h200-sxm", "h200-nvl", "gh200", "l40s", "l4",
        "rtx-pro-6000", "b200", "b300", "gb200", "gb300", "mi300x", "mi325x", "mi355x", "gaudi3", "rubin",
        "a100-40gb", "a10g", "h20", "gh200-144gb", "mi350x", "tpu-v6e", "tpu-v7", "trn2",
    },
    "models": {
        "llama-3.1-8b", "llama-3.1-70b", "llama-3.1-405b", "llama-3.3-70b", "llama-2-70b", "mixtral-8x7b",
        "mixtral-8x22b", "qwen2.5-72b", "qwen3-8b", "qwen3-32b", "qwen3-235b-a22b", "deepseek-v3",
        "deepseek-r1", "gpt-oss-20b", "gpt-oss-120b",
        "llama-4-scout", "llama-4-maverick", "qwen3-30b-a3b", "qwen3-coder-480b-a35b", "qwen3-next-80b-a3b",
        "deepseek-v3.1", "deepseek-v3.2", "kimi-k2", "glm-4.5", "glm-4.5-air", "glm-4.6", "gemma-3-27b",
        "gemma-3-12b", "gemma-3-4b", "mistral-small-3.2", "mistral-large-2411", "llama-3.2-1b", "llama-3.2-3b",
        "qwen2.5-7b", "qwen2.5-32b",
    },
    "precisions": set(PRECISION_IDS),
}


@pytest.mark.parametrize("section", list(REQUIRED))
def test_required_ids_present(cats, section: str) -> None:
    missing = REQUIRED[section] - set(_by_id(cats, section))
    assert not missing, f"{section} missing {sorted(missing)}"


def test_offer_ids_are_stable(cats) -> None:
    """Plans name offers by id: the ids the seed catalog shipped with are still there."""
    kept = {  # named in plans/, tests/ or benchmarks/
        "aws-b300-us-east-1", "aws-h100-sxm-us-east-1", "coreweave-b200", "coreweave-gb200", "coreweave-h100-sxm",
        "coreweave-h200-sxm", "gcp-h200-sxm-us-east4", "hyperstack-h100-pcie", "lambda-a100-80gb", "lambda-h100-sxm",
        "runpod-community-h100-sxm", "vultr-mi300x",
    }
    assert kept <= set(_by_id(cats, "offers"))


def test_offers_cover_the_main_providers(cats) -> None:
    providers = {o.provider for o in _entries(cats, "offers")}
    assert {"aws", "azure", "gcp", "coreweave", "lambda", "nebius", "runpod", "hyperstack"} <= providers


# --- KV cache anchors (docs/design.md, "The physics, in brief") -----------------------------------------

def _kv_bytes_per_token(m, kv_bytes: float = 2.0) -> float:
    """Full-context KV bytes per token (sliding-window layers not capped here)."""
    if m.attention == "mla":
        return m.layers * (m.kv_lora_rank + (m.qk_rope_head_dim or 0)) * kv_bytes
    return 2 * m.layers * m.kv_heads * m.head_dim * kv_bytes


def test_kv_llama_3_1_70b_bf16(cats) -> None:
    m = _by_id(cats, "models")["llama-3.1-70b"]
    assert 2 * m.layers * m.kv_heads * m.head_dim * 2 == 327_680
    assert _kv_bytes_per_token(m) == 327_680


def test_kv_deepseek_v3_mla_bf16(cats) -> None:
    m = _by_id(cats, "models")["deepseek-v3"]
    assert m.attention == "mla"
    assert m.layers * (m.kv_lora_rank + m.qk_rope_head_dim) * 2 == 70_272


def test_deepseek_r1_shares_v3_architecture(cats) -> None:
    models = _by_id(cats, "models")
    v3, r1 = models["deepseek-v3"], models["deepseek-r1"]
    for k in ("params_b", "active_params_b", "layers", "hidden_size", "attention", "kv_lora_rank",
              "qk_rope_head_dim", "experts", "active_experts", "shared_experts", "vocab_size"):
        assert getattr(r1, k) == getattr(v3, k), k
    assert (r1.layers, r1.kv_lora_rank, r1.qk_rope_head_dim) == (61, 512, 64)


def test_gpt_oss_sliding_window(cats) -> None:
    models = _by_id(cats, "models")
    for mid in ("gpt-oss-20b", "gpt-oss-120b"):
        m = models[mid]
        assert (m.sliding_window, m.kv_heads, m.head_dim) == (128, 8, 64), mid
        assert m.sliding_window_layers * 2 == m.layers, mid
        assert m.experts and m.active_experts and m.active_params_b < m.params_b, mid


def test_checkpoint_layout_fields(cats) -> None:
    """What a published checkpoint holds beyond the body: gpt-oss quantizes only its experts, DeepSeek
    ships a 13.46B MTP layer, Qwen3-Next keeps a recurrent state in 36 of 48 layers, V3.2 an indexer."""
    models = _by_id(cats, "models")
    scoped = {m.id for m in models.values() if m.quantized_scope == "experts"}
    assert scoped == {"gpt-oss-20b", "gpt-oss-120b"}
    for mid in ("deepseek-v3", "deepseek-r1", "deepseek-v3.1"):
        assert models[mid].mtp_params_b == 13.46, mid
    assert models["kimi-k2"].mtp_params_b == 0
    nxt = models["qwen3-next-80b-a3b"]
    assert (nxt.layers, nxt.linear_attention_layers, nxt.linear_state_bytes_per_layer) == (48, 36, 1_097_728)
    assert models["deepseek-v3.2"].indexer_head_dim == 128
    for m in models.values():
        assert m.tied_embeddings is not None, f"{m.id}: say whether the output layer is tied"
        if m.experts:
            assert m.moe_intermediate_size, f"{m.id}: expert width"
        elif m.kv_gb_per_seq is None:
            assert m.intermediate_size, f"{m.id}: FFN width"
        if m.moe_layer_interval or m.dense_layers:
            assert m.experts, m.id


def test_moe_and_dense_consistency(cats) -> None:
    for m in _entries(cats, "models"):
        if m.experts:
            assert m.active_experts and m.active_experts <= m.experts, m.id
            assert m.active_params_b < m.params_b, m.id
        elif m.active_params_b not in (None, m.params_b):
            # a dense multimodal checkpoint: the text model is active, the vision tower (< 15 %) is not
            assert 0.85 * m.params_b <= m.active_params_b < m.params_b, m.id
            assert m.notes and "vision" in m.notes, f"{m.id}: say what is not active"
        if m.attention != "mla" and m.hidden_size and m.attention_heads and m.head_dim:
            assert m.attention_heads % m.kv_heads == 0, m.id


# --- accelerators -----------------------------------------------------------------------------

def test_liquid_only_accelerators(cats) -> None:
    liquid = {a.id for a in _entries(cats, "accelerators") if a.cooling == "liquid"}
    assert liquid == {"gb200", "gb300", "mi355x", "rubin", "tpu-v7"}


def test_rubin_is_preliminary(cats) -> None:
    accelerators = _by_id(cats, "accelerators")
    assert accelerators["rubin"].status == "preliminary"
    assert all(a.status != "preliminary" for a in accelerators.values() if a.id != "rubin")


def test_fp16_equals_bf16_and_dense_ordering(cats) -> None:
    for a in _entries(cats, "accelerators"):
        tf = a.tflops_dense
        assert "bf16" in tf, a.id
        if "fp16" in tf:
            assert tf["fp16"] == tf["bf16"], a.id
        if "fp8" in tf:
            assert tf["fp8"] >= tf["bf16"], a.id
        if "fp4" in tf:
            assert tf["fp4"] >= tf["fp8"], a.id


def test_fp8_and_fp4_match_precision_generations(cats) -> None:
    """A datatype's TFLOPS are listed only where a precision computes in it natively (fp4
    TFLOPS: NVFP4 or MXFP4 — CDNA4's FP4 is the MX format)."""
    precisions = _by_id(cats, "precisions")
    native = {"fp8": set(precisions["fp8"].native_on),
              "fp4": set(precisions["fp4"].native_on) | set(precisions["mxfp4"].native_on)}
    for a in _entries(cats, "accelerators"):
        for dtype, generations in native.items():
            if dtype in a.tflops_dense:
                assert a.generation in generations, f"{a.id} has {dtype} TFLOPS"
    assert "fp8" not in _by_id(cats, "accelerators")["a100-80gb"].tflops_dense


MIG_GPUS = {"a100-80gb", "a100-40gb", "h100-sxm", "h100-pcie", "h100-nvl", "h200-sxm", "h200-nvl", "gh200",
            "gh200-144gb", "rtx-pro-6000", "b200", "b300", "gb200", "gb300"}
"""GPUs whose MIG profiles are listed (the H20 supports MIG but its profile names were not captured)."""


def test_mig_profiles(cats) -> None:
    accelerators = _by_id(cats, "accelerators")
    for aid, a in accelerators.items():
        if aid not in MIG_GPUS:
            assert not a.mig_profiles, f"{aid} has no MIG"
            continue
        assert a.mig_profiles, f"{aid} should list MIG profiles"
        names = [p.name for p in a.mig_profiles]
        assert len(names) == len(set(names)), aid
        slices = 4 if aid == "rtx-pro-6000" else 8
        for p in a.mig_profiles:
            assert p.memory_gb <= a.memory_gb, f"{aid} {p.name}"
            assert p.instances_per_gpu * p.compute_fraction <= 1.0 + 1e-3, f"{aid} {p.name}"
            assert p.memory_fraction is not None, f"{aid} {p.name}: no memory_fraction"
            assert (p.memory_fraction * slices).is_integer(), f"{aid} {p.name}: memory slices / {slices}"
            assert p.instances_per_gpu * p.memory_fraction <= 1.0, f"{aid} {p.name}"
            # the profile's name states its memory: slices x driver bytes lands within 15 % of it
            share = p.memory_fraction * a.memory_bytes / 1e9
            assert 0.85 * share <= p.memory_gb <= 1.15 * share, f"{aid} {p.name}: {share:.1f} GB"
        full = max(a.mig_profiles, key=lambda p: p.compute_fraction)
        assert full.compute_fraction == 1.0 and full.instances_per_gpu == 1 and full.memory_fraction == 1.0, aid
    h100 = {p.name: (p.instances_per_gpu, p.memory_gb, p.compute_fraction, p.memory_fraction)
            for p in accelerators["h100-sxm"].mig_profiles}
    assert h100 == {
        "1g.10gb": (7, 10.0, 0.1429, 0.125), "1g.20gb": (4, 20.0, 0.1429, 0.25), "2g.20gb": (3, 20.0, 0.2857, 0.25),
        "3g.40gb": (2, 40.0, 0.4286, 0.5), "4g.40gb": (1, 40.0, 0.5714, 0.5), "7g.80gb": (1, 80.0, 1.0, 1.0),
    }


def test_scale_up_domains(cats) -> None:
    accelerators = _by_id(cats, "accelerators")
    assert accelerators["gb200"].scale_up_gpus == 72
    assert accelerators["gb300"].scale_up_gpus == 72
    assert accelerators["l40s"].scale_up_gpus == 1
    assert accelerators["h100-sxm"].scale_up_gpus == 8
    assert accelerators["trn2"].generation == "trainium"


def test_every_accelerator_has_driver_memory_bytes(cats) -> None:
    """memory_bytes is what the driver reports (MiB x 2^20): a few percent off the marketed GB, never
    a unit slip. AMD, Intel, Google and AWS market GiB, hence up to 7.4 % above memory_gb x 1e9."""
    for a in _entries(cats, "accelerators"):
        assert a.memory_bytes is not None, f"{a.id}: no memory_bytes"
        assert 0.9 <= a.memory_bytes / (a.memory_gb * 1e9) <= 1.2, f"{a.id}: {a.memory_bytes:.4g} B"
    accelerators = _by_id(cats, "accelerators")
    assert accelerators["h100-sxm"].memory_bytes == 81_559 * 2**20 == 85_520_809_984
    assert accelerators["mi300x"].memory_bytes == 206_141_652_992  # rocm-smi: 192 GiB - 16 MiB


def test_scale_up_links(cats) -> None:
    """Every accelerator states its topology; a mesh (one link per peer) gives its link bandwidth,
    and its links add up to the domain's per-GPU figure."""
    accelerators = _by_id(cats, "accelerators")
    for a in accelerators.values():
        assert a.scale_up_topology is not None, f"{a.id}: no scale_up_topology"
        if a.scale_up_topology == "mesh":
            assert a.scale_up_link_gb_s, f"{a.id}: a mesh needs scale_up_link_gb_s"
            if a.scale_up_bandwidth_gb_s:
                links = a.scale_up_gpus - 1
                assert a.scale_up_link_gb_s * links == pytest.approx(a.scale_up_bandwidth_gb_s), a.id
        if a.scale_up_topology == "pcie":
            assert a.scale_up_gpus == 1, f"{a.id}: no GPU link, no scale-up domain"
        if a.scale_up_topology in ("switch", "torus"):
            assert a.scale_up_bandwidth_gb_s, a.id
    assert accelerators["mi355x"].scale_up_link_gb_s == 76.8 and accelerators["mi355x"].scale_up_bandwidth_gb_s == 537.6
    assert accelerators["mi300x"].scale_up_link_gb_s == 64.0
    assert accelerators["gaudi3"].scale_up_bandwidth_gb_s == 525.0  # 21 of 24 ports scale up


# --- precisions ---------------------------------------------------------------------------------

def test_precision_bytes(cats) -> None:
    p = _by_id(cats, "precisions")
    assert p["bf16"].bytes_per_param == 2.0
    assert p["fp16"].bytes_per_param == 2.0
    assert p["fp8"].bytes_per_param == 1.0
    assert p["int8"].bytes_per_param == 1.0
    assert p["int4-awq"].bytes_per_param == pytest.approx(0.5 + 4 / 128)
    assert p["fp4"].bytes_per_param == pytest.approx(0.5 + 1 / 16)  # NVFP4: FP8 scale per 16
    assert p["mxfp4"].bytes_per_param == 0.5 + 1 / 32  # MXFP4: E8M0 scale per 32, exactly
    assert p["w8a16"].bytes_per_param == 1.0
    assert 70 * p["fp8"].bytes_per_param == 70.0  # golden test: 70 B params at fp8 = 70 GB


def test_precision_semantics(cats) -> None:
    p = _by_id(cats, "precisions")
    for pid in ("int4-awq", "w8a16"):
        assert p[pid].weight_only and p[pid].compute_dtype == "bf16", pid
        assert not p[pid].native_on, f"{pid}: weight-only formats run where weight_only_on says"
        # Marlin/Machete kernels: NVIDIA from Ampere on; vLLM has none for AMD, Gaudi or TPU
        assert set(p[pid].weight_only_on) == {"ampere", "ada", "hopper", "blackwell"}, pid
    assert set(p["int4-awq"].aliases) >= {"awq", "w4a16", "gptq"}
    assert p["fp4"].aliases == ["nvfp4"] and "mxfp4" not in p["fp4"].aliases
    assert set(p["fp8"].native_on) == {"hopper", "ada", "blackwell", "rubin", "cdna3", "cdna4", "gaudi3", "tpu",
                                       "trainium"}
    assert set(p["fp4"].native_on) == {"blackwell", "rubin"}
    assert set(p["mxfp4"].native_on) == {"blackwell", "rubin", "cdna4"}
    assert set(p["mxfp4"].weight_only_on) == {"hopper", "ampere", "ada", "cdna3"}  # gpt-oss on H100, A100, MI300X
    assert not p["mxfp4"].weight_only and p["mxfp4"].compute_dtype == "fp4"
    assert set(p["int8"].native_on) == {"ampere", "hopper", "ada", "blackwell", "cdna3", "cdna4"}
    assert "tpu" in p["bf16"].native_on
    for pid, kv in {"bf16": 2, "fp16": 2, "int4-awq": 2, "w8a16": 2, "mxfp4": 2, "fp8": 1, "int8": 1,
                    "fp4": 1}.items():
        assert p[pid].kv_bytes_per_elem == kv, pid
    for e in p.values():  # a generation is native or weight-only, never both
        assert not set(e.native_on) & set(e.weight_only_on), e.id
    generations = {a.generation for a in _entries(cats, "accelerators")}
    assert generations <= set(p["bf16"].native_on)


def test_precisions_match_the_vocabulary(cats) -> None:
    """The catalog holds exactly the built-in precision ids, and its aliases are the plan's."""
    p = _by_id(cats, "precisions")
    assert set(p) == set(PRECISION_IDS)
    aliases = {alias: e.id for e in p.values() for alias in e.aliases}
    for alias, target in PRECISION_ALIASES.items():
        assert aliases.get(alias) == target, alias


def test_precision_aliases_do_not_collide(cats) -> None:
    names: list[str] = []
    for p in _entries(cats, "precisions"):
        names.append(p.id)
        names.extend(p.aliases)
    assert len(names) == len(set(names))


def test_the_fast_reader_of_the_shipped_catalogs_reads_what_the_careful_one_reads():
    """Built-in catalogs go through the C YAML parser without line marks; user catalogs through the
    careful reader (YAML 1.2, tags refused, lines for every error). Same data, and each entry's line
    found by the scan is the line of its `- ` item."""
    from optimizer.inputs.catalog import BUILTIN_FILES, _builtin_file
    from optimizer.inputs.document import load_yaml
    from optimizer.resources import catalogs_dir

    for name in BUILTIN_FILES:
        path = catalogs_dir() / name
        doc, _cat, lines = _builtin_file(path, name, path.stat().st_mtime_ns)
        careful = load_yaml(path)
        assert doc.data == careful.data, name
        for (section, i), line in lines.items():
            assert careful.line((section, i)) == line, (name, section, i)
        assert len(lines) == sum(len(v) for v in careful.data.values() if isinstance(v, list))


# Systems to buy (catalogs/systems.yaml). Source and as_of: test_every_entry_has_source_and_as_of.

def test_systems_name_known_accelerators(cats) -> None:
    accelerators = _by_id(cats, "accelerators")
    for s in _entries(cats, "systems"):
        assert s.accelerator in accelerators, f"system {s.id}: unknown accelerator {s.accelerator}"


def test_systems_cover_the_main_platforms(cats) -> None:
    carried = {s.accelerator for s in _entries(cats, "systems")}
    assert {"h100-sxm", "h200-sxm", "b200", "b300", "gb200", "gb300", "mi300x", "mi325x", "mi355x"} <= carried


def test_system_units_and_domains(cats) -> None:
    """Rack-scale systems are one whole NVLink domain and fill their rack; servers hold 8 GPUs."""
    accelerators = _by_id(cats, "accelerators")
    for s in _entries(cats, "systems"):
        if s.unit == "rack":
            assert s.gpus_per_node == accelerators[s.accelerator].scale_up_gpus, s.id
            assert s.nodes_per_rack == 1, s.id
        else:
            assert s.gpus_per_node == 8, s.id


def test_liquid_only_systems(cats) -> None:
    systems = _by_id(cats, "systems")
    accelerators = _by_id(cats, "accelerators")
    for sid in ("gb200-nvl72", "gb300-nvl72", "mi355x-8"):
        assert systems[sid].liquid_cooling, sid
    for s in systems.values():
        if accelerators[s.accelerator].needs_liquid_cooling:
            assert s.liquid_cooling, f"{s.id}: its accelerator is liquid-cooled only"


def test_system_power_is_plausible(cats) -> None:
    """Whole-node power per GPU (GPU, its share of CPUs, NICs, fans, switches) is 0.5-3 kW, at least the
    GPU's own board power, and idle draws less than load."""
    accelerators = _by_id(cats, "accelerators")
    for s in _entries(cats, "systems"):
        per_gpu = s.node_power_kw / s.gpus_per_node
        assert 0.5 <= per_gpu <= 3.0, f"{s.id}: {per_gpu:.2f} kW per GPU"
        board = accelerators[s.accelerator].power_w
        if board is not None:
            assert per_gpu * 1000 >= board, f"{s.id}: less than the GPU's own {board:g} W"
        assert s.idle_power_kw is not None and 0 < s.idle_power_kw < s.node_power_kw, s.id


def test_system_prices_and_terms(cats) -> None:
    """Every price is positive; an estimate says how it was made, and the notes say what is estimated."""
    for s in _entries(cats, "systems"):
        assert s.price > 0, s.id
        if s.estimated:
            basis = s.price_per_node.basis
            assert basis and basis.strip(), f"{s.id}: estimated price without basis"
        assert s.notes and "estimate" in s.notes, f"{s.id}: notes must say which figures are estimates"
        assert 4 <= s.life_years <= 6, s.id
        assert 0 <= s.residual_fraction <= 0.3, s.id
        assert 0 < s.support_per_year < 0.25 * s.price, s.id
        assert s.lead_time_days is not None and 0 < s.lead_time_days <= 365, s.id


def test_the_loaded_catalog_carries_systems() -> None:
    from optimizer.inputs.catalog import load_catalog

    catalog = load_catalog()
    assert catalog.system("hgx-b200").accelerator == "b200"
    assert catalog.copy().systems == catalog.systems
    assert catalog.origins[("systems", "gb200-nvl72")].file == "<builtin>/systems.yaml"


def test_a_system_names_an_unknown_accelerator(tmp_path) -> None:
    from optimizer.errors import PlanError
    from optimizer.inputs.catalog import load_catalog

    extra = tmp_path / "ours.yaml"
    extra.write_text("systems:\n  - {id: our-box, accelerator: h100-sxn, price_per_node: 300000, node_power_kw: 10}\n")
    with pytest.raises(PlanError, match="system 'our-box' names unknown accelerator 'h100-sxn'"):
        load_catalog([extra])


def test_a_plans_offer_with_a_catalog_id_keeps_what_it_does_not_write(tmp_path: Path) -> None:
    """A plan restating coreweave-h100-sxm to give its negotiated prices and caps keeps the catalog's spot
    interruption rate and interconnect (they had fallen to their defaults — spot never interrupted, a plan 5%
    too cheap); what it writes wins, its prices replace the catalog's whole (a tier it leaves out is not
    sold), and the catalog's source is not claimed for its figures."""
    from optimizer.inputs.loading import load_plan


    def offer(extra: str, machine: str = "accelerator: h100-sxm, provider: coreweave, gpus_per_node: 8"):
        plan = tmp_path / "p.yaml"
        plan.write_text(f"""\
plan: override
horizon_days: 30
catalogs: [builtin]
offers:
  - {{id: coreweave-h100-sxm, {machine},
     price_per_gpu_hour: {{on-demand: 6.0, spot: 2.0}}, available_gpus: {{spot: 16}}{extra}}}
workloads:
  - {{name: hold, offers: [coreweave-h100-sxm], reserve_gpus: {{count: 8}}}}
""", encoding="utf-8")
        return load_plan(plan).catalog.offers["coreweave-h100-sxm"]

    offers = YAML(typ="safe").load((ROOT / "catalogs" / "offers.yaml").read_text(encoding="utf-8"))["offers"]
    listed = next(x for x in offers if x["id"] == "coreweave-h100-sxm")
    o = offer("")
    assert o.spot_interruption == listed["spot_interruption"] > 0
    assert o.scale_out_gb_s == listed["scale_out_gb_s"] > 0 and o.region == listed["region"]
    assert o.price("on-demand") == 6.0 and o.price("spot") == 2.0 and o.price("reserved-1y") is None
    assert o.available_gpus == {"spot": 16} and o.source is None
    assert offer(", spot_interruption: 0.0").spot_interruption == 0.0
    other = offer("", "accelerator: h100-sxm, provider: coreweave, gpus_per_node: 4")  # another machine: all its own
    assert other.spot_interruption == 0.0 and other.scale_out_gb_s is None
