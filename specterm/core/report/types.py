"""The report as typed objects: what `analysis.analyse` returns and what export and the screens read.

    Report        sets (name -> SetReport, corpora sorted then "pooled"), scorecard, runs, params
    SetReport     every number of one set (a corpus or the pooled set), SPEC 7 keys
    Estimate      a point value and its 95% percentile-bootstrap CI [lo, hi]
    Deficit, RunLengths, Curve, Depth, OptimumRow, PolicyRow, CostRatioOptimum, DecisionHW, ConfirmedRow, Position,
    PositionBin, Sampling,
    ScoreRow, RunSummary, Params

`Report.to_dict()` is exactly the SPEC 7 JSON (export.to_json dumps it): each dataclass writes its
fields in declaration order, nested objects recursively, and `from_dict` reads that JSON back
(unknown keys are an error, so the JSON and the classes cannot drift apart). Undefined numbers are
None (JSON null). Code reads attributes: `analysis.analyse` builds these objects directly, and there
is no access by key.

Adding a field (e.g. `decision_hw`, `confirmed`; `position` and `sampling` were added this way):
1. declare it on the class, at the place its key should appear in the JSON, with its type (a
   dataclass of its own when it has parts) and `= None` when older reports may lack it;
2. fill it where the numbers are computed (analysis.set_report or analysis.analyse), as a
   Python value (float/int/None, never numpy: `num` makes NaN None);
3. read it as an attribute in export.py / the screens. Nothing else needs to know: to_dict and
   from_dict follow the declared fields.

Set names and their order live here too: POOLED ("pooled", the name of the pooled set, used
everywhere instead of the literal), `set_names` (corpora sorted, "pooled" last) and
`set_or_default` (the one fallback: a set that is not in the report shows "pooled", else the first).

Length: one dataclass per part of the SPEC 7 JSON (the report is one schema, read and written in one
place), each with its fields' meaning beside them.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from dataclasses import dataclass
from typing import Any, Callable, ClassVar, Iterable, Self

POOLED = "pooled"


_CONVERTERS: dict[Any, Callable[[Any], Any]] = {}


def _converter(tp: Any) -> Callable[[Any], Any]:
    """The function that reads a JSON value as the declared type `tp` (dataclasses, lists and dicts
    of them; None stays None), built once per type: a warm open reads ~11k values from the cached
    report, and inspecting the type for each one was most of Report.from_dict's 22 ms (6 ms now)."""
    conv = _CONVERTERS.get(tp)
    if conv is None:
        conv = _CONVERTERS[tp] = _make_converter(tp)
    return conv


def _same(value: Any) -> Any:
    return value


def _make_converter(tp: Any) -> Callable[[Any], Any]:
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        return _converter(args[0]) if len(args) == 1 else _same
    if isinstance(tp, type) and issubclass(tp, Record):
        return lambda value: None if value is None else value if isinstance(value, tp) else tp.from_dict(value)
    if origin is list:
        (item,) = typing.get_args(tp)
        each = _converter(item)
        if each is _same:
            return lambda value: None if value is None else list(value)
        return lambda value: None if value is None else [each(v) for v in value]
    if origin is dict:
        _, item = typing.get_args(tp)
        each = _converter(item)
        return lambda value: None if value is None else {k: each(v) for k, v in value.items()}
    return _same


def _plain(value: Any) -> Any:
    if isinstance(value, Record):
        return value.to_dict()
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


_FIELDS: dict[type, tuple[dict[str, Callable[[Any], Any]], set[str]]] = {}


def _fields(cls: type) -> tuple[dict[str, Callable[[Any], Any]], set[str]]:
    """(per field its converter from JSON, the field names) of a report dataclass, computed once per
    class (get_type_hints evaluates the annotations' strings: slow enough to dominate reading a
    cached report)."""
    got = _FIELDS.get(cls)
    if got is None:
        hints = typing.get_type_hints(cls)
        names = [f.name for f in dataclasses.fields(cls)]
        got = _FIELDS[cls] = ({k: _converter(hints[k]) for k in names}, set(names))
    return got


class Record:
    """Base of the report's dataclasses: to_dict (the SPEC 7 JSON) and from_dict (reading it back), in field order."""

    __dataclass_fields__: ClassVar[dict[str, dataclasses.Field[Any]]]  # every subclass is a dataclass

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Self:
        """The object from its JSON (to_dict's output); a key the class does not declare is an error."""
        convert, names = _fields(cls)
        unknown = data.keys() - names
        if unknown:
            raise ValueError(f"{cls.__name__} has no field(s) {sorted(unknown)}; declare them in core/report/types.py")
        return cls(**{k: convert[k](v) for k, v in data.items()})

    def to_dict(self) -> dict[str, Any]:
        return {f.name: _plain(getattr(self, f.name)) for f in dataclasses.fields(self)}


@dataclass(kw_only=True)
class Estimate(Record):
    """A point value and its 95% percentile-bootstrap CI [lo, hi] (None where undefined)."""

    value: float | None = None
    ci: list[float | None] = dataclasses.field(default_factory=lambda: [None, None])

    @property
    def lo(self) -> float | None:
        return self.ci[0] if self.ci else None

    @property
    def hi(self) -> float | None:
        return self.ci[1] if self.ci else None

    def bounds(self) -> tuple[float, float]:
        """(lo, hi) as floats, NaN where undefined (so that a comparison with a bound is simply False)."""
        return (float("nan") if self.lo is None else float(self.lo), float("nan") if self.hi is None else float(self.hi))


@dataclass(kw_only=True)
class RunLengths(Record):
    """Closed run lengths: histogram count[L] against the geometric n_runs alpha^L (1 - alpha);
    D = var(L)/mean(L) and D_geom = 1/(1 - alpha) (SPEC 3)."""

    L: list[int]
    count: list[int]
    geom_expected: list[float | None]
    D: float | None = None
    D_geom: float | None = None
    n_runs: int = 0

    @property
    def mean(self) -> float | None:
        """mean L = sum L count[L] / n_runs over the closed runs (None without runs)."""
        return sum(L * c for L, c in zip(self.L, self.count)) / self.n_runs if self.n_runs else None


@dataclass(kw_only=True)
class Deficit(Record):
    """At draft length gamma: total = 1 - E_true/E_iid = hetero + temporal (SPEC 3)."""

    gamma: int
    total: Estimate
    hetero: Estimate
    temporal: Estimate
    E_true: float | None = None
    E_iid: float | None = None
    E_shuf: float | None = None


@dataclass(kw_only=True)
class Curve(Record):
    """E_true(g) and E_iid(alpha, g) for g = 1..32, and the CI of E_true at each g."""

    gamma: list[int]
    E_true: list[float | None]
    E_iid: list[float | None]
    E_true_ci: list[list[float | None]]

    def at(self, key: str, g: int) -> float | None:
        """E_true or E_iid ("E_true" / "E_iid") at draft length g (None when g is not on the curve)."""
        values = getattr(self, key)
        return values[self.gamma.index(g)] if g in self.gamma and self.gamma.index(g) < len(values) else None


@dataclass(kw_only=True)
class Depth(Record):
    """Per depth j = 1..gamma: conditional and unconditional acceptance with their i.i.d. values."""

    gamma: int
    conditional: list[Estimate]
    conditional_iid: list[float | None]
    unconditional: list[Estimate]
    unconditional_iid: list[float | None]
    blocks: list[int]
    c2_minus_c1: Estimate | None = None  # conditional acceptance at depth 2 minus depth 1 (Q1); None when gamma < 2


@dataclass(kw_only=True)
class OptimumRow(Record):
    """One r of the optimum table (SPEC 2)."""

    r: float
    gamma_true: int | None = None
    gamma_iid: int | None = None
    T_true: float | None = None
    T_iid: float | None = None
    T_true_at_gamma_iid: float | None = None
    measured: bool = False


@dataclass(kw_only=True)
class OptimumShares(Record):
    """P3 judged per bootstrap replicate (SPEC 4; optimum.optimum_shares): over `replicates` replicates
    of the set (E_true(g) and alpha resampled together), the share where g*_true > g*_iid at most r of
    the grid (`holds`), where g*_true <= g*_iid at every r and < at some (`falsified`), and where the
    gap g*_iid - g*_true lies in [1, 3] at every r (`size`: the seed's counter-claim)."""

    replicates: int
    holds: float | None = None
    falsified: float | None = None
    size: float | None = None
    r_grid: list[float] = dataclasses.field(default_factory=list)


@dataclass(kw_only=True)
class PolicyRow(Record):
    """One draft-length policy replayed on the set (SPEC 5)."""

    policy: str
    params: dict[str, Any]
    tokens_per_block: float | None = None
    drafted_per_block: float | None = None
    throughput: Estimate | None = None
    vs_best_fixed: Estimate | None = None
    vs_clairvoyant: Estimate | None = None


@dataclass(kw_only=True)
class CostRatioOptimum(Record):
    """The cost-ratio model's optimum at r = c_draft / c_verify, with the roofline reference B* of a
    preset ridge I* (SPEC 6 "Cost-ratio model"; cost_ratio.cost_ratio_optimum). Not a decision."""

    r: float
    ridge: float
    alpha: float | None = None
    gamma_true: int | None = None
    T_true: float | None = None
    gamma_iid: int | None = None
    T_iid: float | None = None
    T_true_at_gamma_iid: float | None = None
    roofline_B_star: float | None = None
    summary: str = ""


@dataclass(kw_only=True)
class ConfirmedRow(Record):
    """One draft length timed by `specterm confirm`: predicted S_hw (SPEC 6) beside the realized
    speedup (plain greedy time / speculative time, wall clock), and the refeed model's prediction."""

    gamma: int
    predicted: float
    realized: float
    prompts: int
    identical: bool
    ratio: float | None = None             # realized / predicted
    predicted_refeed: float | None = None  # S_hw with the 2-token draft step after a fully accepted block
    ratio_refeed: float | None = None
    realized_cpu: float | None = None      # the same speedup in process CPU time
    ratio_cpu: float | None = None
    ratio_cpu_refeed: float | None = None
    realized_steady: float | None = None   # per token, each method's first step (the prefills) left out
    ratio_steady: float | None = None      # realized_steady / predicted
    # S_hw at the costs of the forwards these generations made (torch records: timed by hooks), and
    # realized / it: the cost-model check without the micro-benchmark's session noise
    predicted_insitu: float | None = None
    ratio_insitu: float | None = None
    tokens_per_call: float | None = None
    date: str | None = None
    # SPEC 6 decision check (hardware.decision_check): leave-out E, the run's costs, a 95% prediction
    # interval for K prompts; in_ci / sign_held; the cost drift since the run; contexts.
    decision_predicted: Estimate | None = None
    in_ci: bool | None = None
    sign_held: bool | None = None
    leave_out_streams: int | None = None
    K: int | None = None
    excluded: list[str] = dataclasses.field(default_factory=list)
    cost_drift_pct: dict[str, Any] | None = None
    timed_context: float | None = None
    cost_context: float | None = None
    run_cost_context: float | None = None
    predicted_session_costs: float | None = None  # leave-out E with this session's costs (what the drift explains)
    drift: dict[str, Any] | None = None  # the drift of costs between sessions its interval carries (sigma, sessions, source)


@dataclass(kw_only=True)
class DecisionHW(Record):
    """Speculate or not on the hardware the run measured (SPEC 6 measured costs; core/decide/hardware.py).

    S_hw(g) = E_true(g) c_decode / (c_verify(g) + g c_draft) on the run's robust cost curve; mb: the
    memory-bound model (verify = one decode step) E / (1 + g r_mb). measured False: no measured costs
    (imported bits or an older run), only the memory-bound numbers, and the verdict says so.
    *_refeed: the refined model with the 2-token draft step after a fully accepted block.
    """

    measured: bool
    gamma_hw: int | None = None
    speedup_hw: float | None = None
    gamma_mb: int | None = None
    speedup_mb: float | None = None
    verdict: str = ""
    confirmed: list[ConfirmedRow] = dataclasses.field(default_factory=list)
    speculate: bool = False
    r_mb: float | None = None
    gamma_iid_hw: int | None = None
    speedup_iid_hw: float | None = None
    speedup_true_at_gamma_iid_hw: float | None = None
    gamma_iid_mb: int | None = None
    speedup_iid_mb: float | None = None
    gamma_hw_refeed: int | None = None
    speedup_hw_refeed: float | None = None
    speedup_refeed_at_gamma_hw: float | None = None
    clock: str | None = None
    curve_hw: dict[str, list[float | None]] = dataclasses.field(default_factory=dict)
    # SPEC 6/7 (issue 18): S_hw(g_hw) 95% CI, the three-way verdict, break-even, batch.
    speedup_hw_ci: list[float | None] = dataclasses.field(default_factory=lambda: [None, None])
    verdict_kind: str | None = None        # speculate | do_not_speculate | no_reliable_gain | too_few_prompts
    break_even_verify: float | None = None  # v* = E(g_hw) - g_hw c_draft / c_decode, in decode steps
    verify_steps: float | None = None      # c_verify(g_hw) / c_decode on the profile's machine
    speedup_mb_ci: list[float | None] = dataclasses.field(default_factory=lambda: [None, None])
    memory_bound_label: str | None = None
    by_batch: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    batch_crossover: int | None = None     # B_hw: the largest measured B whose S_hw CI lies above 1
    batch_crossover_text: str | None = None
    roofline_reference: dict[str, Any] | None = None
    cost_context: int | None = None
    batch_fit: dict[str, Any] | None = None
    confirmed_batch: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    # Cost profiles (SPEC 6 "Cost profiles"): whose costs these are, and whether that is this machine.
    profile: str | None = None              # the profile's id (None: no measured costs)
    machine: str | None = None              # its machine and engine, as the verdict names it
    matches_this_machine: bool | None = None
    busy_warning: str | None = None         # set when the profile was timed on a busy machine
    confirmed_history: list[ConfirmedRow] = dataclasses.field(default_factory=list)  # every confirmation on this profile, oldest first

    def confirmed_at(self, gamma: int | None) -> ConfirmedRow | None:
        """The confirmed row at draft length `gamma` (None when that g was not timed)."""
        return next((c for c in self.confirmed if c.gamma == gamma), None)


@dataclass(kw_only=True)
class EngineSetting(Record):
    """SPEC 7 `sets.<set>.engine_settings.<engine>`: the best draft-length policy the replay found that
    one serving engine can express (core/settings), in that engine's own names for a stated version.

    speculate False ("run without speculation"): settings is empty, `command` runs the target alone,
    and `best` holds what the engine could have been told, with `predicted` its speedup."""

    engine: str                      # llama.cpp | hf | vllm | sglang
    policy: str                      # fixed | confidence | confidence-inclusive | heuristic | none
    params: dict[str, Any] = dataclasses.field(default_factory=dict)
    settings: dict[str, Any] = dataclasses.field(default_factory=dict)
    command: str | None = None
    predicted: Estimate = dataclasses.field(default_factory=Estimate)
    source_version: str = ""
    source: str = ""                 # the file(s) the names were read from
    speculate: bool = False
    verdict_kind: str | None = None  # speculate | do_not_speculate | no_reliable_gain | too_few_prompts | None
    verdict: str = ""
    best: dict[str, Any] | None = None            # the best expressible policy when not speculating
    fixed_gamma: int | None = None                # the best fixed g this engine can be given, beside it
    fixed_predicted: Estimate | None = None
    tokens_per_block: float | None = None
    drafted_per_block: float | None = None
    profile: str | None = None                    # the cost profile the prediction is for
    notes: list[str] = dataclasses.field(default_factory=list)


@dataclass(kw_only=True)
class CalibrationRow(Record):
    """SPEC 7 `calibration[]`: the decision checks of one engine, machine and drafter kind (SPEC 6
    "Intervals that cover"): how many realized speedups fell inside their 95% prediction interval."""

    engine: str
    machine: str
    drafter: str
    checks: int
    in_pi: int
    coverage: float | None = None
    median_ratio: float | None = None             # median realized / predicted
    ratio_range: list[float | None] = dataclasses.field(default_factory=lambda: [None, None])
    policies: list[str] = dataclasses.field(default_factory=list)  # what was timed: "fixed g = 7", ...
    reading: str = ""


@dataclass(kw_only=True)
class PositionBin(Record):
    """Acceptance at positions t in [start, start + bin_width) of y, over the streams that reach the bin."""

    start: int
    alpha: Estimate
    n: int  # positions in the bin
    streams: int = 0  # streams that reach the bin


@dataclass(kw_only=True)
class Position(Record):
    """Acceptance by position in the continuation and the warm-up gain alpha(t >= 32) - alpha(t < 16) (SPEC 3)."""

    bin_width: int
    bins: list[PositionBin]
    warmup_gain: Estimate
    warmup_streams: int = 0  # streams that reach t = 32, over which the gain is taken (paired)


@dataclass(kw_only=True)
class Sampling(Record):
    """Sampling acceptance beta = 1 - TV(p, q) (SPEC 3): beta_bar, the lag-1 autocorrelation of beta,
    E_iid(beta_bar, g) for g = 2, 4, 8, 16; every value null when no stream stores beta."""

    beta_bar: Estimate
    beta_autocorr: Estimate
    E_iid_beta: dict[str, Estimate]
    streams: int = 0  # streams that store beta (the numbers are over these)
    autocorr_streams: int = 0  # streams where the lag-1 correlation of beta is defined


@dataclass(kw_only=True)
class SteadyState(Record):
    """The set's autocorrelation, run-length dispersion and deficit split on positions t >= start (32)
    only (SPEC 4 steady state; core/streams/steady.py): a warm-up trend feeds the full-stream numbers too."""

    start: int
    n_streams: int  # streams with positions at t >= start
    n_positions: int
    alpha: float | None = None
    autocorr: Estimate
    autocorr_pooled: Estimate
    dispersion_ratio: Estimate
    deficit: Deficit


@dataclass(kw_only=True)
class Repairs(Record):
    """SPEC 1.3's repair loop over the streams of a set that went through it (llama.cpp): how many did,
    how many needed a repair, the repairs (flipped positions) in all, and the positions excluded one by
    one because their gate still fails after the bound."""

    streams: int
    repaired: int
    repairs: int
    excluded: int


@dataclass(kw_only=True)
class SetReport(Record):
    """Every number of one set of streams (a corpus or the pooled set); see SPEC 7."""

    n_streams: int
    n_positions: int
    n_positions_gated_out: int
    alpha: float | None = None
    alpha_ci: list[float | None] = dataclasses.field(default_factory=lambda: [None, None])
    gate_rate: float | None = None
    autocorr: Estimate
    autocorr_pooled: Estimate
    autocorr_simpson: Estimate
    autocorr_defined_streams: int
    dispersion_ratio: Estimate
    runlengths: RunLengths
    deficit: Deficit
    yield_ratio: dict[str, Estimate]
    # D/D_geom with each stream's trailing run counted (right-censored; stats.dispersion_ratio_trailing)
    dispersion_ratio_trailing: Estimate | None = None
    curve: Curve
    depth: Depth
    optimum: list[OptimumRow]
    r_measured: float | None = None
    r_measured_values: list[float] = dataclasses.field(default_factory=list)
    policies: list[PolicyRow] = dataclasses.field(default_factory=list)
    cost_ratio: CostRatioOptimum | None = None
    position: Position | None = None
    sampling: Sampling | None = None
    decision_hw: DecisionHW | None = None
    steady_state: SteadyState | None = None
    optimum_shares: OptimumShares | None = None  # P3 per bootstrap replicate (None without a bootstrap)
    decision_by_profile: dict[str, DecisionHW] = dataclasses.field(default_factory=dict)  # profile id -> its decision
    repairs: Repairs | None = None  # None: no stream of the set went through the repair loop (torch float32 on the CPU, older runs)
    engine_settings: dict[str, EngineSetting] = dataclasses.field(default_factory=dict)  # SPEC 7 engine_settings


MEASUREMENT, ECONOMICS = "measurement", "economics"
SEEDS = {MEASUREMENT: "measurement seed", ECONOMICS: "economics seed"}


@dataclass(kw_only=True)
class ScoreRow(Record):
    """One row of the scorecard: a prediction of the measurement seed (P1-P5) or a claim of the
    economics seed (Q1-Q6), with its verdict and evidence; `seed` says whose."""

    id: str
    prediction: str
    verdict: str  # holds | holds in direction, not in size | inconclusive | falsified (core/claims/verdict.py)
    evidence: str
    seed: str = MEASUREMENT
    direction: str = "n/a"  # holds | not reproduced | inconclusive | n/a
    size: str = "n/a"  # holds | not reproduced | inconclusive | n/a
    seed_size: str = ""  # the seed's stated size (SPEC 4's table)
    steady_state: str | None = None  # the direction's outcome on positions t >= 32 (None: no such statistic)
    borderline: bool = False  # the verdict differs across bootstrap seeds 0..4
    seed_verdicts: dict[str, str] = dataclasses.field(default_factory=dict)  # bootstrap seed -> verdict
    verdict_kind: str | None = None  # "too_few_prompts" below params.MIN_PROMPTS (SPEC 6); None otherwise


@dataclass(kw_only=True)
class RunSummary(Record):
    """One analysed run: models, device, measured r, prompts."""

    name: str
    path: str
    target: str | None = None
    draft: str | None = None
    device: str | None = None
    dtype: str | None = None
    r_measured: float | None = None
    n_streams: int = 0
    corpora: list[str] = dataclasses.field(default_factory=list)
    engine: str | None = None               # torch | llama.cpp | import (streams from another tool)
    shown_profile: str | None = None        # the id of the cost profile whose decision is shown
    imported: bool = False                  # bits imported from another tool (`specterm import`): no model files


@dataclass(kw_only=True)
class Params(Record):
    """The analysis parameters the report was computed with."""

    gamma: int
    boot: int
    shuffles: int
    seed: int
    depth_gamma: int
    r_default: float
    ridge: float


def set_names(names: Iterable[str]) -> list[str]:
    """The display order of sets: corpora sorted, then "pooled"."""
    names = list(names)
    return sorted(n for n in names if n != POOLED) + ([POOLED] if POOLED in names else [])


@dataclass(kw_only=True)
class Report(Record):
    """The whole report: `analysis.analyse` builds it, export writes it, the screens show it."""

    sets: dict[str, SetReport]
    scorecard: list[ScoreRow]
    runs: list[RunSummary]
    params: Params
    profiles: list[dict[str, Any]] = dataclasses.field(default_factory=list)  # SPEC 7 profiles[], each with its "run"
    this_machine: dict[str, Any] = dataclasses.field(default_factory=dict)    # the machine the report was made on
    profile_note: str | None = None         # said when no profile of a run matches this machine
    calibration: list[CalibrationRow] = dataclasses.field(default_factory=list)  # SPEC 7 calibration

    @property
    def set_names(self) -> list[str]:
        """Corpora sorted, then "pooled"."""
        return set_names(self.sets)

    @property
    def corpora(self) -> list[str]:
        return [n for n in self.set_names if n != POOLED]

    @property
    def pooled(self) -> SetReport | None:
        return self.sets.get(POOLED)

    def set_or_default(self, name: str) -> str:
        """`name` when the report has that set, else "pooled", else the first set ("" when none)."""
        if name in self.sets:
            return name
        names = self.set_names
        return POOLED if POOLED in names else (names[0] if names else "")

    def ordered_sets(self) -> list[tuple[str, SetReport]]:
        return [(n, self.sets[n]) for n in self.set_names]
