"""The integer program's math, stated once: its sets, variables, objective, every constraint family and the
rules that live outside it. docs/model.md is generated from this registry (`planopt schema --model`), the
define_* functions that build each family refer to it, and tests check that every row name of a built
program belongs to a family here and that docs/model.md has not drifted.

No PuLP: a registry of text. `built_by` names the function that builds a family (module.function, resolved
by the tests), `rows` the prefixes of its PuLP row names (the family's name unless said otherwise), which
are also the names the "what binds" report uses.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Kind = Literal["constraint", "cut", "tie-break"]


@dataclass(frozen=True)
class Symbol:
    """A set or a variable of the program."""

    symbol: str
    domain: str
    meaning: str


@dataclass(frozen=True)
class Family:
    """One family of rows: the same inequality over an index set."""

    name: str
    """The family as Program.add records it; the prefix of its row names unless `rows` says otherwise."""
    kind: Kind
    index: str
    """The index sets the family runs over (which rows exist)."""
    math: str
    """The inequality (or equation), once."""
    meaning: str
    built_by: str
    """module.function (in optimizer.optimize) that adds the rows."""
    rows: tuple[str, ...] = ()
    """Prefixes of the PuLP row names; empty: the family's name."""
    note: str = ""

    @property
    def row_prefixes(self) -> tuple[str, ...]:
        return self.rows or (self.name,)


@dataclass(frozen=True)
class Term:
    """A term of an objective."""

    name: str
    math: str
    meaning: str
    built_by: str


@dataclass(frozen=True)
class Rule:
    """A rule a newcomer looks for in the program that lives elsewhere (a constant by the time the program
    is built, a bound, or a step of the solve)."""

    name: str
    rule: str
    where: tuple[str, ...]
    """path/to/module.py::function (or ::Class.method): where the rule is computed."""


SETS: tuple[Symbol, ...] = (
    Symbol("w ∈ W", "workloads", "each in one pool p(w); kind interactive, batch or reserve"),
    Symbol("c ∈ C(w)", "candidate configs of w", "an offer o(c), accelerator, precision, layout and API ceiling; "
           "its hourly GPUs G[c,d,h] or its batch goodput γ_c and GPUs per replica f_c are constants"),
    Symbol("o ∈ O", "offers", "m_o GPUs per node; prices by tier k; caps available_gpus[o,k]; spot interruption ι_o"),
    Symbol("p ∈ P", "pools", "workloads that share capacity; pools may share reserved nodes (policy)"),
    Symbol("s ∈ S", "segments", "a day type d(s), or a day type within a contract period π(s); n_s plan days"),
    Symbol("h ∈ 0..23", "hours of day", "a batch workload's window(w) is a subset"),
    Symbol("k", "purchase tiers", "reserved-1y, reserved-3y, buy (servers of your own), on-demand, spot"),
    Symbol("π", "contract periods", "days over which the GPUs under contract (or owned), K[o,π], stay the same"),
    Symbol("t ∈ T", "reservation start days", "days after the first a new reservation may start on "
           "(policy.reservation_starts: a signed contract's expiry, a month's first day); each starts a contract "
           "period, and an offer selling a reserved tier then plans its supply per period; t(s): the first day of "
           "segment s's period (0 for a segment of the whole horizon)"),
    Symbol("j ∈ J", "spend commitments", "savings_plans (new: U[j] chosen, one from each day it may start on — the "
           "first, and by policy.reservation_starts the day after the provider's signed one ends, or a month's "
           "first day — running from then: spend.start_days) and spend_commitments (signed: U_j given) "
           "of a provider, as AWS Savings Plans and GCP spend-based committed-use discounts work: discount δ_j off "
           "the on-demand price of the use it covers, at its offers O(j) (its provider's, or those it lists), on the "
           "days it runs (the calendar is cut where a signed one starts or stops: spend.cut_days); s ∈ S(j): the "
           "segments of its offers' periods it runs in"),
    Symbol("ξ", "scenarios", "weight π_ξ; each has day types of its own (scenario plans only)"),
)

VARIABLES: tuple[Symbol, ...] = (
    Symbol("x[c]", "{0,1}", "config c serves its workload (the constant 1 when it is the only one); for a workload "
           "that may move (policy.moves), in the first contract period"),
    Symbol("x[c,π]", "{0,1}", "policy.moves only: config c serves its workload in contract period π after the first "
           "(c among the configs it may move among, M(w)); in every row below, x[c] at a segment s of a later period "
           "stands for x[c,π(s)]"),
    Symbol("v[c,π]", "≥ 0", "policy.moves only: 1 when the workload moves onto config c at period π's first day"),
    Symbol("n[c,s,h]", "≥ 0, ≤ the day's replica-hours",
           "replica-hours of batch config c (continuous: a replica may run part of an hour)"),
    Symbol("y[c,s]", "[0, max_share]", "share of batch config c's daily output tokens sent to the API"),
    Symbol("a[o,p,π]", "ℤ ≥ 0, ≤ K[o,π]", "GPUs under contract pool p holds at o in period π (pools not sharing)"),
    Symbol("R[o,(p),k]", "ℤ ≥ 0, ≤ cap ÷ m_o",
           "reserved nodes for the whole horizon (per pool when pools do not share); k = buy: servers bought, "
           "serving from their delivery (one level, all pools)"),
    Symbol("R[o,(p),k,t]", "ℤ ≥ 0, ≤ cap ÷ m_o",
           "reserved nodes starting on day t ∈ T (a renewal at expiry, a later start), held from t to the horizon's "
           "end; in every row below, Σ_k R[o,p,k] at segment s stands for Σ_k (R[o,p,k] + Σ_{t ≤ t(s)} R[o,p,k,t])"),
    Symbol("L[o,p,s,h]", "≥ 0", "reserved and committed GPUs lent to pool p (pools sharing); at servers of your own "
           "(owned, bought), the GPUs of them pool p runs (every pool shares them)"),
    Symbol("D[o,p,s,h]", "ℤ ≥ 0", "on-demand nodes"),
    Symbol("S[o,p,s,h]", "ℤ ≥ 0", "spot nodes"),
    Symbol("Q[o]", "ℤ ≥ 0", "rack positions bought servers at o take (facility.racks, several servers a rack)"),
    Symbol("e[o,k,s,h]", "≥ 0", "diagnosis only: GPUs beyond a cap, at a large penalty (shows what cannot be met)"),
    Symbol("t, η, u_ξ", "t, u_ξ ≥ 0", "risk objectives only: the worst scenario's cost; CVaR's value at risk and excess"),
    Symbol("P[c,s]", "≥ 0", "tie-break program only: batch config c's busiest hour's GPUs"),
    Symbol("z[c,b]", "[0, 1]", "split: by_size and any only: the share of size class b's requests config c serves "
           "(split: any has one class, the whole demand)"),
    Symbol("B, U, g [c,s,h]", "ℤ ≥ 0",
           "split: by_size and any only: config c's base and rollout replicas and its whole GPUs"),
    Symbol("U[j]", "≥ 0", "a new spend commitment: $/hour of discounted spend, paid every hour of its term (AWS "
           "states Savings Plans so); a signed one's U_j is a constant"),
    Symbol("c[j,o,s,h]", "≥ 0", "discounted spend of hour h of segment s commitment j covers at offer o ∈ O(j)"),
    Symbol("m[w]", "[0, 1]", "--baseline with a split workload or one that may move only: 1 when w's configs are "
           "not its last ones"),
    Symbol("B, U [o,p,s,h]", "ℤ ≥ 0", "policy.share_pools only: the base and rollout GPUs of the group sharing "
           "GPUs at offer o in pool p"),
    Symbol("u[o,p]", "[0, 1]", "policy.share_pools only: 1 when some workload shares GPUs at o in p (the group keeps "
           "its spares)"),
)

OBJECTIVE: tuple[Term, ...] = (
    Term("reserved", "Σ_{o,p,k reserved} m_o · price_k · 24 · (H · R[o,p,k] + Σ_t (H − t) · R[o,p,k,t])",
         "reserved nodes, paid for every hour they are held in the horizon (its H days, or from day t); a "
         "reservation's term beyond the horizon is reported (new_commitments), not in the objective",
         "costs.reserved_per_node"),
    Term("on_demand, spot", "Σ_{o,p,s,h} n_s · m_o · price_tier · μ_s · (D or S)[o,p,s,h]",
         "hourly nodes, every day of the segment (μ_s: a scenario's price multiplier, else 1)", "costs.hourly_per_node"),
    Term("api", "Σ_c api_cost_c · x[c] + Σ_{w,s} n_s · V_w · price_api(w) · Σ_c y[c,s] + Σ_{w split,d} n_d · "
         "3600 · Σ_h D_w(d,h) · price_api(w) · Σ_b σ_b · a[w,b]",
         "interactive overflow at a config's ceiling (a constant per config), batch tokens sent, a split workload's "
         "API share", "costs.api_per_token"),
    Term("buy", "Σ_o R[o,buy] · ownership_o a year ÷ 365 · days in service_o",
         "depreciation, capital and support of servers bought", "costs.bought_per_node"),
    Term("facility", "Σ_o R[o,buy] · (idle energy + colocation)_o · days_o + owned servers' running cost (a constant) "
         "+ Σ_{o own,p,s,h} n_s · serving energy_o(h) · L[o,p,s,h]",
         "energy and space of servers of your own", "costs.bought_running_per_node"),
    Term("savings_plan", "Σ_{j new} 24 · (days j runs) · U[j] − Σ_{j,o,s,h} n_s · c[j,o,s,h] ÷ (1 − δ_j)",
         "spend commitments: a new one's U paid for every hour it runs in the horizon (its term beyond it is "
         "reported, new_spend_commitments; a signed one's is sunk), less the on-demand list spend covered — an hour "
         "costs U + S − c ÷ (1 − δ), S its offers' on-demand list spend (on_demand term)", "model.savings_plan_terms"),
    Term("sole_tenant", "Σ_{c sole-tenant} K_c · x[c]", "a config alone at its offer, at that offer's cost solved apart",
         "model.define_sole_tenant"),
    Term("baseline",
         "Σ_w τ · C_w · (1 − Σ_{c ∈ H(b_w)} x[c]);  a split workload, or one that may move: τ · C_w · m[w]",
         "--baseline: leaving workload w's last choice b_w (a split workload's: its set of configs) costs τ·C_w "
         "(not a cost: results recompute costs)",
         "model.define_baseline"),
    Term("moves", "Σ_{c,π} κ_c · v[c,π]",
         "a move onto config c costs κ_c = policy.move_cost GPU-hours × c's replicas at its busiest hour × c's "
         "offer's on-demand price per GPU-hour (else the accelerator's cheapest on-demand price among the offers): "
         "the old and the new replicas overlap while traffic drains; at least a cent (moves.MOVE_TIE), so of two "
         "plans of equal cost the one that stays is the optimum (not a cost: results recompute costs from "
         "purchases; each move is listed with its saving)", "moves.move_terms"),
    Term("risk", "worst: F + t;  cvar at α: F + η + Σ_ξ π_ξ · u_ξ ÷ (1 − α)",
         "scenario plans with policy.risk worst or cvar: F the first stage (reserved, buy, fixed facility), "
         "Q_ξ each scenario's hourly nodes, API and serving energy as if certain", "model.define_risk"),
    Term("diagnosis", "Σ penalty · e", "diagnosis only: a GPU beyond a cap costs more than ten of the dearest node "
         "over the horizon", "model.define_objective"),
)

FAMILIES: tuple[Family, ...] = (
    Family("choice", "constraint", "w ∈ W with more than one config",
           "Σ_{c∈C(w)} x[c] = 1", "one config per workload", "model.define_choice"),
    Family("fixed_choice", "constraint", "w forced to config c* (a baseline kept), or a split workload "
           "to its set of configs B* (a baseline kept)",
           "x[c*] = 1;  split: x[c] = [c ∈ B*],  Σ_b z[c,b] ≥ ε for c ∈ B*;  "
           "w that may move: x[b_w(π),π] = 1",
           "a workload held on one config, or on its configs (each serving some traffic); a workload that may move "
           "on its last plan's config of each contract period π (b_w(π), as in baseline_moves). explain's "
           "alternatives hold a config by bounds instead (Program.choices_fixed): a config forced on a workload "
           "that may move is that config in every period, so its price is the plan with the workload on it for "
           "the horizon (moves.fix_schedule holds a baseline's configs period by period)",
           "program.Program.fix_choice"),
    Family("baseline_moves", "constraint", "w that may move (policy.moves) with a baseline; π",
           "m[w] ≥ 1 − Σ_{c ∈ H(b_w(π))} x[c,π]",
           "a workload that may move keeps its last plan when in every contract period π it runs the hardware "
           "H(b_w(π)) its last plan ran on π's first day (the last plan's config then, or before its first move "
           "its first; a last plan that did not move: its one config in every period); leaving it in one period "
           "or in several costs τ·C_w once. A period whose last config is no longer a candidate has no row (it "
           "costs nothing to leave)", "model.define_baseline", rows=("baseline_left",)),
    Family("baseline_split", "constraint", "w split with a baseline; c ∈ C(w)",
           "m[w] ≥ 1 − x[c],  Σ_b z[c,b] ≥ ε · x[c] for c ∈ H(b_w);  m[w] ≥ x[c] for c ∉ H(b_w)",
           "a split workload moves (and pays τ·C_w once) when it leaves one of its last configs or uses another; "
           "a last config kept serves some traffic (ε = program.SERVES), so the result lists it; its shares z of "
           "the size classes move freely (they follow the demand's mix)", "model.define_baseline",
           rows=("baseline_left", "baseline_serves", "baseline_added")),
    Family("split", "constraint", "w with split: by_size or any and several configs; size class b (split: any: "
           "one, σ = 1, γ_c the config's goodput over the mix); c ∈ C(w); s; h",
           "Σ_c z[c,b] + a[b] = 1;  Σ_b σ_b · a[b] ≤ api.max_share;  occupancy · B[c,s,h] ≥ Σ_b D_w(d(s),h) · σ_b · z[c,b] ÷ (γ_{c,b} · μ_γ(s));  "
           "z[c,b] ≤ x[c],  B[c,s,h] ≤ M_c · x[c];  U[c,s,h] ≥ ρ · (B + spares · x[c]);  "
           "g[c,s,h] ≥ f_c · (B + spares · x[c] + U)",
           "each request-size class's traffic is divided among the workload's configs in shares z fixed over the "
           "horizon (a router's weights); each config's whole base replicas B carry the sum of the loads sent to "
           "it (Mélange's constraint, Griggs et al. 2024: σ_b the class's share of the output tokens, γ_{c,b} the "
           "config's goodput at the class's sizes); a config that serves any traffic is used (x[c]) and keeps "
           "policy.spares, rollout U on top, and its whole GPUs g[c,s,h] are its GPUs in the supply rows "
           "(instead of G[c,d,h] · x[c]); M_c: the base replicas of the whole demand at c's least goodput; with "
           "an api: block, a[b] ∈ [0, 1] is the share of class b's requests sent to the API at every hour (a "
           "router's weight, not a ceiling), its tokens priced in the api term (a workload without one has no a)",
           "model.define_split", rows=("split_share", "split_api", "split_load", "split_used", "split_rollout",
                                       "split_gpus"),
           note="x[c] has no choice row here; cuts node_rounding skip split workloads"),
    Family("share", "constraint", "(o, p) with p in policy.share_pools and shared configs C_sh(o,p) of at least two "
           "workloads (each a config of one whole GPU: tp1, no MIG slice, no API ceiling); s; h",
           "Σ_{c∈C_sh(o,p)} q_c · x[c] ≤ 1;  u[o,p] ≥ x[c];  occupancy · B[o,p,s,h] ≥ Σ_c τ_c(d(s),h) · x[c];  "
           "U[o,p,s,h] ≥ ρ · (B + spares · u);  g_sh[o,p,s,h] = B + spares · u + U",
           "workloads of a pool in policy.share_pools may share whole GPUs by MPS or time-slicing (policy.share_mode): "
           "at each offer the pool's shared GPUs form one group, each GPU holding one replica of every member, so "
           "the members' memory adds up on every GPU — q_c = (weights + KV of the sequences a replica runs at its "
           "goodput) ÷ (GPU memory less policy.memory_reserve) — and their time adds up over the group: "
           "τ_c(d,h) = D_w(d,h) ÷ (γ_c · μ_γ(d) · (1 − σ)), σ the slowdown of sharing (physics.sharing.SLOWDOWN, or "
           "policy.share_slowdown). The group's whole base GPUs B carry the sum at the occupancy; it keeps policy.spares "
           "once some member is in it, and rollout U on top; its GPUs g_sh join the supply row of (o, p, s, h) beside "
           "the GPUs of configs of their own. Exact for this rule (every shared GPU of a group holds every member): "
           "no bin packing is left, since no member's replica is split over GPUs and every GPU holds the same set",
           "model.define_share", rows=("share_memory", "share_used", "share_load", "share_rollout"),
           note="the configs' own G[c,d,h] hold what the group would need were c alone in it: a ranking key, not in "
                "the program; cuts node_rounding and commit_low skip shared configs"),
    Family("move_choice", "constraint", "w that may move (policy.moves same_hardware or any; interactive, split: none, "
           "no scenarios, commitments not sized low; a contract period's boundary in the horizon); π after the first",
           "Σ_{c∈M(w)} x[c,π] + Σ_{c∈C(w)∖M(w)} x[c] = 1",
           "one config per contract period: at a boundary (servers bought delivered, a signed contract's start or end, "
           "a day a new reservation may start on, a month's first day in a month plan) the workload may move among "
           "M(w), its configs whose hardware "
           "another offer has (same_hardware) or all of them (any); a config outside M(w) is held all horizon. Every "
           "offer of M(w) plans its supply per period (calendar.segment). The API overflow term prices a config of "
           "M(w) period by period (its api_cost spread over the periods' days)", "moves.define_moves",
           note="no x[c,π] when no workload can move (moves: never, no boundary, one offer per hardware): the program "
                "is the one without moves"),
    Family("move_hardware", "constraint",
           "w that may move with policy.moves same_hardware; c ∈ M(w); π after the first",
           "x[c,π] ≤ Σ_{c' ∈ M(w), hw(c') = hw(c)} x[c']",
           "a later period keeps the first period's hardware hw: accelerator, precision, parallelism and layout, "
           "engine, API ceiling — only the offer changes (rent until bought servers are delivered, then run on them; "
           "move onto a renewal or off an expiring contract)", "moves.define_moves"),
    Family("move_overlap", "constraint", "w that may move; c ∈ M(w); π after the first",
           "v[c,π] ≥ x[c,π] − x[c,π−1]", "a move onto c at π's first day (objective term moves)",
           "moves.define_moves"),
    Family("committed_split", "constraint", "o under contract, π, when pools do not share reservations",
           "Σ_p a[o,p,π] ≤ K[o,π]",
           "pools split the GPUs already under contract; contracts signed before the plan are sunk (not in the "
           "objective) and used first; when pools share, K joins the sharing row instead", "model.define_committed_split"),
    Family("batch_volume", "constraint", "batch config c, segment s",
           "Σ_{h∈window(w)} 3600 · γ_c · μ_γ(s) · n[c,s,h] ÷ V_w + y[c,s] ≥ x[c]",
           "the day's output tokens V_w are produced or sent to the API (rows divided by V_w: coefficients of "
           "order 1; μ_γ: a scenario's goodput multiplier for an estimated config)", "model.define_batch_volume"),
    Family("batch_api", "constraint", "batch config c with API overflow, segment s",
           "y[c,s] ≤ max_share_w · x[c]", "only the chosen config sends tokens, at most the API share",
           "model.define_batch_volume"),
    Family("supply", "constraint", "(o, p, s, h) with demand",
           "L[o,p,s,h] + m_o·D[o,p,s,h] + (1 − ι_o)·m_o·S[o,p,s,h] ≥ Σ_{c at o, in p} g[c,s,h] + g_sh[o,p,s,h]",
           "the pool's GPUs at an hour are supplied; g = G[c,d(s),h]·x[c] (interactive, reserve) or f_c·n[c,s,h] "
           "(batch), g_sh the GPUs its workloads share (family share); where the pool borrows none, L is m_o·Σ_k R[o,p,k] + a[o,p,π(s)] (or K[o,s])", "model.define_supply",
           note="in diagnosis, + e at the GPUs owned or signed for"),
    Family("reserved_sharing", "constraint", "(o, s, h) where pools borrow (policy.share_reserved_across_pools, or "
           "servers of your own)",
           "Σ_p L[o,p,s,h] ≤ m_o · Σ_k R[o,k] + K[o,s]",
           "pools share the offer's reserved nodes and committed GPUs hour by hour; R[o,buy] counts only from "
           "the servers' delivery", "model.define_reserved_sharing", note="in diagnosis, + e[o,s,h]"),
    Family("cap_reserved", "constraint", "o, reserved tier k with a cap and several variables (else a bound)",
           "m_o · Σ_p (R[o,p,k] + Σ_t R[o,p,k,t]) ≤ available_gpus[o,k]",
           "what the provider can reserve (reservations only add up over the horizon: all are held at its end)",
           "model.define_caps"),
    Family("cap_on_demand", "constraint", "o with an on-demand cap, s, h, several pools (else a bound)",
           "m_o · Σ_p D[o,p,s,h] ≤ available_gpus[o,on-demand]", "on-demand GPUs in use at once", "model.define_caps"),
    Family("cap_spot", "constraint", "o with a spot cap, s, h, several pools (else a bound)",
           "m_o · Σ_p S[o,p,s,h] ≤ available_gpus[o,spot]", "spot GPUs in use at once", "model.define_caps"),
    Family("commit_low", "constraint", "o with reserved or bought nodes, policy.size_commitments_at low, where some "
           "config's bound is below its need",
           "m_o · Σ_{p,k reserved or buy} R[o,p,k] ≤ Σ_{c at o} ⌊G⌋_c · x[c]",
           "reservations and purchases at the low end of the estimates' bands: ⌊G⌋_c is interactive config c's "
           "busiest hour's GPUs at goodput estimate ÷ (1 + error_p10) (its own need when measured or without a band), "
           "a batch config's most GPUs at an hour, a reserved block's GPUs; the rest of the need runs on hourly tiers",
           "model.define_commitments_at_low"),
    Family("spend_cover", "constraint", "spend commitment j, s ∈ S(j), h where an offer of O(j) rents on demand",
           "Σ_{o∈O(j)} c[j,o,s,h] ≤ U[j]  (signed: U_j)",
           "each hour a commitment covers at most its U of discounted spend, across every offer it covers",
           "model.define_savings_plans"),
    Family("spend_list", "constraint", "o covered by a spend commitment, s, h with on-demand nodes",
           "Σ_{j ∋ o} c[j,o,s,h] ÷ (1 − δ_j) ≤ m_o · price_od(o,s) · Σ_p D[o,p,s,h]",
           "a commitment covers only on-demand use there is, at list price: with one commitment c ≤ (1 − δ)·S, so "
           "the hour's cost U + S − c ÷ (1 − δ) is at least the discounted use and at most U + S; with several, "
           "each offer's use is covered once (a transport of the hour's use to the commitments)",
           "model.define_savings_plans",
           note="offers a commitment covers are never priced alone (sole_tenant): it ties them together"),
    Family("facility_power", "constraint", "servers to buy, facility.power_kw set",
           "Σ_o kW_o · R[o,buy] ≤ power_kw − Σ owned kW",
           "IT power at load; bought servers count from the horizon's start (the limit holds at its end)",
           "model.define_facility"),
    Family("facility_racks", "constraint", "servers to buy, facility.racks set",
           "Σ_o Q[o] ≤ racks − owned rack positions;  rack_positions[o]: per_rack_o · Q[o] ≥ R[o,buy]",
           "a rack position holds servers of one system (Q[o] is R[o,buy] itself when one server fills a rack)",
           "model.define_facility", rows=("facility_racks", "rack_positions")),
    Family("sole_tenant", "constraint", "sole-tenant config c (alone at its offer) no plan at that offer serves",
           "x[c] ≤ 0",
           "a config alone at its offer is priced apart (objective term sole_tenant); when its offer cannot serve it",
           "model.define_sole_tenant", rows=("sole_tenant", "sole_tenant_settled"),
           note="sole_tenant_settled: found so while the solve makes sole-tenant costs exact (strategy._settle_sole_tenants)"),
    Family("risk_worst", "constraint", "scenario ξ, policy.risk worst", "t ≥ Q_ξ",
           "t is the dearest scenario's second-stage cost", "model.define_risk"),
    Family("risk_cvar", "constraint", "scenario ξ, policy.risk cvar", "u_ξ ≥ Q_ξ − η,  u_ξ ≥ 0",
           "the excess over the value at risk η", "model.define_risk"),
    Family("node_rounding", "cut", "w, offer o with m_o > 1, s, h (interactive, reserve)",
           "Σ_k R[o,·,k] + D[o,p(w),s,h] + S[o,p(w),s,h] ≥ Σ_{c∈C(w) at o} ⌈(G[c,d(s),h] − K[o,s]) ÷ m_o⌉ · x[c]",
           "whole nodes carry at least each workload's own GPUs (valid: cuts off fractional node counts only)",
           "cuts.define_node_rounding",
           note="the relaxation takes the rows its optimum violates (cuts.separate_cuts), branch and bound all"),
    Family("batch_rounding", "cut", "batch w, offer o with m_o > 1, s",
           "Σ_{h∈window} (Σ_k R[o,·,k] + D + S) ≥ Σ_{c at o} ⌈(1 − max_share)·V_w·f_c ÷ (3600·γ_c·m_o) − "
           "K[o,s]·|window| ÷ m_o⌉ · x[c]",
           "a batch day's node-hours in whole nodes", "cuts.define_node_rounding"),
    Family("batch_mir", "cut", "batch w with API overflow, offer o with m_o > 1, s",
           "N + Σ_c y[c,s] ÷ (a_c · frac β_c) ≥ Σ_c ⌈β_c⌉ · x[c],  a_c = 3600·γ_c·m_o ÷ (f_c·V_w),  "
           "β_c = (1 − 3600·γ_c·K[o,s]·|window| ÷ (f_c·V_w)) ÷ a_c",
           "mixed-integer rounding of a batch day whose work may go to the API (N: batch_rounding's node-hours)",
           "cuts.define_node_rounding"),
    Family("pooled_rounding", "cut", "o with m_o > 1, (p or all pools), s, h, at reference configs r(w)",
           "Σ_{j whole} (⌊a_j⌋ + min(1, frac(a_j) ÷ f)) · v_j + Σ_{j continuous, a_j > 0} (a_j ÷ f) · v_j ≥ ⌈b⌉",
           "the supply rows of a pool (and the sharing row) summed ÷ m_o and rounded at one plan's configs: the GPUs "
           "of several workloads fill whole nodes together (f = frac(b))", "cuts.define_pooled_rounding",
           note="added where re-solves hold one plan's configs (strategy.POOLED_SOLVERS)"),
    Family("tie_break_cost", "tie-break", "the tie-break program", "cost objective ≤ the solved plan's cost",
           "among plans that cost no more, with every decision made once held", "tiebreak.define_tie_break"),
    Family("tie_break_spread", "tie-break", "chosen batch config c, s, h in its window", "P[c,s] ≥ f_c · n[c,s,h]",
           "P is the config's busiest hour; minimised, batch work spreads over its window",
           "tiebreak.define_tie_break"),
    Family("tie_break_segment", "tie-break", "scenario plans: segment s (a scenario's day type, and month)",
           "Σ_{o,p,h} n_s · m_o · (price_od · D[o,p,s,h] + price_spot · S[o,p,s,h]) + Σ_{o own,p,h} n_s · energy_o(h) "
           "· L[o,p,s,h] ≤ its value at the solved plan",
           "each segment keeps its cost while its batch work spreads (every decision made once and the API's batch "
           "shares held), so no scenario's cost, the expected cost, the risk measure nor a month's cost moves: "
           "scenario and month plans run batch on the same spread schedule as single-scenario plans",
           "tiebreak.define_tie_break"),
)

TIE_BREAK_OBJECTIVE = ("min  Σ_s n_s · ( 10 · Σ_{o, p with no batch work, h} m_o · (D[o,p,s,h] + S[o,p,s,h])  "
                       "+  Σ_c P[c,s] )")
"""The tie-break program's objective: GPUs paid by the hour go to work that can move, then batch work spreads."""

OUTSIDE: tuple[Rule, ...] = (
    Rule("spares", "replicas = base + spares + rollout, base = ⌈demand ÷ (goodput × occupancy)⌉: every config's "
         "hourly GPUs G[c,d,h] include policy.spares (not a constraint)",
         ("optimizer/physics/replicas.py::replicas", "optimizer/candidates/build.py::_hourly")),
    Rule("rollout", "rollout = ⌈rollout_fraction × (base + spares)⌉ replicas on top, in G[c,d,h]",
         ("optimizer/physics/replicas.py::replicas_from_base",)),
    Rule("occupancy", "base replicas run at policy.occupancy of their goodput (queueing headroom), in G[c,d,h]",
         ("optimizer/physics/replicas.py::replicas", "optimizer/physics/queueing.py")),
    Rule("goodput", "tokens/s a replica serves within the SLOs (measured, or the roofline estimate); reported as "
         "what binds when an estimate is bound by memory or compute",
         ("optimizer/physics/roofline.py", "optimizer/candidates/configs.py::size",
          "optimizer/results/extract.py::_binding")),
    Rule("fit", "a config exists only where weights, KV cache and reserve fit the accelerator's memory at its layout",
         ("optimizer/physics/memory.py", "optimizer/candidates/configs.py::size")),
    Rule("whole GPUs", "a replica's GPUs (fractions of a GPU for MIG) are rounded up to whole GPUs per hour",
         ("optimizer/candidates/types.py::whole_gpus",)),
    Rule("whole nodes", "D, S, R are whole nodes of m_o GPUs (integer variables); the cuts round each workload's and "
         "each pool's GPUs up to whole nodes",
         ("optimizer/optimize/model.py::define_variables", "optimizer/optimize/cuts.py::define_node_rounding")),
    Rule("caps", "a cap on a single variable is its upper bound, not a row; cap rows when several variables share it",
         ("optimizer/optimize/model.py::define_variables", "optimizer/optimize/model.py::define_caps")),
    Rule("allowed tiers", "which tiers a pool may buy at an offer: policy.tiers it sells, spot only in spot pools",
         ("optimizer/candidates/build.py::allowed_tiers",)),
    Rule("overflow_share", "API overflow: a config per fleet ceiling, the hour's excess above it sent to the API, "
         "while each day type's spilled tokens stay within api.max_share; reported as what binds at the share",
         ("optimizer/candidates/overflow.py::overflow_levels", "optimizer/results/extract.py::_binding")),
    Rule("reserved from its start to the horizon's end", "R[o,(p),k] and R[o,(p),k,t] are each one number from "
         "their start to the horizon's end: a reservation is held every hour of every day from then (its cost "
         "24·(H − t) hours); the start days T come from the calendar (policy.reservation_starts), and a plan "
         "with none beyond the first day has only R[o,(p),k]",
         ("optimizer/optimize/calendar.py::reservation_days", "optimizer/optimize/model.py::define_variables",
          "optimizer/optimize/costs.py::reserved_per_node")),
    Rule("dominated configs", "configs and offers no cheaper in any hour than another are dropped before the program",
         ("optimizer/candidates/prune.py::prune_dominated", "optimizer/candidates/prune.py::dominated_offers")),
    Rule("sole-tenant configs", "a config alone at its offer is priced by a program of that offer alone",
         ("optimizer/optimize/steps/settle.py::_sole_tenant_costs", "optimizer/optimize/steps/settle.py::_settle_sole_tenants")),
    Rule("costs", "one unit of every purchase is priced once, for the objective and for the result",
         ("optimizer/optimize/costs.py", "optimizer/results/extract.py::extract")),
)


def _table(header: tuple[str, ...], rows: list[tuple[str, ...]]) -> list[str]:
    def cell(text: str) -> str:
        return text.replace("|", "\\|")

    return (["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
            + ["| " + " | ".join(cell(c) for c in row) + " |" for row in rows])


def markdown() -> str:
    """docs/model.md: the program's math as this registry states it."""
    out = [
        "# The integer program",
        "",
        "Generated from `optimizer/optimize/families.py` by `planopt schema --model -o docs/model.md`; do not edit",
        "by hand (tests/optimize/test_model_docs.py fails when this page and the registry differ).",
        "",
        "planopt sizes every candidate config first (physics, candidates): by the time the program is built, a",
        "config's GPUs at every hour, its goodput and its API cost are constants. The program then chooses one",
        "config per workload and buys capacity by tier, hour by hour, at the least cost over the horizon.",
        "Constraint names below are the prefixes of the PuLP row names (`supply_<offer>_<pool>_<segment>_<hour>`)",
        "and the names the \"what binds\" report uses.",
        "",
        "## Sets",
        "",
        *_table(("symbol", "what", "notes"), [(f"`{s.symbol}`", s.domain, s.meaning) for s in SETS]),
        "",
        "## Variables",
        "",
        *_table(("variable", "domain", "meaning"), [(f"`{v.symbol}`", v.domain, v.meaning) for v in VARIABLES]),
        "",
        "## Objective",
        "",
        "Minimise the horizon's cost, the sum of these terms (scenario plans: the days of each scenario's day",
        "types carry its weight; `risk` replaces the sum when policy.risk is worst or cvar):",
        "",
        *_table(("term", "math", "meaning", "priced by"),
                [(t.name, f"`{t.math}`", t.meaning, f"`{t.built_by}`") for t in OBJECTIVE]),
        "",
    ]
    titles = {"constraint": "Constraints", "cut": "Valid inequalities (cuts)",
              "tie-break": "The tie-break program among plans of equal cost"}
    intro = {
        "constraint": "",
        "cut": "Rows that cut off fractional node counts and no plan (optimizer/optimize/cuts.py).",
        "tie-break": ("A second, separate problem over the program's rows and variables, solved after the plan "
                      f"(strategy.break_ties): `{TIE_BREAK_OBJECTIVE}`."),
    }
    for kind in ("constraint", "cut", "tie-break"):
        out += [f"## {titles[kind]}", ""]
        if intro[kind]:
            out += [intro[kind], ""]
        for f in (f for f in FAMILIES if f.kind == kind):
            names = ", ".join(f"`{r}`" for r in f.row_prefixes)
            out += [f"### {f.name}", "", f"    {f.math}", "",
                    f"- over: {f.index}", f"- meaning: {f.meaning}", f"- rows: {names}; built by `{f.built_by}`"]
            if f.note:
                out.append(f"- note: {f.note}")
            out.append("")
    out += ["## Rules outside the program", "",
            "What a newcomer looks for among the constraints but finds computed before the program is built "
            "(or as a bound, or as a step of the solve):", ""]
    out += _table(("rule", "what it does", "where"),
                  [(r.name, r.rule, ", ".join(f"`{w}`" for w in r.where)) for r in OUTSIDE])
    return "\n".join(out) + "\n"


def family(name: str) -> Family:
    """The family of that name (KeyError when there is none)."""
    for f in FAMILIES:
        if f.name == name:
            return f
    raise KeyError(name)
