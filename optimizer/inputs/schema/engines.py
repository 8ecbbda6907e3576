"""Serving engines (catalogs/engines.yaml): which accelerator generations each runs, at which precisions and
with which parallelism, and what it does on each generation (CUDA graphs, fused collectives and routing,
attention kernels) — pydantic only."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator, model_validator

from optimizer.inputs.schema.catalog import CatalogFile, Generation, Sourced, check_id

Family = Literal["tp", "pp", "ep", "disagg"]
FAMILIES: tuple[Family, ...] = ("tp", "pp", "ep", "disagg")


class EngineOnGeneration(Sourced):
    """What an engine runs on one accelerator generation, and how (the descriptive facts cite `source`)."""

    precisions: list[str] | None = None
    """Precision ids (catalogs/precisions.yaml) the engine serves on this generation; omitted: every precision
    the generation runs (precisions.yaml's native_on and weight_only_on)."""
    parallelism: list[Family] | None = None
    """Parallelism families it supports here; omitted: the engine's own list."""
    cuda_graph_max_batch: int | None = Field(default=None, ge=0)
    """Largest decode batch the engine captures a CUDA (or HIP) graph for by default; larger batches run
    without one. Omitted: set at start-up from the GPU's memory, or no graphs on this hardware (notes say)."""
    collective_fusion: str | None = None
    """How the tensor-parallel all-reduce is fused with the residual add and normalization, if it is."""
    routing_fusion: str | None = None
    """How MoE routing (top-k, token permutation) is fused into the expert GEMMs, if it is."""
    attention_kernel: str | None = None
    """The decode attention kernels the engine uses here."""

    @field_validator("precisions")
    @classmethod
    def _some(cls, v: list[str] | None) -> list[str] | None:
        if v is not None and not v:
            raise ValueError("is empty — list the precision ids it serves, or leave precisions out for all")
        return v


class Engine(Sourced):
    """A serving engine: the software a replica runs (vLLM, SGLang, TensorRT-LLM, …)."""

    id: str
    """An id (lower-case) that workloads (`engine:`), `policy.engines` and measured points refer to."""
    name: str | None = None
    """A display name ('TensorRT-LLM')."""
    aliases: list[str] = Field(default_factory=list)
    """Other names load-test files use for it ('tensorrt-llm', 'tensorrt_llm')."""
    generic: bool = False
    """The estimator's own calibration, not fitted to any one engine: an estimate on it is unvalidated."""
    parallelism: list[Family] = Field(default_factory=lambda: list(FAMILIES))
    """Parallelism families it supports: tp, pp, ep (experts over GPUs with data-parallel attention),
    disagg (prefill and decode on separate groups, the KV shipped between them)."""
    runs_on: dict[Generation, EngineOnGeneration] = Field(min_length=1)
    """The accelerator generations it runs on (catalogs/accelerators.yaml `generation`), each with its facts."""

    _id = field_validator("id")(check_id)

    @model_validator(mode="after")
    def _families_known(self) -> "Engine":
        for gen, on in self.runs_on.items():
            extra = [f for f in (on.parallelism or []) if f not in self.parallelism]
            if extra:
                raise ValueError(f"runs_on.{gen}.parallelism lists {', '.join(extra)}, which the engine's parallelism "
                                 f"({', '.join(self.parallelism)}) does not — add it there too, or drop it")
        return self

    def families(self, generation: str) -> list[str]:
        on = self.runs_on.get(generation)  # type: ignore[call-overload]
        return list(on.parallelism) if on is not None and on.parallelism is not None else list(self.parallelism)

    def why_not(self, generation: str, precision: str, family: str) -> str | None:
        """Why this engine cannot serve `precision` with `family` on `generation` (None: it can)."""
        on = self.runs_on.get(generation)  # type: ignore[call-overload]
        if on is None:
            return f"{self.id} does not run {generation}"
        if on.precisions is not None and precision not in on.precisions:
            return f"{self.id} serves no {precision} on {generation}"
        if family not in self.families(generation):
            return f"{self.id} has no {family} on {generation}"
        return None


class CatalogFileWithEngines(CatalogFile):
    """A catalog file with its serving engines (catalogs/engines.yaml, or an `engines:` section of your own)."""

    engines: list[Engine] = Field(default_factory=list)
    """Serving engines: the generations, precisions and parallelism each runs."""
