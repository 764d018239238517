"""The calibration table (core/settings/calibration.py): hand-made decision checks with known coverage,
and the table the report builds from the shipped runs' confirmations."""

from __future__ import annotations

from pathlib import Path

import pytest
from scipy import stats

from specterm.core.settings.calibration import Check, binomial_below, calibration_rows

ROOT = Path(__file__).resolve().parents[1]


def _check(realized: float, lo: float = 0.9, hi: float = 1.1, predicted: float = 1.0, machine: str = "m",
           engine: str = "torch", drafter: str = "model", g: int = 3) -> Check:
    return Check(engine=engine, machine=machine, drafter=drafter, policy=f"fixed g = {g}", realized=realized,
                 predicted=predicted, lo=lo, hi=hi)


def test_known_coverage_and_ratios() -> None:
    # 20 checks on one machine: 19 inside [0.9, 1.1], one at 1.3; predicted 1.0, so ratio = realized
    inside = [0.9 + 0.01 * i for i in range(19)]  # 0.90 .. 1.08
    rows = calibration_rows([_check(r) for r in inside] + [_check(1.3)])
    (row,) = rows
    assert (row.checks, row.in_pi, row.coverage) == (20, 19, pytest.approx(0.95))
    assert row.median_ratio == pytest.approx((0.99 + 1.00) / 2)  # the 10th and 11th of the 20 sorted ratios
    assert row.ratio_range == pytest.approx([0.9, 1.3])
    assert "consistent with 95% coverage" in row.reading


def test_too_narrow_is_called_a_defect_and_groups_split() -> None:
    bad = [_check(1.5, machine="a")] * 8 + [_check(1.0, machine="a")] * 4  # 4 of 12 inside
    good = [_check(1.0, machine="b", engine="llama.cpp", g=5)] * 3
    rows = calibration_rows(bad + good)
    assert [(r.engine, r.machine) for r in rows] == [("llama.cpp", "b"), ("torch", "a")]
    b, a = rows
    assert (a.checks, a.in_pi) == (12, 4) and "too narrow" in a.reading and "above the prediction" in a.reading
    assert (b.checks, b.in_pi, b.policies) == (3, 3, ["fixed g = 5"]) and "too few checks" in b.reading


def test_binomial_tail_is_scipys() -> None:
    for k, n in ((19, 31), (26, 30), (3, 3), (0, 5)):
        assert binomial_below(k, n) == pytest.approx(stats.binom.cdf(k, n, 0.95), rel=1e-9)


def test_the_report_keeps_a_row_per_machine() -> None:
    """The shipped llama.cpp run was confirmed on two machines, and on one of them with costs priced two ways:
    a row per (engine and its pricing, machine), their counts those of the decision checks the report shows
    per profile."""
    from specterm.core.report.analysis import analyse
    from specterm.core.store import load_run

    from specterm.core.decide.hardware.engine_loop import engine_label
    from specterm.core.decide.hardware.profiles import run_profiles

    run_meta = load_run(ROOT / "streams" / "qwen2.5-coder-0.5b-1.5b-llamacpp").meta
    # a profile priced in llama.cpp's loop is a cost model of its own: its checks make rows of their own
    engine_of = {p.id: engine_label("llama.cpp", p.cost) for p in run_profiles(run_meta)}
    rep = analyse([load_run(ROOT / "streams" / "qwen2.5-coder-0.5b-1.5b-llamacpp")], boot=200)
    checks: dict[tuple[str, str], tuple[int, int]] = {}
    for name, s in rep.ordered_sets():
        if name == "pooled":
            continue
        for d in s.decision_by_profile.values():
            for c in d.confirmed_history:
                if c.decision_predicted is not None and c.decision_predicted.lo is not None:
                    key = (engine_of[d.profile], d.machine or "")
                    n, k = checks.get(key, (0, 0))
                    checks[key] = (n + 1, k + int(bool(c.in_ci)))
    from specterm.core.settings.for_report import settings_checks

    for c in settings_checks(run_meta):  # the engine-settings confirmations count beside them
        n, k = checks.get((c.engine, c.machine), (0, 0))
        checks[(c.engine, c.machine)] = (n + 1, k + int(c.inside))
    assert len(rep.calibration) == len(checks) >= 2
    for row in rep.calibration:
        assert row.engine in ("llama.cpp", "llama.cpp (in-loop costs)") and row.drafter == "model"
        assert (row.checks, row.in_pi) == checks[(row.engine, row.machine)]


def test_settings_confirmations_are_checks_beside_the_fixed_g_ones() -> None:
    from specterm.core.settings.for_report import SETTINGS_CONFIRMATIONS_KEY, calibration, settings_checks

    meta = {SETTINGS_CONFIRMATIONS_KEY: [
        {"engine": "llama.cpp", "machine": "m", "drafter": "model", "results": [
            {"policy": "confidence stop at tau = 0.6 up to g_max = 11", "realized": 1.05, "predicted": 1.0, "pi": [0.9, 1.1]},
            {"policy": "fixed g = 3", "realized": 0.7, "predicted": 0.8, "pi": [0.75, 0.85]},
            {"policy": "fixed g = 4", "realized": 0.9},  # cut short: not a check
        ]},
        "not a record",
    ]}
    checks = settings_checks(meta)
    assert [c.inside for c in checks] == [True, False]
    (row,) = calibration({}, {}, {}, checks)
    assert (row.engine, row.checks, row.in_pi) == ("llama.cpp", 2, 1)
    assert row.median_ratio == pytest.approx((1.05 + 0.875) / 2)
    assert row.policies == ["settings: confidence stop at tau = 0.6 up to g_max = 11", "settings: fixed g = 3"]
