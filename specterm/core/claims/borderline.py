"""Borderline verdicts (SPEC 4): the scorecard recomputed under the bootstrap weights of seeds 0..4.

A verdict whose deciding CI bound moves across its threshold when the bootstrap seed changes is marked
borderline with each seed's verdict (scorecard.mark_borderline). The per-stream sums do not depend on
the bootstrap seed (the shuffles keep the report's seed), only the weights do, so each seed costs one
set of multinomial weights and the re-estimate of what the verdicts read:

- `_needed`: the sums columns the verdicts read; each corpus's resampled sums R = W @ M[:, needed],
  the pooled set's the corpora's added up (stratified weights, as analysis);
- `verdict_set`: a light set with the CIs the rules read (autocorr, D/D_geom, temporal, alpha, E_true
  at Q3's best g, c_1..c_8 and c_2 - c_1; the pooled set only autocorr and temporal);
- `policy_ratios`: Q4's T / T_best_fixed from policy sums built once, CIs for its candidates only;
- `replicates`: alpha and E_true replicates for the CIs of Q2's spread and Q3's ratio.
Q3's best g per set is chosen on the point curve (`best_gammas`), the same under every seed. Q5 and
Q6 read the decision on this hardware, whose CIs also resample the measured costs: they are judged at
the report's seed only and never marked borderline.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from specterm.core.streams import stats as st
from specterm.core.streams.bootstrap import distinct_columns, exact_product, multinomial_weights
from specterm.core.decide.costmodel import throughput
from specterm.core.claims.economics import adaptive_candidates, best_speedup, depth_gain, speedup_factor
from specterm.core.streams.estimate import num, percentile_cis
from specterm.core.decide.optimum import p3_shares
from specterm.core.params import GAMMAS
from specterm.core.report.types import POOLED, Deficit, Estimate, PolicyRow, SetReport
from specterm.core.claims.scorecard import scorecard
from specterm.core.streams.steady import estimates

BORDERLINE_SEEDS = (0, 1, 2, 3, 4)  # SPEC 4: a verdict is checked under the bootstrap weights of these seeds


def _needed(sums: st.StreamSums, gammas: list[int]) -> list[str]:
    """The sums columns the verdicts read (verdict_set): autocorrelation, D/D_geom, the temporal
    deficit, alpha, depth counts up to 8, the blocks at `gammas` (Q3's best g per corpus) and at every g
    (P3, judged per replicate on the pooled set)."""
    names = ["n", "ones", "ac_val", "ac_def", "runs", "L", "L2", f"blocks_{sums.gamma}", "shuf_blocks"]
    for j in range(1, min(sums.depth_gamma, 8) + 1):
        names += [f"acc_{j}", f"reach_{j}"]
    names += [f"blocks_{g}" for g in gammas]
    names += [f"blocks_{g}" for g in GAMMAS.tolist()]  # P3: the pooled E_true(g) at every g, per replicate
    return list(dict.fromkeys(names))


def replicates(R: np.ndarray, cols: dict[str, int], gammas: list[int]) -> dict[str, np.ndarray]:
    """Bootstrap replicates of a set's alpha (B,) and E_true(g) (B x 32; NaN except at `gammas`) from
    its resampled sums R = W @ M (columns `cols`): economics.q_rows's CIs of Q2's spread and Q3's
    best / worst ratio, paired by replicate. They read the columns n, ones and blocks_g, integers,
    so R's are those columns' own products, bit for bit (bootstrap.exact_product)."""
    E = np.full((R.shape[0], GAMMAS.size), np.nan)
    for g in gammas:
        E[:, g - 1] = st.E_true(R, cols, int(g))
    return {"alpha": st.alpha(R, cols), "E_true": E}


def _estimate(e: Mapping[str, Any]) -> Estimate:
    """steady.estimates' {"value", "ci"} as an Estimate."""
    return Estimate(value=e["value"], ci=[e["ci"][0], e["ci"][1]])


def verdict_set(R: np.ndarray, c: np.ndarray, cols: dict[str, int], gamma: int, depth_gamma: int, rep: SetReport,
                gammas: list[int], policies: list[PolicyRow] | None = None, pooled: bool = False,
                alpha: bool = True) -> SetReport:
    """What the scorecard's verdicts read of a set, re-estimated from resampled sums R (B x K, columns
    `cols`, e.g. `_needed`'s) under other bootstrap weights; c: the set's column sums. The point values
    and the point-only keys are the report's `rep`. Re-estimated: autocorr, dispersion_ratio, the
    temporal deficit, alpha's CI, E_true's CI at `gammas` (Q3's best g; None elsewhere), the depth CIs
    up to 8 and c_2 - c_1; `policies`: the set's vs_best_fixed under the same weights (Q4). The pooled
    set's verdicts read only its autocorrelation (P1's size) and temporal deficit (P4): pooled=True
    re-estimates those alone, and P3's replicate shares (optimum.p3_shares). The other fields are the report's (dataclasses.replace), except the
    steady state: None, as no verdict reads it (only the P rows' evidence does)."""
    g, dg = gamma, depth_gamma
    stats: dict[str, Any] = {
        "autocorr": lambda x: st.autocorr(x, cols),
        "dispersion_ratio": lambda x: st.dispersion_ratio(x, cols),
        "temporal": lambda x: st.deficit(x, cols, g)[2],
        "alpha": lambda x: st.alpha(x, cols),
    }
    depth = 0 if pooled else min(dg, 8)
    if pooled:
        del stats["dispersion_ratio"], stats["alpha"]
        gammas = []
    elif not alpha:  # Q2 reads alpha's CI of its highest and lowest corpus only
        del stats["alpha"]
    for gg in gammas:
        stats[f"E_{gg}"] = lambda x, gg=int(gg): st.E_true(x, cols, gg)
    for j in range(1, depth + 1):
        stats[f"c_{j}"] = lambda x, j=j: st.depth_conditional(x, cols, j)
    if dg >= 2 and not pooled:
        stats["gain"] = lambda x: depth_gain(x, cols)
    e = estimates(R, c, stats)
    undefined = {"value": None, "ci": [None, None]}
    if pooled:
        e.update(dispersion_ratio=undefined, alpha=undefined)
    elif not alpha:
        e.update(alpha=undefined)
    return dataclasses.replace(
        rep,
        autocorr=_estimate(e["autocorr"]),
        dispersion_ratio=_estimate(e["dispersion_ratio"]),
        deficit=Deficit(gamma=g, total=Estimate(), hetero=Estimate(), temporal=_estimate(e["temporal"])),
        alpha_ci=list(e["alpha"]["ci"]),
        curve=dataclasses.replace(rep.curve, E_true_ci=[list(e[f"E_{int(gg)}"]["ci"]) if int(gg) in gammas else [None, None]
                                                        for gg in GAMMAS]),
        depth=dataclasses.replace(rep.depth, conditional=[_estimate(e[f"c_{j}"]) for j in range(1, depth + 1)],
                                  c2_minus_c1=_estimate(e["gain"]) if "gain" in e else None),
        policies=policies or [],
        steady_state=None,
        optimum_shares=p3_shares(R, cols) if pooled else rep.optimum_shares,
    )


def best_gammas(sets: Mapping[str, SetReport], costs: dict[str, Any]) -> dict[str, list[int]]:
    """Q3's best g of each set (economics.best_speedup on the point curve; [] when undefined)."""
    out = {}
    for name, rep in sets.items():
        factor, _ = speedup_factor(rep, costs.get(name))
        g = best_speedup(rep.curve.E_true, rep.curve.E_true_ci, factor, "").gamma
        out[name] = [] if g is None else [int(g)]
    return out


def _policy_key(row: PolicyRow) -> tuple[str, dict[str, Any]]:
    """(policy, params) of a policy row."""
    return row.policy, dict(row.params or {})


@dataclass(frozen=True)
class PolicyPlan:
    """What `policy_ratios` needs of a set besides the weights, the same under every seed: the
    policies, the per-stream columns resampled (`flat`, N x F float64 holding integers: tokens once
    when tokens = n under every policy, then blocks and drafted per policy; else tokens, blocks,
    drafted per policy), the point T per policy and r."""

    policies: list[tuple[str, dict[str, Any]]]
    flat: np.ndarray
    one_tokens: bool
    T: np.ndarray
    r: float


def policy_plan(policies: list[tuple[str, dict[str, Any]]], sums: np.ndarray, r: float) -> PolicyPlan:
    """The seed-independent part of `policy_ratios` from policies.policy_sums' (N x P x 3) sums:
    T = tokens / (blocks + r drafted) per policy at the set's totals, and the columns to resample."""
    n, p, _ = sums.shape
    tot = sums.sum(axis=0).astype(np.float64)
    one_tokens = bool(p) and bool(np.array_equal(sums[:, :, 0], np.broadcast_to(sums[:, :1, 0], (n, p))))
    if one_tokens:
        # tokens = n under every policy: one tokens column resampled instead of p (the same exact
        # integer sums in float64, so the same numbers)
        flat = np.concatenate([sums[:, 0, :1], sums[:, :, 1:].reshape(n, 2 * p)], axis=1).astype(np.float64)
    else:
        flat = sums.reshape(n, p * 3).astype(np.float64)
    return PolicyPlan(policies, flat, one_tokens, throughput(tot[:, 0], tot[:, 1], tot[:, 2], r), r)


def policy_columns(plan: PolicyPlan, keep: list[tuple[str, dict[str, Any]]] | None) -> np.ndarray:
    """The columns of plan.flat that `policy_rows(plan, ..., keep)` reads: the tokens, blocks and drafted
    of the best fixed g and of the policies in `keep` (all of them for keep None); the others' CIs are
    not wanted, and their values come from the point T."""
    names = [name for name, _ in plan.policies]
    want = sorted({j for j, pp in enumerate(plan.policies) if keep is None or pp in keep} | {names.index("best-fixed")})
    if plan.one_tokens:
        return np.array([0, *[1 + 2 * j + k for j in want for k in (0, 1)]], dtype=np.int64)
    return np.array([3 * j + k for j in want for k in (0, 1, 2)], dtype=np.int64)


def policy_rows(plan: PolicyPlan, rs: np.ndarray, keep: list[tuple[str, dict[str, Any]]] | None = None,
                cols: np.ndarray | None = None) -> list[PolicyRow]:
    """Q4's input from the resampled columns rs = W @ plan.flat (B x F): per policy a PolicyRow with
    only vs_best_fixed = T / T_best_fixed set; keep: the (policy, params) whose CI is wanted (Q4's
    candidates, None: all); the others get values only. cols: rs holds only these columns of
    plan.flat (`policy_columns(plan, keep)`: all that the rows read)."""
    policies, p, r = plan.policies, len(plan.policies), plan.r
    if cols is not None:  # the columns not resampled are NaN: read by no CI
        full = np.full((rs.shape[0], plan.flat.shape[1]), np.nan)
        full[:, cols] = rs
        rs = full
    if plan.one_tokens:
        boot = np.empty((rs.shape[0], p, 3))
        boot[..., 0] = rs[:, :1]
        boot[..., 1:] = rs[:, 1:].reshape(-1, p, 2)
    else:
        boot = rs.reshape(-1, p, 3)
    T = plan.T
    Tb = throughput(boot[..., 0], boot[..., 1], boot[..., 2], r)
    i_best = [name for name, _ in policies].index("best-fixed")
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio, ratio_b = T / T[i_best], Tb / Tb[:, [i_best]]
    want = [j for j, pp in enumerate(policies) if keep is None or pp in keep]
    lo, hi = np.full(p, np.nan), np.full(p, np.nan)
    if rs.shape[0] and want:
        lo[want], hi[want] = percentile_cis(ratio_b[:, want])
    return [PolicyRow(policy=name, params=params, vs_best_fixed=Estimate(value=num(ratio[j]), ci=[num(lo[j]), num(hi[j])]))
            for j, (name, params) in enumerate(policies)]


def policy_ratios(policies: list[tuple[str, dict[str, Any]]], sums: np.ndarray, r: float, W: np.ndarray,
                  keep: list[tuple[str, dict[str, Any]]] | None = None) -> list[PolicyRow]:
    """Q4's input under weights W: per policy a PolicyRow with only vs_best_fixed set, with
    T = tokens / (blocks + r drafted) (policies.throughput) from the per-stream sums (N x P x 3) of
    policies.policy_sums, computed once and resampled here (as policies.policy_summary does). keep:
    the (policy, params) whose CI is wanted (Q4's candidates); the others get values only.
    (`policy_plan`, then `policy_rows` of W @ plan.flat.)"""
    plan = policy_plan(policies, sums, r)
    return policy_rows(plan, W @ plan.flat, keep)


def _ends(values: dict[str, float | None]) -> set[str]:
    """The highest and lowest corpus by point value (economics._extremes' choice; ties: first in order)."""
    ok = [(c, v) for c, v in values.items() if v is not None]
    if len(ok) < 2:
        return set()
    return {max(ok, key=lambda p: p[1])[0], min(ok, key=lambda p: p[1])[0]}


@dataclass(frozen=True)
class SeedPlan:
    """What the borderline pass reads, the same under every seed (`seed_plan`, built once per report):
    per corpus its streams' count and X = M[:, `_needed` columns] (the columns resampled, `sub` their
    positions), per set the column sums of those columns, Q3's best g (kept for the corpora whose CIs
    Q3 reads, and the pooled set), the sets whose alpha CI Q2 reads, per set its `PolicyPlan` (Q4), Q4's
    candidates (`keep`), the gamma and depth gamma of the sums; per set `policy_cols`, the columns of
    its `PolicyPlan.flat` that Q4's CIs read (`policy_columns`: the best fixed g's and the candidates',
    7 of 15 with the default policies); per corpus F = the distinct columns of those of its policy
    columns and of the pooled set's of its rows (most are the same columns), F_cols = where each of the
    two is in F; exact: every such column holds integers small enough that W @ F is exact
    (bootstrap.exact_product), so a column of W @ F is that column's own product, whatever columns
    beside it, and the pooled set's is the corpora's added up, bit for bit (else every policy column is
    multiplied, on its own set, the pooled one by W_pooled itself); XF: per corpus, when exact, X and F
    side by side, multiplied by each seed's weights at once (`seed_verdicts`)."""

    corpora: list[str]
    sizes: list[int]
    sub: dict[str, int]
    X: dict[str, np.ndarray]
    c: dict[str, np.ndarray]
    best: dict[str, list[int]]
    alpha_sets: set[str]
    policies: dict[str, PolicyPlan]
    keep: list[tuple[str, dict[str, Any]]] | None
    gamma: int
    depth_gamma: int
    F: dict[str, np.ndarray]
    F_cols: dict[str, tuple[np.ndarray, np.ndarray]]
    exact: bool
    policy_cols: dict[str, np.ndarray]
    XF: dict[str, np.ndarray] | None = None


def seed_plan(corpora: list[str], groups: dict[str, Any], sets: Mapping[str, SetReport], pol: dict[str, Any] | None,
              costs: dict[str, Any], best: dict[str, list[int]]) -> SeedPlan:
    """The `SeedPlan` of a report: groups[name] = (sums, W, members) per set (corpora, then pooled, whose
    rows are the corpora's in order), sets the report's set reports, pol[name] = (policies, per-stream
    policy sums, r) per set (policies.policy_sums), costs Q3's measured costs, best Q3's best g per set."""
    # Q2 and Q3 read the CIs of their highest and lowest corpus only (by point value, the same under
    # every seed): alpha's and the speedup's are re-estimated for those corpora alone.
    a_ext = _ends({c: sets[c].alpha for c in corpora})
    speed = {}
    for c in corpora:
        factor, _ = speedup_factor(sets[c], costs.get(c))
        curve = sets[c].curve
        speed[c] = best_speedup(curve.E_true, curve.E_true_ci, factor, "").speedup.value
    s_ext = _ends(speed)
    best = {c: (gs if c in s_ext or c == POOLED else []) for c, gs in best.items()}
    gam = sorted({g for gs in best.values() for g in gs})
    first = groups[corpora[0]][0]
    names = _needed(first, gam)
    idx = [first.cols[n] for n in names]
    keep = None
    if pol is not None and POOLED in sets:
        keep = [_policy_key(c) for c in adaptive_candidates(sets[POOLED].policies)]
    policies = {name: policy_plan(*pol[name]) for name in groups if pol is not None and name in pol}
    sizes = [groups[c][0].M.shape[0] for c in corpora]
    bounds = np.cumsum([0, *sizes]).tolist()
    cols = {name: policy_columns(plan, keep) for name, plan in policies.items()}  # what Q4's CIs read
    F, F_cols = {}, {}
    for c, lo, hi in zip(corpora, bounds[:-1], bounds[1:]):
        # the corpus's own policy columns, and the pooled set's of its rows (those Q4's CIs read)
        parts = {name: policies[name].flat[rows][:, cols[name]] for name, rows in ((c, slice(None)), (POOLED, slice(lo, hi)))
                 if name in policies}
        F[c], where = distinct_columns(list(parts.values())) if parts else (np.zeros((hi - lo, 0)), [])
        at = dict(zip(parts, where))
        none = np.zeros(0, dtype=np.int64)
        F_cols[c] = (at.get(c, none), at.get(POOLED, none))
    X = {c: groups[c][0].M[:, idx] for c in corpora}
    exact = all(exact_product(F[c], n) for c, n in zip(corpora, sizes)) and (
        POOLED not in policies or exact_product(policies[POOLED].flat[:, cols[POOLED]], bounds[-1]))
    return SeedPlan(
        corpora=list(corpora),
        sizes=sizes,
        sub={n: i for i, n in enumerate(names)},
        X=X,
        c={name: g[0].M[:, idx].sum(axis=0) for name, g in groups.items()},
        best=best,
        alpha_sets=a_ext,
        policies=policies,
        keep=keep,
        gamma=first.gamma,
        depth_gamma=first.depth_gamma,
        F=F,
        F_cols=F_cols,
        exact=exact,
        policy_cols=cols,
        XF={c: np.hstack([X[c], F[c]]) for c in corpora} if exact else None,
    )


def seed_verdicts(seed: int, seed_of: Callable[[int, str], int], plan: SeedPlan, boot: int,
                  sets: Mapping[str, SetReport], costs: dict[str, Any], realized: dict[str, float]) -> dict[str, str]:
    """The scorecard's verdicts (Q5, Q6 left out) under the bootstrap weights of `seed` on the same sums.
    Only the columns and CIs the verdicts read are re-estimated (`_needed`, `verdict_set`); the pooled
    resampled sums are the corpora's added up (stratified weights W_pooled = [W_1 | W_2 | ...]), its
    policy columns too (integers: the same numbers as the product with W_pooled, `SeedPlan.exact`);
    Q3's best g per set is chosen on the point curve (`best_gammas`), the same under every seed. Each
    corpus's weights are drawn into one buffer, used and overwritten by the next corpus's."""
    R: dict[str, np.ndarray] = {}
    rs: dict[str, np.ndarray] = {}
    reps = {}
    pooled = plan.policies.get(POOLED)
    kept: list[np.ndarray] = []  # the corpora's weights, only when the policy columns are not exact (`SeedPlan.exact`)
    pooled_parts: list[np.ndarray] = []
    buffer = np.empty((boot, max(plan.sizes)))  # one for every corpus: its pages are touched once
    for c, n in zip(plan.corpora, plan.sizes):
        W = multinomial_weights(n, boot, seed_of(seed, c), out=buffer[:, :n])
        if plan.XF is not None:
            # One product for the verdicts' sums and the policy columns: each product reads all of W
            # (B x N, from memory), and the policy columns alone cost half of the sums' 57 (20,000 x
            # 200: 16 ms against 33 ms a corpus; together 35 ms). The float columns (ac_val,
            # shuf_blocks) may then differ from W @ X's in the last bits (BLAS blocks by the columns
            # beside them): these sums only decide the seed's verdicts, never a printed number.
            RF = W @ plan.XF[c]
            R[c], P = RF[:, :plan.X[c].shape[1]], RF[:, plan.X[c].shape[1]:]
        else:
            R[c] = W @ plan.X[c]
        E = np.full((boot, GAMMAS.size), np.nan)
        for g in plan.best[c]:
            E[:, g - 1] = st.E_true(R[c], plan.sub, g)
        reps[c] = {"alpha": st.alpha(R[c], plan.sub), "E_true": E}
        if plan.XF is not None:  # integers: each column of P is that column's own product, bit for bit
            own, in_pooled = plan.F_cols[c]
            if c in plan.policies:
                rs[c] = P[:, own]
            pooled_parts.append(P[:, in_pooled])
        else:
            if c in plan.policies:
                rs[c] = W @ plan.policies[c].flat
            kept.append(W.copy())
    R[POOLED] = sum((R[c] for c in plan.corpora[1:]), R[plan.corpora[0]].copy())
    if pooled is not None:
        rs[POOLED] = sum(pooled_parts[1:], pooled_parts[0].copy()) if plan.exact else np.hstack(kept) @ pooled.flat
    light: dict[str, SetReport] = {}
    for name in [*plan.corpora, POOLED]:
        rows = (policy_rows(plan.policies[name], rs[name], keep=plan.keep, cols=plan.policy_cols[name] if plan.exact else None)
                if name in plan.policies else None)
        light[name] = verdict_set(R[name], plan.c[name], plan.sub, plan.gamma, plan.depth_gamma, sets[name],
                                  plan.best[name], rows, pooled=name == POOLED, alpha=name in plan.alpha_sets)
    return {r.id: r.verdict for r in scorecard(light, costs=costs, realized=realized, replicates=reps)
            if r.id not in ("Q5", "Q6")}
