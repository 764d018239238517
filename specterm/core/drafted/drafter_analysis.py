"""The analysis of drafter runs (SPEC 2b): per corpus and pooled, from each stream's L_s and m_s.

Per set, with the block walk of walk.py at every g = 1..32:

    E(g)        = sum tokens / sum blocks                      tokens per target call
    drafted(g)  = sum drafted / sum blocks                     drafted tokens per block
    accept(g)   = (sum tokens - sum blocks) / sum drafted      the share of drafted tokens accepted (as the
                                                               block's last token is the target's own, a
                                                               stream's final block aside)
    T(g, r)     = sum tokens / (sum blocks + r sum drafted)    the cost-ratio model, g*(r) its argmax

and, at the report's g, acceptance by depth: c_j = P(token j accepted | 1..j-1 accepted, j drafted) and
P(accepted length >= j) per block.

Decision on this hardware (SPEC 6 with SPEC 2b's costs): a block that drafts d tokens verifies d + 1
(d = 0: a plain decode step, c_verify(0) = c_decode), and the drafter costs its own time per block:

    S_hw(g) = tokens(g) c_decode / (sum_d blocks_d(g) [c_verify(d) + o(d)] + blocks(g) c_draft)

(costmodel.drafter_speedup_hw), o(d) = a + b d the block overhead, where the profile has it (`specterm costs`
times it on real speculative generations with the drafter proposing, core/decide/hardware/overhead.py; the
verdict names it, or says it was not measured, as a draft model's does).

g_hw = argmax S_hw (ties: smallest g) over the draft lengths whose c_verify was timed; its 95% CI pairs
bootstrap replicate b of the prompts (the resampled tokens and blocks by d) with cost replicate b
(each cost's samples resampled, hardware.curve.cost_replicates). The memory-bound reference sets every
c_verify(d) := c_decode. Statistics defined only on per-position bits (alpha, autocorrelation,
D/D_geom, the deficit split, yield ratios, beta, warm-up, the confidence policies, the scorecard) do
not apply: the report says so under `not_applicable` and computes nothing in their names.

Bootstrap: percentile, over streams, one matrix product W @ sums; the pooled set resamples each corpus
within itself (weights side by side), corpus seeds from (seed, corpus) as in core/report/analysis.py.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import numpy as np

from specterm.core.report.analysis import corpus_seed
from specterm.core.streams.bootstrap import multinomial_weights, percentile_ci
from specterm.core.drafted.drafter_settle import verify_grid
from specterm.core.drafted.walk import DrafterWalk, depth_counts, walk_streams
from specterm.core.errors import SpectermError
from specterm.core.streams.estimate import num
from specterm.core.decide.hardware.curve import CostCurve, cost_curve, cost_replicates
from specterm.core.decide.hardware.decision import DO_NOT, SPECULATE, verdict_kind, verdict_text
from specterm.core.decide.hardware.overhead import NOT_MEASURED
from specterm.core.decide import costmodel
from specterm.core.decide.optimum import best_gamma
from specterm.core.params import BOOT, GAMMA_DEFAULT, GAMMA_MAX, MIN_PROMPTS, R_GRID, SEED
from specterm.core.report.types import POOLED, CalibrationRow, Estimate, Record, set_names
from specterm.core.store import Run, Stream
from specterm.core.claims import verdict as vd

NOT_APPLICABLE = ("does not apply to a drafter run: it is defined on per-position accept bits a_t, and a drafter "
                  "proposes a whole sequence per block start (SPEC 2b)")
BIT_STATISTICS = ("alpha", "autocorr", "autocorr_pooled", "dispersion_ratio", "deficit", "yield_ratio", "optimum_iid",
                  "position", "sampling", "steady_state", "policies", "scorecard")
POLICIES_NOTE = ("fixed g only: Hugging Face keeps prompt lookup's num_tokens fixed (update_candidate_strategy does "
                 "nothing) and a drafter has no confidence to stop on")


@dataclass(kw_only=True)
class DrafterYield(Record):
    """One draft length of a set's yield curve."""

    gamma: int
    E: Estimate                             # tokens per target call, with its CI
    drafted_per_block: float | None = None
    acceptance: float | None = None         # accepted / drafted
    speedup_hw: float | None = None         # S_hw(g) where c_verify(g) was timed
    speedup_mb: float | None = None         # the memory-bound reference


@dataclass(kw_only=True)
class DrafterDepth(Record):
    gamma: int
    conditional: list[Estimate]             # c_j, j = 1..gamma
    unconditional: list[Estimate]           # P(accepted length >= j)


@dataclass(kw_only=True)
class DrafterDecision(Record):
    """SPEC 7 decision_hw keys for a drafter set (the draft cost is the drafter's per block)."""

    measured: bool
    gamma_hw: int | None = None
    speedup_hw: float | None = None
    speedup_hw_ci: list[float | None] = dataclasses.field(default_factory=lambda: [None, None])
    verdict_kind: str | None = None
    verdict: str = ""
    gamma_mb: int | None = None
    speedup_mb: float | None = None
    speedup_mb_ci: list[float | None] = dataclasses.field(default_factory=lambda: [None, None])
    c_draft_block_s: float | None = None    # the drafter's own time per block (median)
    c_decode_s: float | None = None
    profile: str | None = None


@dataclass(kw_only=True)
class DrafterConfirmed(Record):
    """A confirmation against the real decoder at one g (run.json drafter_confirmations, the latest record of
    each decoder): target calls summed over the timed prompts, the walk's blocks on their L_s, realized
    speedup = greedy seconds / drafter seconds summed, against the set's S_hw(g) on this machine."""

    gamma: int
    prompts: int
    identical: bool                         # every output equals greedy's (transformers: the stored y; llama.cpp: its own y')
    target_calls: int
    blocks_walk: int
    realized: float | None = None
    predicted: float | None = None
    engine: str = ""                        # the decoder, its version and threads, in words
    decoder: str = "transformers"           # engine.name of the record: transformers | llama.cpp
    blocks_walk_own: int | None = None      # llama.cpp: the walk along the decoder's own output (ngram_confirm)


@dataclass(kw_only=True)
class DrafterSet(Record):
    n_streams: int
    n_positions: int
    gate_rate: float | None
    proposal_rate: float | None             # share of block starts s with a proposal (m_s > 0)
    yield_curve: list[DrafterYield]
    optimum: list[dict[str, Any]]           # [{"r", "gamma_true"}]: argmax_g T(g, r) on the r grid
    depth: DrafterDepth
    decision_hw: DrafterDecision
    not_applicable: dict[str, str]
    confirmed: list[DrafterConfirmed] = dataclasses.field(default_factory=list)


@dataclass(kw_only=True)
class DrafterReport(Record):
    kind: str                               # "drafter"
    drafter: str                            # e.g. "prompt-lookup:2"
    draft: dict[str, Any]                   # run.json draft
    target: str | None
    runs: list[str]
    sets: dict[str, DrafterSet]
    params: dict[str, Any]
    calibration: list[CalibrationRow] = dataclasses.field(default_factory=list)  # drafter_checks.with_calibration

    def ordered_sets(self) -> list[tuple[str, DrafterSet]]:
        return [(n, self.sets[n]) for n in set_names(self.sets)]


@dataclass(frozen=True)
class DraftRule:
    """A drafter's rule per g (walk.py): d = 0 where g < min_draft, m_s < min_draft or g > max_gamma_s.
    Hugging Face's prompt lookup has none (min_draft 0, no cap); llama.cpp's ngram-simple (g = size_m)
    drafts only for size_n <= g <= cur_len - size_n - 2, cur_len = prompt_tokens + s - 1."""

    min_draft: int = 0
    size_n: int | None = None               # ngram-simple: the cap per start reads the prompt length

    @staticmethod
    def of(draft: dict[str, Any] | None) -> DraftRule:
        if isinstance(draft, dict) and draft.get("type") == "ngram-simple":
            return DraftRule(min_draft=int(draft["size_n"]), size_n=int(draft["size_n"]))
        return DraftRule()

    def caps(self, streams: list[Stream]) -> list[np.ndarray] | None:
        """max_gamma_s of each stream (None: no cap)."""
        if self.size_n is None:
            return None
        out = []
        for s in streams:
            if s.prompt_tokens is None:
                raise SpectermError(f"prompt {s.id!r} ({s.corpus}) stores no prompt_tokens, which ngram-simple's "
                                    "draft for each g needs; re-create the run with `specterm run`.")
            out.append(s.prompt_tokens + np.arange(s.n, dtype=np.int64) - self.size_n - 3)
        return out


def drafter_streams(streams: list[Stream]) -> tuple[list[np.ndarray], list[np.ndarray], np.ndarray]:
    """(L_s, m_s, n) of each stream over its analysed starts: s < the first gate failure (SPEC 1;
    positions past it are excluded), and L_s cut to the analysed positions (L_s <= n - s)."""
    runs, proposed, n = [], [], []
    for s in streams:
        if s.runs is None or s.proposed is None:
            raise SpectermError(f"prompt {s.id!r} ({s.corpus}) holds per-position bits, not a drafter's runs; "
                                "report drafter runs and model-draft runs separately.")
        k = s.first_failure
        runs.append(np.minimum(s.runs[:k].astype(np.int64), k - np.arange(k)))
        proposed.append(s.proposed[:k].astype(np.int64))
        n.append(k)
    return runs, proposed, np.asarray(n, dtype=np.int64)


def _ci(samples: np.ndarray) -> list[float | None]:
    lo, hi = percentile_ci(samples)
    return [num(lo), num(hi)]


def _ratio(num_: np.ndarray, den: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.asarray(np.where(den > 0, num_ / np.where(den > 0, den, 1), np.nan), dtype=np.float64)


def _estimate(point: float, reps: np.ndarray | None) -> Estimate:
    return Estimate(value=num(point), ci=_ci(reps) if reps is not None and reps.size else [None, None])


def block_clause(curve: CostCurve) -> str:
    """The verdict's clause on the block cost, as a draft model's (hardware.decision.block_clauses): the block
    named where the profile has the block overhead, else "block overhead not measured"."""
    if curve.block_overhead is None:
        return f"; {NOT_MEASURED}"
    return f"; block cost c_verify(d) + c_draft + o(d), d the tokens a block drafts ({curve.block_overhead.text()})"


def _verify_row(c_decode: float, c_verify: np.ndarray, D: int) -> np.ndarray:
    """[c_decode, c_verify(1), ..., c_verify(D)] (c_verify over g = 1..D, ascending)."""
    return np.concatenate([[c_decode], np.asarray(c_verify, dtype=np.float64)[:D]])


def _decision(walk: DrafterWalk, W: np.ndarray | None, curve: CostCurve | None, cost: dict[str, Any] | None,
              n_prompts: int, seed: int, where: str | None, profile: str | None) -> tuple[DrafterDecision, dict[int, tuple[float, float]]]:
    """The set's decision on this hardware (module docstring) and S_hw / S_mb per timed g."""
    if curve is None or cost is None:
        return DrafterDecision(measured=False, verdict="no measured costs on this hardware: run `specterm costs RUN` "
                               "or `specterm run` with --cost"), {}
    # c_verify(d) for d = 0..max timed, contiguous from 1 (the walk's d <= g never exceeds the g it is at)
    grid = verify_grid(curve.gammas, walk.gammas)
    if grid.size == 0:
        return DrafterDecision(measured=False, verdict="the run's costs time no c_verify(1): re-measure them"), {}
    D = int(grid.max())
    cols = np.searchsorted(walk.gammas, grid)
    tok = walk.tokens[:, cols].sum(axis=0).astype(np.float64)
    blk = walk.blocks[:, cols].sum(axis=0).astype(np.float64)
    H = walk.by_drafted[:, cols, : D + 1].sum(axis=0).astype(np.float64)
    c_ver = _verify_row(curve.c_decode, curve.c_verify, D)
    c_draft = float(curve.c_draft)
    d_all = np.arange(D + 1)
    o_d = curve.overhead_on(d_all)
    S = costmodel.drafter_speedup_hw(tok, H, blk, curve.c_decode, c_ver, c_draft, o_d)
    S_mb = costmodel.drafter_speedup_hw(tok, H, blk, curve.c_decode, np.full(D + 1, curve.c_decode), c_draft)
    g_hw = best_gamma(S, grid)
    g_mb = best_gamma(S_mb, grid)
    out = DrafterDecision(measured=True, c_draft_block_s=c_draft, c_decode_s=curve.c_decode, profile=profile,
                          gamma_mb=g_mb)
    per_g = {int(g): (float(S[i]), float(S_mb[i])) for i, g in enumerate(grid.tolist())}
    if g_hw is None:
        out.verdict = "no positions in this set: nothing to decide"
        return out, per_g
    j = int(np.flatnonzero(grid == g_hw)[0])
    out.gamma_hw, out.speedup_hw = g_hw, num(S[j])
    if g_mb is not None:
        out.speedup_mb = num(S_mb[int(np.flatnonzero(grid == g_mb)[0])])
    reps = cost_replicates(cost, 0 if W is None else W.shape[0], seed)
    if W is not None and W.shape[0] and reps is not None:
        col = cols[j]
        tok_b = W @ walk.tokens[:, col].astype(np.float64)
        blk_b = W @ walk.blocks[:, col].astype(np.float64)
        H_b = W @ walk.by_drafted[:, col, : D + 1].astype(np.float64)
        rc = np.searchsorted(reps.gammas, np.arange(1, D + 1))
        cv_b = np.concatenate([reps.c_decode[:, None], reps.c_verify[:, rc]], axis=1)
        out.speedup_hw_ci = _ci(costmodel.drafter_speedup_hw(tok_b, H_b, blk_b, reps.c_decode, cv_b, reps.c_draft,
                                                             reps.overhead_on(d_all)))
        if g_mb is not None:
            cm = cols[int(np.flatnonzero(grid == g_mb)[0])]
            H_m = W @ walk.by_drafted[:, cm, : D + 1].astype(np.float64)
            out.speedup_mb_ci = _ci(costmodel.drafter_speedup_hw(W @ walk.tokens[:, cm].astype(np.float64), H_m,
                                                                 W @ walk.blocks[:, cm].astype(np.float64), reps.c_decode,
                                                                 np.repeat(reps.c_decode[:, None], D + 1, axis=1),
                                                                 reps.c_draft))
    out.verdict_kind = verdict_kind(out.speedup_hw, out.speedup_hw_ci)
    out.verdict = verdict_text(out.verdict_kind, g_hw, float(S[j]), out.speedup_hw_ci, where) + block_clause(curve)
    if n_prompts < MIN_PROMPTS:
        out.verdict = f"{vd.too_few_text(n_prompts, MIN_PROMPTS)}: {out.verdict}"
        out.verdict_kind = vd.TOO_FEW
    return out, per_g


def set_report(streams: list[Stream], W: np.ndarray | None, gamma: int, cost: dict[str, Any] | None, seed: int,
               n_prompts: int, where: str | None = None, profile: str | None = None,
               rule: DraftRule | None = None) -> DrafterSet:
    """Every number of one set (module docstring); W: its bootstrap weights (B x N) or None; rule: the
    drafter's rule per g (DraftRule.of(run.json draft))."""
    rule = rule or DraftRule()
    runs, proposed, n = drafter_streams(streams)
    caps = rule.caps(streams)
    gammas = np.arange(1, GAMMA_MAX + 1)
    walk = walk_streams(runs, proposed, n, gammas, rule.min_draft, caps)
    tok, blk, dr = (x.sum(axis=0).astype(np.float64) for x in (walk.tokens, walk.blocks, walk.drafted))
    E = _ratio(tok, blk)
    E_b = None
    if W is not None and W.shape[0]:
        E_b = _ratio(W @ walk.tokens.astype(np.float64), W @ walk.blocks.astype(np.float64))
    curve = cost_curve(cost) if cost else None
    decision, per_g = _decision(walk, W, curve, cost, n_prompts, seed, where, profile)
    rows = []
    for j, g in enumerate(gammas.tolist()):
        s_hw, s_mb = per_g.get(g, (None, None))
        rows.append(DrafterYield(gamma=g, E=_estimate(float(E[j]), None if E_b is None else E_b[:, j]),
                                 drafted_per_block=num(_ratio(dr[j], blk[j])), acceptance=num(_ratio(tok[j] - blk[j], dr[j])),
                                 speedup_hw=num(s_hw), speedup_mb=num(s_mb)))
    optimum = [{"r": r, "gamma_true": best_gamma(_ratio(tok, blk + r * dr), gammas)} for r in R_GRID]
    reached, accepted, blocks_d = depth_counts(runs, proposed, n, gamma, rule.min_draft, caps)
    cond_pt = _ratio(accepted.sum(axis=0).astype(np.float64), reached.sum(axis=0).astype(np.float64))
    unc_pt = _ratio(accepted.sum(axis=0).astype(np.float64), np.full(gamma, float(blocks_d.sum())))
    cond_b = unc_b = None
    if W is not None and W.shape[0]:
        acc_b = W @ accepted.astype(np.float64)
        cond_b = _ratio(acc_b, W @ reached.astype(np.float64))
        unc_b = _ratio(acc_b, (W @ blocks_d.astype(np.float64))[:, None])
    depth = DrafterDepth(gamma=gamma,
                         conditional=[_estimate(float(cond_pt[i]), None if cond_b is None else cond_b[:, i]) for i in range(gamma)],
                         unconditional=[_estimate(float(unc_pt[i]), None if unc_b is None else unc_b[:, i]) for i in range(gamma)])
    n_pos = int(n.sum())
    gate_n = sum(s.gate.size for s in streams if s.gate is not None)
    gate_ok = sum(int(s.gate.sum()) for s in streams if s.gate is not None)
    starts = int(sum((p > 0).sum() for p in proposed))
    na = dict.fromkeys(BIT_STATISTICS, NOT_APPLICABLE)
    na["policies"] = POLICIES_NOTE
    return DrafterSet(n_streams=len(streams), n_positions=n_pos, gate_rate=num(gate_ok / gate_n) if gate_n else None,
                      proposal_rate=num(starts / n_pos) if n_pos else None, yield_curve=rows, optimum=optimum,
                      depth=depth, decision_hw=decision, not_applicable=na)


def confirmed_rows(meta: dict[str, Any], corpus: str | None, curve: list[DrafterYield]) -> list[DrafterConfirmed]:
    """The latest drafter confirmation of each decoder (engine.name; a record without one is transformers')
    for one corpus (None: every corpus), per g. A row's greedy seconds are its own when it has them (llama.cpp:
    greedy scaled to that run's tokens), else its prompt's."""
    records = meta.get("drafter_confirmations")
    if not isinstance(records, list):
        return []
    latest: dict[str, dict[str, Any]] = {}
    for rec in records:
        if isinstance(rec, dict):
            latest[str((rec.get("engine") or {}).get("name") or "transformers")] = rec
    out = []
    for decoder, rec in sorted(latest.items()):
        prompts = [p for p in rec.get("prompts") or []
                   if isinstance(p, dict) and (corpus is None or p.get("corpus") == corpus)]
        engine = rec.get("engine") or {}
        label = (f"llama.cpp llama-speculative-simple (binding {engine.get('version')}), {engine.get('threads')} thread(s)"
                 if decoder == "llama.cpp" else
                 f"transformers {engine.get('version')}, torch {engine.get('torch')}, {engine.get('threads')} thread(s)")
        for g in sorted({int(k) for p in prompts for k in (p.get("spec") or {})}):
            rows = [(p, p["spec"][str(g)]) for p in prompts if str(g) in (p.get("spec") or {})]
            greedy = sum(float(r.get("greedy_s", p.get("greedy_s")) or 0.0) for p, r in rows)
            spec = sum(float(r.get("s") or 0.0) for _, r in rows)
            out.append(DrafterConfirmed(
                gamma=g, prompts=len(rows), identical=all(bool(r.get("identical")) for _, r in rows),
                target_calls=sum(int(r.get("target_calls") or 0) for _, r in rows),
                blocks_walk=sum(int(r.get("blocks_walk") or 0) for _, r in rows),
                realized=num(greedy / spec) if spec > 0 else None,
                predicted=curve[g - 1].speedup_hw if 1 <= g <= len(curve) else None, engine=label, decoder=decoder,
                blocks_walk_own=(sum(int(r["blocks_walk_own"]) for _, r in rows)
                                 if all("blocks_walk_own" in r for _, r in rows) else None)))
    return out


def run_cost(run: Run) -> tuple[dict[str, Any] | None, str | None, str | None]:
    """The cost dict a drafter run decides with: the profile of this machine (SPEC 6: the newest that
    matches it), else its newest profile (the verdict names that profile's machine), else run.json cost;
    with the machine it names and the profile id."""
    from specterm.core.decide.hardware.profiles import decision_profile, run_profiles
    from specterm.core.decide.machine import this_machine

    profiles = run_profiles(run.meta)
    if profiles:
        prof = decision_profile(run.meta, this_machine()) or profiles[-1]
        warning = prof.busy_warning()  # SPEC 6: a profile timed on a busy machine warns in every verdict
        return prof.cost, prof.label() + (f" ({warning})" if warning else ""), prof.id
    cost = run.meta.get("cost")
    return (cost if isinstance(cost, dict) and cost.get("c_decode_s") else None), None, None


def is_drafter_run(run: Run) -> bool:
    """A run whose run.json draft names a drafter (SPEC 7 draft.kind prompt-lookup or ngram)."""
    draft = run.meta.get("draft")
    return isinstance(draft, dict) and draft.get("kind") in ("prompt-lookup", "ngram")


def set_walks(run: Run, gammas: np.ndarray, boot: int = BOOT, seed: int = SEED
              ) -> dict[str, tuple[DrafterWalk, np.ndarray | None]]:
    """Per corpus and pooled: the walk of the run's analysed streams at `gammas` and the set's bootstrap weights
    (as analyse_drafter draws them; None with boot 0): what `specterm costs` settles a drafter run's costs on."""
    rule = DraftRule.of(run.meta.get("draft"))
    by_corpus: dict[str, list[Stream]] = {}
    for s in run.streams:
        by_corpus.setdefault(s.corpus, []).append(s)
    corpora = sorted(by_corpus)
    weights = {c: multinomial_weights(len(by_corpus[c]), boot, corpus_seed(seed, c)) for c in corpora}

    def walk(streams: list[Stream]) -> DrafterWalk:
        runs, proposed, n = drafter_streams(streams)
        return walk_streams(runs, proposed, n, gammas, rule.min_draft, rule.caps(streams))

    out: dict[str, tuple[DrafterWalk, np.ndarray | None]] = {
        c: (walk(by_corpus[c]), weights[c] if boot else None) for c in corpora}
    if corpora:
        out[POOLED] = (walk([s for c in corpora for s in by_corpus[c]]),
                       np.hstack([weights[c] for c in corpora]) if boot else None)
    return out


def analyse_drafter(runs: list[Run], gamma: int = GAMMA_DEFAULT, boot: int = BOOT, seed: int = SEED) -> DrafterReport:
    """The report of drafter runs of one drafter and target (their streams pooled, each prompt once)."""
    if not runs or not all(is_drafter_run(r) for r in runs):
        raise SpectermError("these are not all drafter runs; report drafter runs and model-draft runs separately "
                            "(or compare them with `specterm report RUN RUN...`, which prints Which draft?).")
    names = {str(r.meta["draft"].get("spec")) for r in runs}
    if len(names) > 1:
        raise SpectermError(f"the runs hold different drafters ({', '.join(sorted(names))}); report each on its own "
                            "or compare them with `specterm report RUN RUN...` (Which draft?).")
    seen: set[tuple[str, str]] = set()
    streams: list[Stream] = []
    for run in runs:
        for s in run.streams:
            if (s.corpus, s.id) not in seen:
                seen.add((s.corpus, s.id))
                streams.append(s)
    cost, where, profile = run_cost(runs[0])
    by_corpus: dict[str, list[Stream]] = {}
    for s in streams:
        by_corpus.setdefault(s.corpus, []).append(s)
    corpora = sorted(by_corpus)
    weights = {c: multinomial_weights(len(by_corpus[c]), boot, corpus_seed(seed, c)) for c in corpora}
    sets: dict[str, DrafterSet] = {}
    rule = DraftRule.of(runs[0].meta.get("draft"))
    for c in corpora:
        sets[c] = set_report(by_corpus[c], weights[c] if boot else None, gamma, cost, seed, len(by_corpus[c]), where,
                             profile, rule)
    pooled_streams = [s for c in corpora for s in by_corpus[c]]
    W = np.hstack([weights[c] for c in corpora]) if corpora and boot else None
    fewest = min((len(by_corpus[c]) for c in corpora), default=0)
    sets[POOLED] = set_report(pooled_streams, W, gamma, cost, seed, fewest, where, profile, rule)
    for name, rep in sets.items():
        rep.confirmed = confirmed_rows(runs[0].meta, None if name == POOLED else name, rep.yield_curve)
    target = runs[0].meta.get("target")
    tname = target.get("spec") if isinstance(target, dict) else target if isinstance(target, str) else None
    return DrafterReport(kind="drafter", drafter=next(iter(names)), draft=dict(runs[0].meta["draft"]), target=tname,
                         runs=[r.path.name for r in runs], sets=sets,
                         params={"gamma": gamma, "boot": boot, "seed": seed})


__all__ = ["DO_NOT", "SPECULATE", "DrafterReport", "DrafterSet", "analyse_drafter", "is_drafter_run", "set_report"]
