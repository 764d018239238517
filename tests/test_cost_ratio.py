"""The cost-ratio model's optimum on hand-made set reports whose optimum, speedups and crossover are worked out by hand."""

from __future__ import annotations

import pytest

from report_factory import curve, make_set
from specterm.core.decide.cost_ratio import cost_ratio_optimum as decision, ridge_of, roofline_batch as batch_crossover
from specterm.core.errors import SpectermError
from specterm.core.params import ACCELERATORS

ALPHA = 0.8
GAMMA = list(range(1, 9))
# E_iid(0.8, g) = (1 - 0.8^(g+1)) / 0.2 = 5 (1 - 0.8^(g+1))
E_IID = [1.8, 2.44, 2.952, 3.3616, 3.68928, 3.951424, 4.1611392, 4.32891136]
E_TRUE = [1.7, 2.2, 2.6, 2.9, 3.1, 3.2, 3.25, 3.28]
REPORT = make_set(alpha=ALPHA, curve=curve(GAMMA, E_TRUE, E_IID))


def test_decision_hand_computed():
    # r = 0.1. True speedups E/(1 + 0.1 g): 1.545, 1.833, 2.000, 2.071 (g=4), 2.067, 2.000, 1.912, 1.822
    # i.i.d.: 1.636, 2.033, 2.271, 2.401, 2.4595, 2.4696 (g=6), 2.4477, 2.4049
    d = decision(REPORT, r=0.1, ridge=295.0)
    assert d.gamma_true == 4
    assert d.T_true == pytest.approx(2.9 / 1.4)
    assert d.gamma_iid == 6
    assert d.T_iid == pytest.approx(3.951424 / 1.6)
    assert d.T_true_at_gamma_iid == pytest.approx(3.2 / 1.6)
    assert d.roofline_B_star == pytest.approx(295.0 / 5)
    assert not hasattr(d, "speculate") and not hasattr(d, "verdict")  # the cost-ratio model is never a verdict
    v = d.summary
    assert v.startswith("at r = 0.100: g*_true = 4, T = 2.07 tokens per verify-cost")
    assert "pick g = 6 and promise 2.47 (2.00 in fact)" in v and "roofline reference B* ~ 59 (ridge 295)" in v


def test_decision_unsorted_curve_and_ties_pick_smallest_g():
    # r = 0.5: g=1 -> 1.5/1.5 = 1.0, g=2 -> 2.0/2.0 = 1.0, g=3 -> 2.4/2.5 = 0.96: tie, smallest g = 1; not > 1
    # i.i.d. at alpha 0.5: E = 1.5, 1.75, 1.875 at g = 1, 2, 3
    report = make_set(alpha=0.5, curve=curve([3, 2, 1], [2.4, 2.0, 1.5], [1.875, 1.75, 1.5]))
    d = decision(report, r=0.5, ridge=153.0)
    assert d.gamma_true == 1 and d.T_true == pytest.approx(1.0)
    assert d.summary.startswith("at r = 0.500: g*_true = 1, T = 1.00 tokens per verify-cost")
    # i.i.d. at alpha 0.5: E = 1.5, 1.75, 1.875 -> 1.0, 0.875, 0.75: g = 1, the same g
    assert d.gamma_iid == 1 and "picks the same g" in d.summary


def test_decision_same_g_verdict():
    report = make_set(alpha=ALPHA, curve=curve([1, 2], [1.8, 2.44], [1.8, 2.44]))
    d = decision(report, r=0.1)
    assert d.gamma_true == d.gamma_iid == 2
    assert d.summary == ("at r = 0.100: g*_true = 2, T = 2.03 tokens per verify-cost; the i.i.d. formula picks the same g "
                         "and promises 2.03; roofline reference B* ~ 98 (ridge 295)")


def test_decision_empty_set_and_bad_inputs():
    d = decision(make_set(alpha=None, curve=curve([], [])), r=0.1)
    assert d.summary == "no positions in this set"
    with pytest.raises(SpectermError):
        decision(REPORT, r=None)
    with pytest.raises(SpectermError):
        decision(REPORT, r=0.1, ridge=0.0)


def test_batch_crossover_and_presets():
    assert batch_crossover(295, 5) == pytest.approx(49.1667, abs=1e-3)
    assert list(batch_crossover(300, [1, 2])) == [150.0, 100.0]
    # the SPEC's H100 number, and the ordering of the presets' ridges
    assert ACCELERATORS["h100"].ridge == pytest.approx(295, abs=1)
    assert ACCELERATORS["h200"].ridge == pytest.approx(206, abs=1)
    assert ACCELERATORS["a100"].ridge == pytest.approx(153, abs=1)
    assert ridge_of("H100") == ACCELERATORS["h100"].ridge
    assert ridge_of("MI-300X") == ACCELERATORS["mi300x"].ridge
    assert ridge_of("250") == 250.0 and ridge_of(180) == 180.0
    with pytest.raises(SpectermError):
        ridge_of("tpu9000")
    with pytest.raises(SpectermError):
        ridge_of(-3)
