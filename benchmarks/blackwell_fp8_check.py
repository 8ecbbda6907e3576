"""A spot check outside the fit: Blackwell FP8, which no calibration row covers.

    python benchmarks/blackwell_fp8_check.py      # about 2 s

The one published comparison found of B200 against H200 and H100 at FP8 measured the same way
(CloudRift, January 2026: GLM-4.6-FP8 on 8-GPU nodes, vLLM, 8,000 tokens in and out at a fixed
concurrency; benchmarks/data/spot_blackwell_fp8.csv, each row with its source) against the estimate at
that batch, headroom included — the number a plan would use. These rows are not fitted: they only say
whether the extrapolation to an uncalibrated group is far off. Read them as rough: each run sends a
fixed number of prompts (two per concurrency slot; the H200 run at 256 one, all at once — a burst,
shown and not counted), so its throughput includes the ramp down, and vLLM's version is not recorded.
"""

from __future__ import annotations

import csv
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from optimizer.inputs.catalog import builtin_catalog  # noqa: E402
from optimizer.physics import roofline  # noqa: E402
from optimizer.physics.layout import Layout, links  # noqa: E402

DATA = ROOT / "benchmarks" / "data" / "spot_blackwell_fp8.csv"
ACCELERATORS = {"B200 180GB": "b200", "H200 SXM 141GB": "h200-sxm", "H100 SXM 80GB": "h100-sxm"}


def main() -> None:
    cat = builtin_catalog()
    model, prec = cat.models["glm-4.6"], cat.precisions["fp8"]
    layout = Layout("tp", tp=8)
    rows = []
    for r in csv.DictReader(DATA.open(encoding="utf-8")):
        if "expert parallel" in r["engine"]:
            continue  # the tp8 runs only: the estimator's ep layout is attention data-parallel, vLLM's here is not
        acc = cat.accelerators[ACCELERATORS[r["accelerator"]]]
        conc = int(re.search(r"\d+", r["concurrency_or_qps"]).group())
        est = roofline.estimate(model, prec, acc, layout, int(r["isl"]), int(r["osl"]), max_batch=conc,
                                params=cat.estimator, kv_bytes_per_elem=1.0, link=links(acc, layout, cat.estimator))
        pub = float(r["throughput_tok_s"])
        burst = "a burst" in r["notes"].lower()
        rows.append((r["accelerator"], conc, pub, est.goodput_output_tokens_per_s, est.group, est.calibrated, burst))
    print("GLM-4.6-FP8, tp8, 8,000 in / 8,000 out, vLLM (CloudRift, Jan 2026): output tok/s per 8-GPU node")
    print(f"{'accelerator':<16}{'concurrency':>12}{'published':>11}{'estimated':>11}{'error':>8}  group")
    for acc, conc, pub, est, group, calibrated, burst in rows:
        note = ("" if calibrated else " (uncalibrated: headroom kept)") + (" — burst, not counted" if burst else "")
        print(f"{acc:<16}{conc:>12}{pub:>11,.0f}{est:>11,.0f}{est / pub - 1:>+8.1%}  {group}{note}")
    by = {(a, c): (p, e) for a, c, p, e, _g, _c, b in rows if not b}
    for c in (128,):
        b, h = by.get(("B200 180GB", c)), by.get(("H200 SXM 141GB", c))
        if b and h:
            print(f"B200 ÷ H200 at concurrency {c}: published {b[0] / h[0]:.2f}, estimated {b[1] / h[1]:.2f}")


if __name__ == "__main__":
    main()
