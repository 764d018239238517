"""Round trip as a law (issue 20): whatever a specterm writer produces, the loader reads back and
`specterm report` analyses, with no refusal.

Driven by the real oracle on SmolLM2-135M (GGUF): draft = target (the sanity check that must give
alpha = 1), and a layers:K self-draft, each at two batch sizes; then `merge` of shards, `import` of
the streams, and `repair` of every run, each through `report`. Marked slow (a real checkpoint).
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from models_fixtures import smollm2_pair  # noqa: F401  (fixture)
from typer.testing import CliRunner

from specterm.cli import app
from specterm.core.store import load_run, merge_runs, repair_run

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("roundtrip")]  # one worker under xdist: `runs` is made once

N_NEW = 12
runner = CliRunner()


def report_json(*runs: Path) -> dict:
    """`specterm report RUN... --format json`, failing the test on any refusal."""
    res = runner.invoke(app, ["report", *map(str, runs), "--format", "json", "--boot", "50", "--shuffles", "2"])
    assert res.exit_code == 0, f"report refused {runs}: {res.output} {res.exception}"
    return json.loads(res.stdout)


@pytest.fixture(scope="module")
def runs(smollm2_pair, tmp_path_factory):  # noqa: F811  (the fixture imported above)
    """{name: run dir} for draft = target and layers:20, at batch sizes 1 and 3, plus two shards."""
    import torch

    from specterm.engines.corpora import load_builtin
    from specterm.engines.torch.oracle_torch import LoadedPair
    from specterm.engines.base import OracleConfig
    from specterm.engines.oracle import run_oracle
    from specterm.engines.torch import TorchPair

    torch.set_num_threads(1)
    layer_pair, gguf = smollm2_pair
    from specterm.engines.torch import models_torch as M

    draft_layers = M.layer_skip_draft(layer_pair.target, 20)
    pairs = {
        "self": (LoadedPair(layer_pair.target, layer_pair.target, layer_pair.tokenizer, layer_pair.eos,
                            {**layer_pair.meta, "draft": layer_pair.meta["target"]}), str(gguf)),
        "l20": (replace(layer_pair, draft=draft_layers,
                        meta={**layer_pair.meta, "draft": {**layer_pair.meta["draft"], "spec": "layers:20", "layers": 20}}),
                "layers:20"),
    }
    prompts = load_builtin(["code", "prose"], limit=2)
    root = tmp_path_factory.mktemp("roundtrip")
    out: dict[str, Path] = {}
    for name, (pair, draft) in pairs.items():
        for batch in (1, 3):
            cfg = OracleConfig(target=str(gguf), draft=draft, prompts=prompts, out=root / f"{name}-b{batch}",
                               max_new_tokens=N_NEW, batch_size=batch, measure_cost=False)
            out[f"{name}-b{batch}"] = run_oracle(cfg, pair=TorchPair(pair))
    pair, draft = pairs["l20"]
    for i in range(2):
        cfg = OracleConfig(target=str(gguf), draft=draft, prompts=prompts, out=root / f"l20.shard-{i}-of-2",
                           max_new_tokens=N_NEW, batch_size=2, measure_cost=False, shard=(i, 2))
        out[f"shard{i}"] = run_oracle(cfg, pair=TorchPair(pair))
    return out


def test_every_run_the_oracle_writes_opens_in_report(runs):
    for name in ("self-b1", "self-b3", "l20-b1", "l20-b3"):
        rep = report_json(runs[name])
        assert rep["sets"]["pooled"]["n_streams"] == 4, name


def test_draft_equal_to_target_gives_alpha_one_and_beta_one(runs):
    """The natural sanity check: alpha = 1 and beta_t = 1 - TV(p, p) = 1 exactly (stored float32)."""
    for name in ("self-b1", "self-b3"):
        run = load_run(runs[name])
        for s in run.streams:
            assert s.bits.all() and s.gate.all()
            assert np.array_equal(s.beta, np.ones_like(s.beta)), (name, s.id, float(s.beta.max()))
        rep = report_json(runs[name])
        assert rep["sets"]["pooled"]["alpha"] == 1.0
        assert rep["sets"]["pooled"]["sampling"]["beta_bar"]["value"] == 1.0


def test_probabilities_are_probabilities_at_every_batch_size(runs):
    for name in ("l20-b1", "l20-b3"):
        for s in load_run(runs[name]).streams:
            for arr in (s.beta, s.draft_conf, s.target_conf):
                assert np.all((arr >= 0) & (arr <= 1)), (name, s.id)


def test_two_batch_sizes_pool_as_one_measurement(runs):
    """The same prompts at batch 1 and 3: the same y and bits, probabilities within batching noise."""
    rep = report_json(runs["l20-b1"], runs["l20-b3"])
    assert rep["sets"]["pooled"]["n_streams"] == 4
    assert rep["sets"] == report_json(runs["l20-b1"])["sets"]


def test_merged_shards_open_beside_the_unsharded_run(runs, tmp_path):
    merged, _ = merge_runs([runs["shard0"], runs["shard1"]], tmp_path / "l20-merged")
    alone = report_json(merged)
    assert alone["sets"]["pooled"]["n_streams"] == 4
    assert report_json(runs["l20-b1"], merged)["sets"]["pooled"]["alpha"] == alone["sets"]["pooled"]["alpha"]


def test_import_of_the_oracle_streams_opens_with_the_same_alpha(runs, tmp_path):
    run = load_run(runs["l20-b1"])
    src = tmp_path / "streams.jsonl"
    with open(src, "w", encoding="utf-8") as fh:
        fh.writelines(json.dumps({"id": s.id, "corpus": s.corpus, "bits": "".join(map(str, s.bits.tolist())),
                                 "draft_conf": s.draft_conf.tolist(), "tokens": s.pieces}) + "\n" for s in run.streams)
    res = runner.invoke(app, ["import", str(src), "--out", str(tmp_path / "imported"),
                              "--target", "smollm2-135m", "--draft", "layers:20"])
    assert res.exit_code == 0, res.output
    imported = report_json(tmp_path / "imported")
    assert imported["sets"]["pooled"]["alpha"] == report_json(runs["l20-b1"])["sets"]["pooled"]["alpha"]


def test_repair_keeps_every_run_as_report_reads_it(runs):
    for name, path in runs.items():
        before = report_json(path)
        result = repair_run(path)
        assert not result.dropped and not result.changed, name
        assert report_json(path) == before, name
