"""The Run screen driving the real oracle on a tiny random Llama: Escape cancels, finished prompts stay."""

from __future__ import annotations

import threading

import pytest
from textual.widgets import Static

from specterm.app import make_app
from specterm.engines.corpora import load_builtin
from specterm.engines.base import OracleConfig
from specterm.engines.oracle import run_oracle
from specterm.core.store import load_run

pytestmark = pytest.mark.anyio


def phase(app) -> str:
    return str(app.screen.query_one("#run-phase", Static).render())


async def test_escape_cancels_the_real_oracle_and_keeps_finished_prompts(tiny_model_dir, tmp_path):
    out = tmp_path / "live"
    prompts = load_builtin(["code", "prose"], limit=2)
    config = OracleConfig(target=str(tiny_model_dir), draft="layers:1", prompts=prompts, out=out,
                          max_new_tokens=16, batch_size=1, measure_cost=False)
    saved = threading.Event()

    def oracle(cfg, on_progress, cancel):
        # The real oracle; its progress callback holds after the first saved prompt until Escape,
        # so the cancel lands mid-run at a known point.
        def hook(p):
            on_progress(p)
            if p.phase == "saved" and not saved.is_set():
                saved.set()
                cancel.wait(20)

        return run_oracle(cfg, hook, cancel)

    app = make_app(oracle_config=config, oracle=oracle, boot=100, shuffles=2)
    async with app.run_test(size=(120, 36)) as pilot:
        for _ in range(600):
            if saved.is_set():
                break
            await pilot.pause(0.05)
        assert saved.is_set(), "the oracle never saved a prompt"
        await pilot.press("escape")
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert "cancelled" in phase(app)
        kept = load_run(out)
        assert 1 <= len(kept.streams) < len(prompts)
        first = kept.streams[0]
        assert (first.corpus, first.id) == (prompts[0].corpus, prompts[0].id)
        assert first.gate_rate == 1.0 and first.n > 0
        await pilot.press("enter")
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert type(app.screen).__name__ == "OverviewScreen"
        assert app.report.sets["pooled"].n_streams == len(kept.streams)


async def test_default_oracle_reports_a_bad_model_in_one_sentence(tmp_path):
    config = OracleConfig(target=str(tmp_path / "no-such-model"), draft="layers:1",
                          prompts=load_builtin(["code"], limit=1), out=tmp_path / "x", measure_cost=False)
    app = make_app(oracle_config=config)
    async with app.run_test(size=(120, 36)) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        text = phase(app)
        assert text.startswith("failed")
        assert "Traceback" not in text
