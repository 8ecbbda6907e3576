"""The evidence behind an estimate: model classes, group keys, and the band borrowed from pooled groups."""

import pytest
from pydantic import ValidationError

from optimizer.inputs.catalog import load_catalog
from optimizer.inputs.schema.estimator import GroupEvidence, ValidationTable
from optimizer.physics.validation import goodput_ratio, model_class, validation_of


@pytest.fixture(scope="module")
def cat():
    return load_catalog([])


@pytest.mark.parametrize(("model", "cls"), [
    ("llama-3.1-70b", "dense"), ("mixtral-8x7b", "moe"), ("qwen3-235b-a22b", "moe"), ("deepseek-r1", "mla"),
    ("qwen3-next-80b-a3b", "hybrid"), ("gemma-3-27b", "hybrid")])
def test_model_classes(cat, model, cls):
    assert model_class(cat.models[model]) == cls


def _params(cat, groups, min_points=3):
    table = ValidationTable(min_points=min_points, groups={k: GroupEvidence(**v) for k, v in groups.items()})
    return cat.estimator.model_copy(update={"validation": table})


def test_group_key_names_generation_dtype_engine_and_class(cat):
    v = validation_of(_params(cat, {}), cat.accelerators["h100-sxm"], cat.precisions["fp8"],
                      cat.models["deepseek-r1"], "sglang")
    assert v.group == "hopper/fp8/sglang/mla" and v.engine == "sglang"
    generic = validation_of(_params(cat, {}), cat.accelerators["h100-sxm"], cat.precisions["bf16"],
                            cat.models["llama-3.1-70b"], None)
    assert generic.group == "hopper/bf16/generic/dense" and generic.engine is None


def test_weight_only_and_fp16_groups_as_the_roofline_names_them(cat):
    awq = validation_of(_params(cat, {}), cat.accelerators["h100-sxm"], cat.precisions["int4-awq"],
                        cat.models["llama-3.1-70b"], "vllm")
    assert awq.group == "hopper/weight-only/vllm/dense"


def test_no_table_nothing_validated(cat):
    v = validation_of(_params(cat, {}), cat.accelerators["h100-sxm"], cat.precisions["fp8"],
                      cat.models["llama-3.1-70b"], "vllm")
    assert (v.source, v.points, v.validated, v.error_p10, v.error_p90, v.band_from) == \
        ("estimated", 0, False, None, None, None)


def test_own_group_with_enough_points(cat):
    p = _params(cat, {"hopper/fp8/vllm/dense": {"points": 5, "error_p10": -0.1, "error_p90": 0.2},
                      "hopper/fp8/*/dense": {"points": 50, "error_p10": -0.3, "error_p90": 0.4}})
    v = validation_of(p, cat.accelerators["h100-sxm"], cat.precisions["fp8"], cat.models["llama-3.1-70b"], "vllm")
    assert v.validated and v.points == 5 and (v.error_p10, v.error_p90) == (-0.1, 0.2)
    assert v.band_from == "hopper/fp8/vllm/dense"


def test_too_few_points_borrows_the_engine_pooled_band_then_the_class_pooled(cat):
    acc, prec, model = cat.accelerators["h100-sxm"], cat.precisions["fp8"], cat.models["llama-3.1-70b"]
    p = _params(cat, {"hopper/fp8/vllm/dense": {"points": 2, "error_p10": -0.1, "error_p90": 0.2},
                      "hopper/fp8/*/dense": {"points": 9, "error_p10": -0.3, "error_p90": 0.4},
                      "hopper/fp8/*/*": {"points": 40, "error_p10": -0.5, "error_p90": 0.6}})
    v = validation_of(p, acc, prec, model, "vllm")
    assert not v.validated and v.points == 2
    assert v.band_from == "hopper/fp8/*/dense" and (v.error_p10, v.error_p90) == (-0.3, 0.4)
    p2 = _params(cat, {"hopper/fp8/*/dense": {"points": 2, "error_p10": -0.3, "error_p90": 0.4},
                       "hopper/fp8/*/*": {"points": 40, "error_p10": -0.5, "error_p90": 0.6}})
    v2 = validation_of(p2, acc, prec, model, "vllm")
    assert v2.points == 0 and not v2.validated
    assert v2.band_from == "hopper/fp8/*/*" and (v2.error_p10, v2.error_p90) == (-0.5, 0.6)
    # another generation's evidence is never borrowed
    v3 = validation_of(p2, cat.accelerators["b200"], prec, model, "vllm")
    assert v3.band_from is None and v3.error_p10 is None


def test_min_points_is_the_tables(cat):
    acc, prec, model = cat.accelerators["h100-sxm"], cat.precisions["fp8"], cat.models["llama-3.1-70b"]
    groups = {"hopper/fp8/vllm/dense": {"points": 2, "error_p10": -0.1, "error_p90": 0.2}}
    assert validation_of(_params(cat, groups, min_points=2), acc, prec, model, "vllm").validated
    assert not validation_of(_params(cat, groups, min_points=3), acc, prec, model, "vllm").validated


def test_measured_is_validated_whatever_the_table(cat):
    v = validation_of(_params(cat, {}), cat.accelerators["h100-sxm"], cat.precisions["fp8"],
                      cat.models["llama-3.1-70b"], None, measured=True)
    assert v.source == "measured" and v.validated and v.points == 0


def test_goodput_ratio_ends_of_the_band(cat):
    p = _params(cat, {"hopper/fp8/vllm/dense": {"points": 5, "error_p10": -0.2, "error_p90": 0.25}})
    v = validation_of(p, cat.accelerators["h100-sxm"], cat.precisions["fp8"], cat.models["llama-3.1-70b"], "vllm")
    # over-estimated by 25%: delivers 0.8 of the estimate; under-estimated by 20%: delivers 1.25 of it
    assert goodput_ratio(v, "low") == pytest.approx(0.8)
    assert goodput_ratio(v, "high") == pytest.approx(1.25)


def test_the_table_refuses_a_band_upside_down():
    with pytest.raises(ValidationError, match="swap them"):
        GroupEvidence(points=3, error_p10=0.2, error_p90=-0.1)
    with pytest.raises(ValidationError):
        GroupEvidence(points=-1, error_p10=0.0, error_p90=0.1)


def test_a_pooled_group_the_table_has_no_row_for_is_the_envelope_of_the_groups_it_pools(cat):
    acc, prec, model = cat.accelerators["h100-sxm"], cat.precisions["fp8"], cat.models["llama-3.1-70b"]
    p = _params(cat, {"hopper/fp8/vllm/dense": {"points": 1, "error_p10": -0.1, "error_p90": 0.2},
                      "hopper/fp8/sglang/dense": {"points": 2, "error_p10": -0.3, "error_p90": 0.1},
                      "hopper/fp8/sglang/moe": {"points": 9, "error_p10": -0.4, "error_p90": 0.5},
                      "hopper/bf16/vllm/dense": {"points": 50, "error_p10": -0.9, "error_p90": 0.9}})
    v = validation_of(p, acc, prec, model, "vllm")
    # hopper/fp8/*/dense pools vllm and sglang: 1 + 2 = 3 points, the band that holds both
    assert not v.validated and v.points == 1
    assert v.band_from == "hopper/fp8/*/dense" and (v.error_p10, v.error_p90) == (-0.3, 0.2)
    p2 = _params(cat, {"hopper/fp8/vllm/dense": {"points": 1, "error_p10": -0.1, "error_p90": 0.2},
                       "hopper/fp8/sglang/moe": {"points": 9, "error_p10": -0.4, "error_p90": 0.5}})
    v2 = validation_of(p2, acc, prec, model, "vllm")
    assert v2.band_from == "hopper/fp8/*/*" and (v2.error_p10, v2.error_p90) == (-0.4, 0.5)
