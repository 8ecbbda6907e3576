"""A seeded gateway usage log with a known diurnal and weekly shape, and the truth it was drawn from.

Used by tests/calibrate/test_calibrate.py (thousands of events, `exact` hours) and by
benchmarks/calibrate_scaling.py (millions of events, Poisson arrivals); `generate_growing` draws weeks
of a log whose demand grows, with day and hour noise, and the months after it (tests/calibrate/test_forecast.py,
benchmarks/forecast_accuracy.py).

Shape: each workload has a peak in output tokens/s and a 24-hour profile per day type
(fractions of that peak, weekends below 1). Requests arrive uniformly inside each hour; output
lengths are gamma-distributed around the workload's mean, input lengths likewise.
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass, field
from pathlib import Path
from zoneinfo import ZoneInfo

import duckdb
import numpy as np
import pandas as pd

CHAT_WEEKDAY = [0.22, 0.18, 0.15, 0.14, 0.15, 0.20, 0.32, 0.50, 0.70, 0.85, 0.93, 0.97,
                0.95, 0.98, 1.00, 0.98, 0.93, 0.85, 0.72, 0.62, 0.55, 0.48, 0.38, 0.29]
CHAT_WEEKEND = [0.20, 0.16, 0.13, 0.12, 0.12, 0.14, 0.18, 0.25, 0.34, 0.42, 0.48, 0.52,
                0.54, 0.55, 0.55, 0.54, 0.52, 0.50, 0.47, 0.44, 0.40, 0.35, 0.29, 0.24]
CODE_WEEKDAY = [0.05, 0.04, 0.03, 0.03, 0.04, 0.08, 0.20, 0.45, 0.75, 0.95, 1.00, 0.96,
                0.80, 0.92, 1.00, 0.97, 0.88, 0.70, 0.45, 0.28, 0.20, 0.15, 0.10, 0.07]
CODE_WEEKEND = [0.04, 0.03, 0.03, 0.03, 0.03, 0.04, 0.05, 0.07, 0.10, 0.13, 0.15, 0.16,
                0.15, 0.16, 0.16, 0.15, 0.14, 0.12, 0.10, 0.09, 0.08, 0.07, 0.06, 0.05]


@dataclass(frozen=True)
class SynthWorkload:
    name: str
    event_model: str
    """What the log's model field says (a workload name or a model id)."""
    profile: dict[str, list[float]]
    mean_input_tokens: float
    mean_output_tokens: float
    event_share: float
    tenants: dict[str, float]


NIGHT = [1.0] * 6 + [0.0] * 16 + [1.0] * 2
"""A batch job that runs 22:00–06:00 every day."""

DEFAULT_WORKLOADS = (
    SynthWorkload("chat", "llama-3.1-70b", {"weekday": CHAT_WEEKDAY, "weekend": CHAT_WEEKEND},
                  2000, 400, 0.5, {"team-a": 0.6, "team-b": 0.3, "team-c": 0.1}),
    SynthWorkload("code-assistant", "code-assistant", {"weekday": CODE_WEEKDAY, "weekend": CODE_WEEKEND},
                  6000, 300, 0.35, {"ide": 0.8, "ci": 0.2}),
    SynthWorkload("nightly-summaries", "llama-3.1-8b", {"weekday": NIGHT, "weekend": NIGHT},
                  3000, 300, 0.15, {"batch": 1.0}),
)


@dataclass
class Truth:
    peak_output_tokens_per_s: dict[str, float] = field(default_factory=dict)
    profile: dict[str, dict[str, list[float]]] = field(default_factory=dict)
    mean_input_tokens: dict[str, float] = field(default_factory=dict)
    mean_output_tokens: dict[str, float] = field(default_factory=dict)
    tenant_shares: dict[str, dict[str, float]] = field(default_factory=dict)
    output_tokens_per_day: dict[str, dict[str, float]] = field(default_factory=dict)
    """Per workload and day type: peak × Σ profile × 3600."""
    events: int = 0
    start: dt.date | None = None
    days: int = 0


@dataclass
class Events:
    """Columns of the log, sorted by time."""

    epoch_s: np.ndarray
    model: np.ndarray
    tenant: np.ndarray
    prompt_tokens: np.ndarray
    completion_tokens: np.ndarray


def _day_type(d: dt.date) -> str:
    return "weekend" if d.weekday() >= 5 else "weekday"


def generate(n_events: int, *, days: int = 14, start: dt.date = dt.date(2026, 7, 6), seed: int = 7,
             mode: str = "exact", tz: str = "UTC",
             workloads: tuple[SynthWorkload, ...] = DEFAULT_WORKLOADS) -> tuple[Events, Truth]:
    """Draw about `n_events` requests over `days` days from `start` (local dates in `tz`).

    mode "exact": each hour carries exactly its share of the peak (request counts rounded, output
    lengths drawn then scaled to the hour's total) — few events, no sampling noise in the shape.
    mode "poisson": Poisson arrivals per hour, lengths drawn independently — realistic noise.
    """
    rng = np.random.default_rng(seed)
    zone = ZoneInfo(tz)
    dates = [start + dt.timedelta(days=i) for i in range(days)]
    hour_starts = np.array([dt.datetime(d.year, d.month, d.day, h, tzinfo=zone).timestamp()
                            for d in dates for h in range(24)])
    truth = Truth(start=start, days=days)
    parts: list[tuple[np.ndarray, ...]] = []
    for w in workloads:
        shape = np.array([w.profile[_day_type(d)][h] for d in dates for h in range(24)])
        n_w = n_events * w.event_share
        peak = n_w * w.mean_output_tokens / (3600.0 * shape.sum())
        truth.peak_output_tokens_per_s[w.name] = peak
        truth.profile[w.name] = {k: list(v) for k, v in w.profile.items()}
        truth.mean_input_tokens[w.name] = w.mean_input_tokens
        truth.mean_output_tokens[w.name] = w.mean_output_tokens
        truth.tenant_shares[w.name] = dict(w.tenants)
        truth.output_tokens_per_day[w.name] = {k: peak * sum(v) * 3600.0 for k, v in w.profile.items()}
        target_tokens = peak * shape * 3600.0
        lam = target_tokens / w.mean_output_tokens
        if mode == "exact":
            # Every hour with demand gets at least one request (so its tokens land in it); busier
            # hours give up the same number of requests, so the mean length stays exact.
            quiet = (lam < 1) & (target_tokens > 0)
            busy = lam >= 1
            excess = float((1 - lam[quiet]).sum())
            scaled = np.where(busy, lam * (1 - excess / max(float(lam[busy].sum()), 1e-9)), 0.0)
            cum = np.floor(np.cumsum(scaled) + 0.5)
            counts = np.diff(np.concatenate([[0.0], cum])).astype(np.int64)
            counts = np.where(quiet, 1, np.where(busy, np.maximum(counts, 1), 0)).astype(np.int64)
        elif mode == "poisson":
            counts = rng.poisson(lam)
        else:
            raise ValueError(f"unknown mode {mode!r}")
        total = int(counts.sum())
        hour_idx = np.repeat(np.arange(len(shape)), counts)
        epoch = hour_starts[hour_idx] + rng.uniform(0.0, 3600.0, size=total)
        out = rng.gamma(4.0, w.mean_output_tokens / 4.0, size=total)
        if mode == "exact":
            # Scale each hour's lengths so the hour carries exactly its target tokens.
            sums = np.bincount(hour_idx, weights=out, minlength=len(shape))
            scale = np.divide(target_tokens, sums, out=np.zeros_like(sums), where=sums > 0)
            out = out * scale[hour_idx]
        out = np.maximum(np.rint(out), 1).astype(np.int64)
        inp = np.maximum(np.rint(rng.gamma(8.0, w.mean_input_tokens / 8.0, size=total)), 1).astype(np.int64)
        names = np.array(list(w.tenants))
        tenant = names[rng.choice(len(names), size=total, p=np.array(list(w.tenants.values())))]
        model = np.full(total, w.event_model, dtype=object)
        parts.append((epoch, model, tenant.astype(object), inp, out))
    epoch = np.concatenate([p[0] for p in parts])
    order = np.argsort(epoch, kind="stable")
    ev = Events(epoch[order], np.concatenate([p[1] for p in parts])[order],
                np.concatenate([p[2] for p in parts])[order], np.concatenate([p[3] for p in parts])[order],
                np.concatenate([p[4] for p in parts])[order])
    truth.events = len(epoch)
    return ev, truth


def _iso(epoch_s: np.ndarray, *, zulu: bool = True) -> np.ndarray:
    """ISO 8601 strings with milliseconds, UTC ('Z' or naive)."""
    ms = np.rint(epoch_s * 1000).astype("datetime64[ms]")
    text = np.datetime_as_string(ms, unit="ms")
    return np.char.add(text, "Z") if zulu else np.char.replace(text, "T", " ")


def write(events: Events, path: Path, *, style: str = "openai", fmt: str | None = None) -> Path:
    """Write the log as CSV, JSON Lines or Parquet (by suffix), in OpenAI-usage or LiteLLM columns."""
    path = Path(path)
    fmt = fmt or {".csv": "csv", ".jsonl": "jsonl", ".parquet": "parquet"}[path.suffix]
    n = len(events.epoch_s)
    if style == "openai":
        cols = {
            "timestamp": _iso(events.epoch_s),
            "model": events.model,
            "tenant": events.tenant,
            "prompt_tokens": events.prompt_tokens,
            "completion_tokens": events.completion_tokens,
            "total_tokens": events.prompt_tokens + events.completion_tokens,
        }
    elif style == "litellm":
        cols = {
            "request_id": np.char.add("req-", np.arange(n).astype(str)),
            "startTime": _iso(events.epoch_s, zulu=False),
            "endTime": _iso(events.epoch_s + 2.0, zulu=False),
            "model": np.char.add("hosted_vllm/", events.model.astype(str)),
            "model_group": events.model,
            "prompt_tokens": events.prompt_tokens,
            "completion_tokens": events.completion_tokens,
            "spend": np.round(events.completion_tokens * 1e-6, 8),
            "team_id": events.tenant,
            "user": np.char.add("user-", (np.arange(n) % 17).astype(str)),
            "status": np.full(n, "success", dtype=object),
        }
    elif style == "epoch":
        cols = {
            "timestamp": np.round(events.epoch_s, 3),
            "model": events.model,
            "tenant": events.tenant,
            "prompt_tokens": events.prompt_tokens,
            "completion_tokens": events.completion_tokens,
        }
    else:
        raise ValueError(f"unknown style {style!r}")
    frame = pd.DataFrame({k: (v.tolist() if v.dtype == object else v) for k, v in cols.items()})
    path.parent.mkdir(parents=True, exist_ok=True)
    if fmt == "csv":
        frame.to_csv(path, index=False)
    elif fmt == "parquet":
        # DuckDB (a runtime dependency: planopt reads logs with it) writes the Parquet file.
        con = duckdb.connect()
        try:
            con.register("events", frame)
            con.execute(f"COPY events TO '{str(path).replace(chr(39), chr(39) * 2)}' (FORMAT parquet)")
        finally:
            con.close()
    elif fmt == "jsonl":
        with path.open("w", encoding="utf-8") as f:
            for row in frame.to_dict(orient="records"):
                f.write(json.dumps({k: (v.item() if hasattr(v, "item") else v) for k, v in row.items()}) + "\n")
    else:
        raise ValueError(f"unknown format {fmt!r}")
    return path


@dataclass
class GrowthTruth:
    """What `generate_growing` drew: each workload's hourly output tokens/s, in the log and after it."""

    start: dt.date
    log_days: int
    rates: dict[str, np.ndarray] = field(default_factory=dict)
    """Workload → output tokens/s per local hour from `start` (24 a day), noise included."""
    monthly_growth: dict[str, float] = field(default_factory=dict)

    def busiest_hour(self, name: str, first: dt.date, days: int) -> float:
        """The truth a forecast of that month is judged by: its busiest hour as drawn, noise included."""
        a = (first - self.start).days * 24
        return float(self.rates[name][a:a + days * 24].max())


def generate_growing(*, weeks: int, until: dt.date, start: dt.date = dt.date(2026, 10, 5), seed: int = 0,
                     peaks: dict[str, float] | None = None, monthly_growth: dict[str, float] | None = None,
                     noise: float = 0.08, day_noise: float = 0.04, requests_per_hour: int = 3, tz: str = "UTC",
                     workloads: tuple[SynthWorkload, ...] = DEFAULT_WORKLOADS[:2]) -> tuple[Events, GrowthTruth]:
    """Weeks of a log whose demand grows, and what came after it.

    Each workload's output tokens/s in local hour t is peak × profile[day type][hour] ×
    (1 + monthly_growth)^(days since start ÷ 30.4375) × exp(a shock for the day + noise for the hour),
    both normal on the log scale (sd `day_noise`, `noise`). It is drawn from `start` to `until`; the log
    (the Events) holds the first `weeks` weeks, each hour's tokens split exactly over
    `requests_per_hour` requests.
    """
    rng = np.random.default_rng(seed)
    zone = ZoneInfo(tz)
    total_days = (until - start).days
    log_days = weeks * 7
    assert total_days > log_days, "until must be after the log"
    dates = [start + dt.timedelta(days=i) for i in range(total_days)]
    peaks = peaks or {w.name: p for w, p in zip(workloads, (9000.0, 3500.0, 800.0, 400.0))}
    monthly_growth = monthly_growth or {w.name: 0.05 for w in workloads}
    truth = GrowthTruth(start, log_days, monthly_growth=dict(monthly_growth))
    t_months = np.arange(total_days * 24) / 24.0 / 30.4375
    hour_starts = np.array([dt.datetime(d.year, d.month, d.day, h, tzinfo=zone).timestamp()
                            for d in dates[:log_days] for h in range(24)])
    parts = []
    for w in workloads:
        shape = np.array([w.profile[_day_type(d)][h] for d in dates for h in range(24)])
        shock = np.repeat(rng.normal(0.0, day_noise, total_days), 24) + rng.normal(0.0, noise, total_days * 24)
        rates = peaks[w.name] * shape * (1 + monthly_growth[w.name]) ** t_months * np.exp(shock)
        truth.rates[w.name] = rates
        n_hours = log_days * 24
        k = requests_per_hour
        hour_idx = np.repeat(np.arange(n_hours), k)
        out = rng.gamma(4.0, 1.0, size=n_hours * k).reshape(n_hours, k)
        out = out / out.sum(axis=1, keepdims=True) * (rates[:n_hours] * 3600.0)[:, None]
        completion = np.maximum(np.rint(out.ravel()), 1).astype(np.int64)
        epoch = hour_starts[hour_idx] + rng.uniform(0.0, 3600.0, size=n_hours * k)
        prompt = np.maximum(np.rint(rng.gamma(8.0, w.mean_input_tokens / 8.0, size=n_hours * k)), 1).astype(np.int64)
        names = np.array(list(w.tenants))
        tenant = names[rng.choice(len(names), size=n_hours * k, p=np.array(list(w.tenants.values())))]
        parts.append((epoch, np.full(n_hours * k, w.event_model, dtype=object), tenant.astype(object), prompt,
                      completion))
    epoch = np.concatenate([p[0] for p in parts])
    order = np.argsort(epoch, kind="stable")
    ev = Events(epoch[order], np.concatenate([p[1] for p in parts])[order],
                np.concatenate([p[2] for p in parts])[order], np.concatenate([p[3] for p in parts])[order],
                np.concatenate([p[4] for p in parts])[order])
    return ev, truth
