"""The catalog loader on random bad entries and bytes: a PlanError (exit 2), never a traceback.
HYPOTHESIS_PROFILE=thorough runs 2,000 examples per property instead of 200."""

from __future__ import annotations

import io
import tempfile
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st
from ruamel.yaml import YAML

from tests.helpers.bad_input_rule import reader_settings

from optimizer.errors import PlanError  # noqa: E402
from optimizer.inputs.catalog import load_catalog  # noqa: E402

SETTINGS = reader_settings()
VALUES = st.one_of(st.none(), st.booleans(), st.integers(min_value=-10**12, max_value=10**12),
                   st.floats(allow_nan=False, allow_infinity=False, min_value=-1e15, max_value=1e15),
                   st.text(max_size=6), st.lists(st.integers(), max_size=3),
                   st.dictionaries(st.sampled_from(["bf16", "fp8", "x"]), st.floats(allow_nan=False), max_size=2))
ACCELERATOR = st.fixed_dictionaries({"id": st.sampled_from(["gpu-a", "h100-sxm", "Bad Id", ""])}, optional={
    k: VALUES for k in ("memory_gb", "memory_bytes", "bandwidth_tb_s", "tflops_dense", "scale_up_gpus",
                        "scale_up_bandwidth_gb_s", "pcie_gb_s", "power_w", "generation", "unknown_key")})
MODEL = st.fixed_dictionaries({"id": st.sampled_from(["model-a", "llama-3.1-70b", "Bad Id"])}, optional={
    k: VALUES for k in ("params_b", "active_params_b", "layers", "attention_heads", "kv_heads", "head_dim",
                        "attention", "kv_gb_per_seq", "sliding_window", "sliding_window_layers", "experts")})
FILES = st.fixed_dictionaries({}, optional={"accelerators": st.lists(ACCELERATOR, max_size=3),
                                            "models": st.lists(MODEL, max_size=3), "offers": VALUES})


def _load(path: Path) -> None:
    try:
        load_catalog([path], builtin=False)  # the file's own entries: the shipped ones are checked elsewhere
    except PlanError:
        pass


@SETTINGS
@given(doc=FILES)
def test_catalog_entries_never_give_a_traceback(doc):
    text = io.StringIO()
    YAML().dump(doc, text)
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "catalog.yaml"
        path.write_text(text.getvalue(), encoding="utf-8")
        _load(path)


@SETTINGS
@given(data=st.binary(max_size=300))
def test_catalog_bytes_never_give_a_traceback(data):
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "catalog.yaml"
        path.write_bytes(b"accelerators:\n" + data)
        _load(path)
