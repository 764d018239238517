"""analysis.analyse(on_point=...): the point-estimate report handed over before the bootstrap equals
analyse(boot=0), and the full report is unchanged by asking for it; analyse(on_cis=...): the report
handed over before the borderline check is the full report but for that check's marks."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from specterm.core.report.analysis import analyse
from specterm.core.report.export import to_json
from specterm.core.store import load_run
from report_factory import without_seed_check

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


@pytest.mark.parametrize("threads", ["1", "2"])
def test_on_cis_is_the_full_report_but_for_the_borderline_check(synth, monkeypatch, threads):
    """Handed over once, before the seeds' verdicts are waited for (one thread: before they run);
    every CI and the report seed's verdicts are the full report's, no row is marked, and the full
    report's marks (set on its own rows) never reach the report handed over."""
    from specterm.core.report import analysis
    from specterm.core.claims import borderline

    monkeypatch.setenv("SPECTERM_THREADS", threads)
    events: list[str] = []
    seeds = borderline.seed_verdicts

    def seed_verdicts(*a, **k):
        events.append("seed")
        return seeds(*a, **k)

    monkeypatch.setattr(analysis, "seed_verdicts", seed_verdicts)
    seen = []

    def on_cis(report):
        events.append("cis")
        seen.append(report)

    kw = dict(gamma=5, boot=60, shuffles=3, seed=4)
    runs = _runs(synth)
    full = analyse(runs, on_cis=on_cis, **kw)
    assert len(seen) == 1 and events.count("seed") == 4
    if threads == "1":
        assert events == ["cis", "seed", "seed", "seed", "seed"]
    cis = _doc(seen[0])
    assert all(not row["borderline"] and not row.get("seed_verdicts") for row in cis["scorecard"])
    assert without_seed_check(cis) == without_seed_check(_doc(full))
    assert _doc(full) == _doc(analyse(runs, **kw))  # asking for it changes nothing
    assert any(row.get("seed_verdicts") for row in _doc(full)["scorecard"])  # the check ran: the test can tell


def test_on_cis_shipped_run_with_a_borderline_verdict_keeps_it_unmarked():
    """On a shipped run whose scorecard has a borderline row, the report handed over shows that row
    unmarked, with the report seed's verdict."""
    path = STREAMS / "qwen2.5-coder-0.5b-1.5b"
    if not (path / "run.json").exists():
        pytest.skip("not shipped here")
    seen = []
    full = analyse([load_run(path)], on_cis=seen.append)
    marked = [row for row in full.scorecard if row.borderline]
    if not marked:
        pytest.skip("no borderline verdict in this run's report")
    early = {row.id: row for row in seen[0].scorecard}
    for row in marked:
        assert not early[row.id].borderline and early[row.id].verdict == row.verdict
        assert "borderline across bootstrap seeds" in row.evidence and "borderline" not in early[row.id].evidence


def test_on_cis_not_called_without_boot(synth):
    seen = []
    analyse(_runs(synth), boot=0, shuffles=2, on_cis=seen.append)
    assert seen == []
