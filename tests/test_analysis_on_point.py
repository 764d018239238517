"""analysis.analyse(on_point=...): the point-estimate report handed over before the bootstrap equals
analyse(boot=0), and the full report is unchanged by asking for it."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from specterm.core.analysis import analyse
from specterm.core.export import to_json
from specterm.core.store import load_run

STREAMS = Path(__file__).resolve().parents[1] / "streams"


def _runs(synth):
    rng = np.random.default_rng(3)
    s = synth.streams("prose", [synth.markov(rng, 250, 0.9, 0.3) for _ in range(12)])
    s += synth.streams("code", [synth.iid(rng, 180, 0.8) for _ in range(9)])
    return [synth.run(s, r=0.2)]


def _doc(report) -> dict:
    return json.loads(to_json(report))


def _check(runs, **kw):
    seen = []
    full = analyse(runs, on_point=seen.append, **kw)
    assert len(seen) == 1
    point = seen[0]
    assert point.params.boot == 0
    assert _doc(point) == _doc(analyse(runs, **{**kw, "boot": 0}))
    assert _doc(full) == _doc(analyse(runs, **kw))
    assert _doc(point) != _doc(full)  # the CIs differ: the test can tell the two apart


def test_on_point_synthetic(synth):
    _check(_runs(synth), gamma=5, boot=60, shuffles=3, seed=4)


@pytest.mark.parametrize("name", ["smollm2-135m-selfdraft-l25", "qwen2.5-coder-0.5b-1.5b", "qwen2.5-coder-0.5b-1.5b-llamacpp"])
def test_on_point_shipped(name):
    path = STREAMS / name
    if not (path / "run.json").exists():
        pytest.skip(f"{name} not shipped here")
    _check([load_run(path)], boot=200, shuffles=4, seed=0)


def test_on_point_not_called_without_boot(synth):
    seen = []
    rep = analyse(_runs(synth), boot=0, shuffles=2, on_point=seen.append)
    assert seen == [] and rep.params.boot == 0
