"""core/report/types.py: the typed report writes exactly the SPEC 7 JSON it reads, owns set ordering and
its fallback, and refuses keys it does not declare."""

from __future__ import annotations

import json

import numpy as np
import pytest

from specterm.core.report.analysis import analyse
from specterm.core.report.export import to_json
from specterm.core.report.types import Curve, Estimate, Report, RunLengths, SetReport, set_names


@pytest.fixture(scope="module")
def report():
    rng = np.random.default_rng(3)
    from conftest import make_run, streams

    arrays = {c: [(rng.random(60) < p).astype(np.uint8) for _ in range(6)] for c, p in (("zeta", 0.8), ("alpha", 0.5))}
    return analyse([make_run(streams("zeta", arrays["zeta"]) + streams("alpha", arrays["alpha"]), r=0.3)],
                   boot=30, shuffles=2)


def test_round_trip_is_the_same_json(report):
    doc = json.loads(to_json(report))
    again = Report.from_dict(doc)
    assert again == report
    assert to_json(again) == to_json(report)
    assert list(doc["sets"]["pooled"]) == list(SetReport.__dataclass_fields__)  # JSON keys in field order


def test_set_order_and_fallback(report):
    assert report.set_names == ["alpha", "zeta", "pooled"] == list(report.sets)
    assert report.corpora == ["alpha", "zeta"]
    assert report.set_or_default("zeta") == "zeta"
    assert report.set_or_default("gone") == "pooled"
    assert set_names(["b", "pooled", "a"]) == ["a", "b", "pooled"]
    assert set_names(["b", "a"]) == ["a", "b"]


def test_unknown_keys_are_refused():
    with pytest.raises(ValueError, match="no field"):
        Estimate.from_dict({"value": 1.0, "ci": [0.0, 2.0], "p": 0.1})


def test_typed_pieces_and_no_key_access(report):
    s = report.sets["alpha"]
    assert isinstance(s.deficit.temporal, Estimate)
    with pytest.raises(TypeError):
        s["deficit"]  # attributes only: the report is not read by key
    assert s.cost_ratio.r == 0.3 and s.policies[0].policy in ("best-fixed", "fixed")


def test_mean_run_length_and_curve_lookup():
    # runs L = 0, 0, 2, 3, 3 -> mean 8 / 5
    rl = RunLengths(L=[0, 1, 2, 3], count=[2, 0, 1, 2], geom_expected=[0.0] * 4, n_runs=5)
    assert rl.mean == pytest.approx(8 / 5)
    assert RunLengths(L=[0], count=[0], geom_expected=[0.0], n_runs=0).mean is None
    c = Curve(gamma=[1, 2, 3], E_true=[1.5, 2.0, None], E_iid=[1.8, 2.4, 2.9], E_true_ci=[[None, None]] * 3)
    assert c.at("E_true", 2) == 2.0 and c.at("E_iid", 3) == 2.9 and c.at("E_true", 3) is None and c.at("E_iid", 9) is None


def test_the_report_holds_plain_python_values(report):
    """analyse builds the objects directly (no JSON pass cleans them): every leaf is a Python
    str/int/float/bool/None, never a numpy scalar, and no number is NaN (undefined is None)."""
    import math

    def leaves(x, where="report"):
        if isinstance(x, dict):
            for k, v in x.items():
                yield from leaves(v, f"{where}.{k}")
        elif isinstance(x, list):
            for i, v in enumerate(x):
                yield from leaves(v, f"{where}[{i}]")
        else:
            yield where, x

    bad = [(w, type(v).__name__) for w, v in leaves(report.to_dict())
           if type(v) not in (str, int, float, bool, type(None)) or (type(v) is float and not math.isfinite(v))]
    assert bad == []
