"""How a replica spreads over GPUs (its parallelism) and the links its collectives run on.

Families (vocab.PARALLELISM):
  tp      one tensor-parallel group of `tp` GPUs, in a scale-up domain or over PCIe;
  pp      `pp` pipeline stages of `tp` GPUs each, across nodes;
  ep      MoE: experts spread over the `tp × dp` GPUs of a stage, attention data-parallel (each of the
          `dp` groups holds its own sequences and their KV), as DeepSeek-style models are served;
  disagg  prefill and decode on separate groups, sized together (physics/roofline.disaggregated).
"""

from __future__ import annotations

from dataclasses import dataclass

from optimizer.inputs.schema.catalog import Accelerator
from optimizer.inputs.schema.estimator import EstimatorParams

GB_S = 1e9


@dataclass(frozen=True)
class Layout:
    """One replica's parallelism: `gpus` = tp × dp × pp."""

    family: str = "tp"
    tp: int = 1
    """Tensor-parallel degree of attention (and dense layers) inside a stage."""
    pp: int = 1
    """Pipeline stages."""
    dp: int = 1
    """Data-parallel attention groups per stage (ep family); experts spread over all tp × dp GPUs."""

    def __post_init__(self) -> None:
        if self.tp < 1 or self.pp < 1 or self.dp < 1:
            raise ValueError("tp, pp and dp must be ≥ 1")

    @property
    def stage_gpus(self) -> int:
        return self.tp * self.dp

    @property
    def gpus(self) -> int:
        return self.tp * self.dp * self.pp

    @property
    def label(self) -> str:
        """'tp4', 'tp8 × pp2', 'ep16 (dp-attention)', 'tp2 × ep8' — built from the degrees, never parsed."""
        if self.family == "ep":
            head = f"ep{self.stage_gpus} (dp-attention)" if self.tp == 1 else f"tp{self.tp} × ep{self.stage_gpus}"
        else:
            head = f"tp{self.tp}"
        return head + (f" × pp{self.pp}" if self.pp > 1 else "")

    @property
    def key(self) -> str:
        """The part of a candidate key that names the layout: 'tp4', 'tp8pp2', 'ep16', 'tp2ep8pp2'."""
        if self.family == "ep":
            head = f"ep{self.stage_gpus}" if self.tp == 1 else f"tp{self.tp}ep{self.stage_gpus}"
        else:
            head = f"tp{self.tp}"
        return head + (f"pp{self.pp}" if self.pp > 1 else "")


TP1 = Layout()


@dataclass(frozen=True)
class Links:
    """Bandwidths (bytes/s, one direction, effective) and latencies (s) a replica's collectives see."""

    tp_bw: float
    """Per GPU, for the all-reduces of a tensor-parallel group."""
    tp_latency: float
    tp_kind: str
    """nvlink, mesh, pcie or none."""
    a2a_bw: float
    """Per GPU, for the expert all-to-all of a stage: NVLink inside a domain; across machines the effective
    bandwidth of the whole exchange, its peers in the domain over NVLink and the rest over the network."""
    a2a_latency: float
    stage_bw: float
    """Per GPU, between pipeline stages (and to ship KV from a prefill to a decode group)."""
    stage_latency: float


def scale_up_bw_gb_s(acc: Accelerator, tp: int, p: EstimatorParams) -> float:
    """Per-GPU, per-direction bandwidth a group of `tp` GPUs gets inside the scale-up domain:
    NVSwitch gives every GPU its full bandwidth; a mesh (Infinity Fabric) one link per peer."""
    if acc.topology == "mesh" and acc.scale_up_link_gb_s:
        return acc.scale_up_link_gb_s * max(tp - 1, 1)
    return acc.scale_up_bandwidth_gb_s or p.fallback_scale_up_gb_s


def links(acc: Accelerator, layout: Layout, p: EstimatorParams, *, domain: int | None = None,
          scale_out_gb_s: float | None = None) -> Links:
    """The links of a layout on an accelerator; `domain` is the scale-up domain the offer gives
    (default the accelerator's), `scale_out_gb_s` its inter-node bandwidth per GPU."""
    domain = acc.scale_up_gpus if domain is None else domain
    pcie = (acc.pcie_gb_s or p.fallback_scale_up_gb_s) * GB_S * p.eta_pcie
    out_gb_s = scale_out_gb_s if scale_out_gb_s is not None else (acc.scale_out_gb_s or p.fallback_scale_out_gb_s)
    out = max(out_gb_s, 1e-3) * GB_S * p.eta_scale_out
    if layout.tp <= 1:
        tp_bw, tp_lat, kind = 0.0, 0.0, "none"
    elif layout.tp <= domain and acc.topology != "pcie":
        tp_bw = scale_up_bw_gb_s(acc, layout.tp, p) * GB_S * p.eta_scale_up
        tp_lat, kind = p.allreduce_latency_us * 1e-6, ("mesh" if acc.topology == "mesh" else "nvlink")
    else:
        tp_bw, tp_lat, kind = pcie, p.pcie_latency_us * 1e-6, "pcie"
    stage = layout.stage_gpus
    if stage <= domain and acc.topology != "pcie":
        a2a_bw = scale_up_bw_gb_s(acc, stage, p) * GB_S * p.eta_scale_up
        a2a_lat = p.allreduce_latency_us * 1e-6
    elif acc.topology != "pcie" and domain > 1:
        # Experts over several machines: of a GPU's stage − 1 peers, domain − 1 share its scale-up domain
        # and stage − domain are across the network; both parts of the all-to-all run at once, so it
        # takes the longer of the two (each token still goes to every remote expert it routes to: the
        # low-latency dispatch decode uses, without forwarding through a peer of the remote machine).
        local = scale_up_bw_gb_s(acc, domain, p) * GB_S * p.eta_scale_up
        a2a_bw = (stage - 1) / max((domain - 1) / local, (stage - domain) / out)
        a2a_lat = p.scale_out_latency_us * 1e-6
    else:
        a2a_bw, a2a_lat = out, p.scale_out_latency_us * 1e-6
    if layout.gpus <= domain and acc.topology != "pcie":
        stage_bw, stage_lat = scale_up_bw_gb_s(acc, layout.gpus, p) * GB_S * p.eta_scale_up, p.allreduce_latency_us * 1e-6
    else:
        stage_bw, stage_lat = out, p.scale_out_latency_us * 1e-6
    return Links(tp_bw, tp_lat, kind, a2a_bw, a2a_lat, stage_bw, stage_lat)
