"""Drafter confirmations in the calibration table (core/drafted/drafter_checks.py): each record, corpus and g
is a decision check whose 95% prediction interval is built as the model decision check's (leave-out
streams, K drawn per replicate, cost replicates, the drift exp(sigma Z)); per engine, machine and drafter:
checks, in PI, coverage, median realized / predicted. Hand-made records, numbers by hand.

The run: every prompt holds L_s = [2, 0, 0, 1, 0], m_s = [2, 0, 0, 3, 0] except code-0, whose L_s = 0 (so a
prediction that did not leave the timed prompts out would differ); costs c_decode 1, c_verify(1) 1.2,
c_verify(2) 1.5, drafter 0.01 per block, constant samples (every cost replicate equals the point), one
session (so sigma = drift.DEFAULT_SIGMA). On the leave-out streams, all alike (tests/test_tui_drafters.py):

    S(1) = 5 / (1.2 + 1 + 1.2 + 0.03) = 1.4577     S(2) = 5 / (1.5 + 1.5 + 0.02) = 1.6556

and every replicate's S is the point times exp(sigma Z_b): PI = S [q2.5, q97.5] of exp(sigma Z).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from app_fixture import COST, make_drafter_run

from specterm.core.decide.hardware.drift import DEFAULT_SIGMA
from specterm.core.drafted.drafter_checks import with_calibration
from specterm.core.drafted.drafter_export import drafter_markdown
from specterm.core.store import load_run

S1 = 5 / (1.2 + 1 + 1.2 + 0.03)
S2 = 5 / (1.5 + 1.5 + 0.02)
BOOT = 400
SEED = 0


def record() -> dict:
    """code-0 and code-1 timed at g = 1 and 2, prose-0 at g = 2 (seconds chosen for the realized below)."""
    return {"measured_at": "2026-12-07T00:00:00+00:00", "engine": {"name": "transformers", "version": "5.25.0",
            "torch": "2.13", "threads": 1}, "method": "test", "drafter": "prompt-lookup:2", "gammas": [1, 2],
            "prompts": [
                {"corpus": "code", "id": "code-0", "n": 5, "greedy_s": 10.0, "spec": {"1": {"s": 8.0}, "2": {"s": 5.0}}},
                {"corpus": "code", "id": "code-1", "n": 5, "greedy_s": 10.0, "spec": {"1": {"s": 7.0}, "2": {"s": 7.0}}},
                {"corpus": "prose", "id": "prose-0", "n": 5, "greedy_s": 6.0, "spec": {"2": {"s": 6.0}}}]}


def confirmed_run(tmp_path: Path, rec: dict | None = None) -> Path:
    return make_drafter_run(tmp_path, "lookup", "prompt-lookup:2", [2, 0, 0, 1, 0], first=[0, 0, 0, 0, 0],
                            drafter_confirmations=[rec or record()])


def drift_quantiles(n: int) -> tuple[float, float]:
    """q2.5 and q97.5 of exp(sigma Z), Z from the generator drift.py names (seed, 51)."""
    z = np.random.default_rng([SEED, 51]).standard_normal(n)
    lo, hi = np.percentile(np.exp(DEFAULT_SIGMA * z), [2.5, 97.5])
    return float(lo), float(hi)


def test_checks_and_row_by_hand(tmp_path: Path) -> None:
    from specterm.core.drafted.drafter_analysis import run_cost
    from specterm.core.drafted.drafter_checks import drafter_checks

    run = load_run(confirmed_run(tmp_path))
    cost, _, profile = run_cost(run)
    checks = drafter_checks(run.meta, run.streams, cost, profile, BOOT, SEED)
    qlo, qhi = drift_quantiles(BOOT)
    want = [(20 / 15, S1), (20 / 12, S2), (6 / 6, S2)]  # code g=1, code g=2, prose g=2
    assert [(c.policy, c.engine, c.drafter) for c in checks] == [
        ("fixed g = 1", "hf prompt-lookup", "prompt-lookup:2"), ("fixed g = 2", "hf prompt-lookup", "prompt-lookup:2"),
        ("fixed g = 2", "hf prompt-lookup", "prompt-lookup:2")]
    for c, (realized, predicted) in zip(checks, want):
        assert c.realized == pytest.approx(realized)
        assert c.predicted == pytest.approx(predicted)  # leave-out: code-0's L_s = 0 is not in it
        assert c.lo == pytest.approx(predicted * qlo) and c.hi == pytest.approx(predicted * qhi)
    assert [c.inside for c in checks] == [False, True, False]  # 1.333 below [1.40, 1.52]; 1.667 in [1.55, 1.76]

    rep = with_calibration([run], boot=BOOT, seed=SEED)
    (row,) = rep.calibration
    ratios = sorted(r / p for r, p in want)
    assert (row.engine, row.drafter, row.checks, row.in_pi) == ("hf prompt-lookup", "prompt-lookup:2", 3, 1)
    assert row.coverage == pytest.approx(1 / 3)
    assert row.median_ratio == pytest.approx(ratios[1]) and ratios[1] == pytest.approx((20 / 15) / S1)
    assert row.ratio_range == [pytest.approx(ratios[0]), pytest.approx(ratios[2])]
    assert "1 of 3 inside" in row.reading
    md = drafter_markdown(rep)
    assert "## Calibration" in md and "| hf prompt-lookup |" in md
    assert rep.to_dict()["calibration"][0]["in_pi"] == 1


def test_no_confirmations_no_rows(tmp_path: Path) -> None:
    """Without drafter_confirmations (the shipped runs) nothing is added: no rows, no section."""
    run = load_run(make_drafter_run(tmp_path, "lookup", "prompt-lookup:2", [2, 0, 0, 1, 0]))
    rep = with_calibration([run], boot=50, seed=SEED)
    assert rep.calibration == [] and "Calibration" not in drafter_markdown(rep)


def test_untimed_g_and_incomplete_rows_are_no_checks(tmp_path: Path) -> None:
    """g = 3 (c_verify(3) not timed) and a prompt row without seconds give no check; costs are COST's."""
    from specterm.core.drafted.drafter_analysis import run_cost
    from specterm.core.drafted.drafter_checks import drafter_checks

    rec = record()
    rec["prompts"] = [{"corpus": "code", "id": "code-0", "n": 5, "greedy_s": 10.0, "spec": {"3": {"s": 8.0}}},
                      {"corpus": "prose", "id": "prose-0", "n": 5, "spec": {"2": {"s": 6.0}}}]
    run = load_run(confirmed_run(tmp_path, rec))
    cost, _, profile = run_cost(run)
    assert "3" not in COST["c_verify_s"]
    assert drafter_checks(run.meta, run.streams, cost, profile, BOOT, SEED) == []


def test_comparison_carries_the_rows(tmp_path: Path) -> None:
    """`specterm report` on drafter runs of different drafters: Which draft? ends with their calibration."""
    from specterm.core.drafted.drafter_export import comparison_markdown
    from specterm.core.drafted.route import drafter_or_comparison

    other = make_drafter_run(tmp_path, "lookup-b", "prompt-lookup:3", [0, 0, 0, 0, 0])
    cmp = drafter_or_comparison([confirmed_run(tmp_path), other], 8, BOOT, SEED, lambda runs: None)
    assert [(c.engine, c.drafter, c.checks, c.in_pi) for c in cmp.calibration] == [
        ("hf prompt-lookup", "prompt-lookup:2", 3, 1)]
    assert "## Calibration" in comparison_markdown(cmp)


@pytest.mark.anyio
async def test_decide_shows_the_drafter_rows(tmp_path: Path, monkeypatch) -> None:
    """Opened beside a pair in the TUI, the drafter's rows join the Decide screen's calibration table."""
    from app_fixture import make_fixture_run
    from pilot_settle import settled

    from specterm.app import make_app

    monkeypatch.chdir(tmp_path)
    app = make_app([make_fixture_run(tmp_path), confirmed_run(tmp_path)], boot=200, shuffles=4)
    async with app.run_test(size=(120, 36)) as pilot:
        await app.workers.wait_for_complete()
        await pilot.press("6")
        await app.workers.wait_for_complete()
        await settled(app)
        shown = str(app.screen.query_one("#engine-settings").render())
        lines = shown.splitlines()
        start = next(i for i, x in enumerate(lines) if x.startswith("hf prompt-lookup"))  # one block per row at 120
        block = "\n".join(lines[start:start + 9])
        for cell in ("drafter: prompt-lookup:2", "checks: 3", "in PI: 1", "coverage: 0.33", "1 of 3 inside"):
            assert cell in block


def test_llamacpp_rows_use_their_own_greedy_seconds(tmp_path: Path) -> None:
    """A llama.cpp n-gram confirmation (engines/llamacpp/ngram_confirm.py) stores greedy seconds per g, scaled to
    the tokens that run emitted: realized = sum of those / sum s, not the prompt's full greedy; its rows are
    the llama.cpp engine's."""
    from specterm.core.drafted.drafter_analysis import run_cost
    from specterm.core.drafted.drafter_checks import drafter_checks

    rec = record()
    rec["engine"] = {"name": "llama.cpp", "version": "0.3.36", "threads": 1}
    rec["prompts"] = [{"corpus": "code", "id": "code-0", "n": 5, "greedy_s": 10.0,
                       "spec": {"2": {"s": 5.0, "greedy_s": 8.0}}},
                      {"corpus": "code", "id": "code-1", "n": 5, "greedy_s": 10.0,
                       "spec": {"2": {"s": 7.0, "greedy_s": 6.0}}}]
    run = load_run(confirmed_run(tmp_path, rec))
    cost, _, profile = run_cost(run)
    assert profile is not None
    # the fixture's profile is torch's: it prices no llama.cpp decoder, so the record checks nothing
    assert drafter_checks(run.meta, run.streams, cost, profile, BOOT, SEED) == []
    from specterm.core.decide.hardware.profiles import run_profiles

    (shown,) = [p for p in run_profiles(run.meta) if p.id == profile]  # the fixture's costs, migrated
    assert shown.engine.get("name") == "torch"
    shown.record["engine"] = {**shown.engine, "name": "llama.cpp"}
    run.meta["profiles"] = [shown.record]
    (check,) = drafter_checks(run.meta, run.streams, cost, profile, BOOT, SEED)
    assert check.engine == "llama.cpp prompt-lookup" and check.policy == "fixed g = 2"
    assert check.realized == pytest.approx(14 / 12) and check.predicted == pytest.approx(S2)
