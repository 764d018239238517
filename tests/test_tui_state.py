"""What the TUI shows is the state it is in (issue 20, the TUI list): each test names the item it
checks and failed on the app before that item's fix."""

from __future__ import annotations

import numpy as np
import pytest
from app_fixture import META, fixture_streams, make_fixture_run, make_stream
from edge_runs import with_bits
from rich.console import Console
from textual.widgets import DataTable, Static

from specterm.app import make_app
from specterm.core.streams import write_run

pytestmark = pytest.mark.anyio
FAST = {"boot": 50, "shuffles": 2}
NARROW = (80, 24)


@pytest.fixture
def anyio_backend():
    return "asyncio"


async def ready(app, pilot):
    await pilot.pause()
    await app.workers.wait_for_complete()
    await pilot.pause()


def text(screen, selector: str) -> str:
    return str(screen.query_one(selector, Static).render())


def drawn(widget) -> list[str]:
    """The lines a widget draws at its size (rendered as the compositor would)."""
    w, h = widget.size.width, widget.size.height
    console = Console(width=w, height=h, color_system=None, legacy_windows=False)
    lines = console.render_lines(widget.render(), console.options.update(width=w, height=h), pad=True)
    return ["".join(seg.text for seg in line) for line in lines]


# -- the rolling-alpha sparkline: a fixed 0..1 scale ---------------------------------------------------

async def rolling_rows(tmp_path, bits_by_stream) -> list[list[str]]:
    streams = [with_bits(make_stream(f"s{i}", "prose", len(b), 70 + i), np.asarray(b)) for i, b in enumerate(bits_by_stream)]
    path = write_run(tmp_path / "r", {**META, "name": "r"}, streams)
    app = make_app([path], **FAST)
    out = []
    async with app.run_test(size=NARROW) as pilot:
        await ready(app, pilot)
        await pilot.press("2")
        await ready(app, pilot)
        for _ in streams:
            out.append(drawn(app.screen.query_one("#rolling")))
            await pilot.press("n")
            await pilot.pause()
    return out


async def test_rolling_alpha_draws_a_constant_series_at_its_level(tmp_path):
    ones, zeros = await rolling_rows(tmp_path, [np.ones(40), np.zeros(40)])
    assert set(ones[0].strip()) == {"█"} and len(ones[0].strip()) == len(ones[0])  # alpha 1: the top, full
    assert zeros[0].strip() == "" and set(zeros[-1].strip()) == {"▁"}  # alpha 0: a stroke at the bottom


async def test_one_token_zero_stream_draws_at_the_bottom(tmp_path):
    (rows,) = await rolling_rows(tmp_path, [[0]])
    assert rows[0].strip() == "" and set(rows[-1].strip()) == {"▁"}


# -- the live Run screen ------------------------------------------------------------------------

async def test_run_screen_counts_the_current_prompt_and_ends_full(tmp_path):
    from app_fixture import FakeOracle, oracle_config

    s = fixture_streams()[2]  # the prompt the fake oracle blocks in, half generated
    half = s.n // 2
    oracle = FakeOracle(block_after=2)
    app = make_app(oracle_config=oracle_config(tmp_path / "live"), oracle=oracle, **FAST)
    async with app.run_test(size=NARROW) as pilot:
        assert oracle.blocked.wait(10)
        await pilot.pause(0.2)
        ones = int(s.bits[:half].sum())
        legend = text(app.screen, "#bits-legend")
        assert legend == f"current prompt: {ones} accepted, {half - ones} rejected, 1 not yet known", legend
        assert "ETA 30s" in text(app.screen, "#run-stats")
        await pilot.press("escape")  # cancel: no ETA from then on
        await pilot.pause(0.2)
        assert "ETA" not in text(app.screen, "#run-stats")
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert "ETA" not in text(app.screen, "#run-stats")


async def test_run_screen_token_bar_full_at_done(tmp_path):
    from app_fixture import FakeOracle, oracle_config

    app = make_app(oracle_config=oracle_config(tmp_path / "live"), oracle=FakeOracle(), **FAST)
    async with app.run_test(size=NARROW) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        bar = app.screen.query_one("#prompt")
        assert bar.total and bar.progress == bar.total
        count = str(app.screen.query_one("#prompt-count").render())
        last = fixture_streams()[-1]
        assert count == f"{last.n}/{last.n} tokens", count
        assert "ETA" not in text(app.screen, "#run-stats")


async def test_run_screen_labels_the_cost_phase(tmp_path):
    import threading

    from app_fixture import oracle_config

    from specterm.core.progress import Progress, check_cancel

    measuring = threading.Event()

    def costs_then_wait(config, on_progress, cancel):
        on_progress(Progress("cost", "measuring costs", n_prompts=3))
        on_progress(Progress("cost", "cost 1/4: c_decode 0.010 s", n_prompts=3, step=1, steps=4))
        measuring.set()
        cancel.wait(timeout=30)
        check_cancel(cancel)

    app = make_app(oracle_config=oracle_config(tmp_path / "live"), oracle=costs_then_wait, **FAST)
    async with app.run_test(size=NARROW) as pilot:
        assert measuring.wait(10)
        await pilot.pause(0.2)
        screen = app.screen
        assert str(screen.query_one("#overall-label").render()) == "costs"
        assert str(screen.query_one("#overall-count").render()) == "1/4 measured"
        bar = screen.query_one("#overall")
        assert (bar.progress, bar.total) == (1, 4)
        await pilot.press("escape")
        await app.workers.wait_for_complete()


async def test_run_screen_shows_the_checks_at_once(tmp_path):
    """`specterm run` checked models, tokenizers and prompts (~10 s) before the TUI drew anything:
    the checks now run in the Run screen's worker, which says so from the first frame."""
    import threading

    from app_fixture import FakeOracle, oracle_config

    go = threading.Event()

    def slow_check(config):
        go.wait(timeout=30)

    app = make_app(oracle_config=oracle_config(tmp_path / "live"), oracle=FakeOracle(), check=slow_check, **FAST)
    async with app.run_test(size=NARROW) as pilot:
        await pilot.pause(0.2)
        assert "checking" in text(app.screen, "#run-phase")
        go.set()
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert "done" in text(app.screen, "#run-phase")


async def test_run_screen_check_failure_is_one_sentence(tmp_path):
    from app_fixture import FakeOracle, oracle_config

    from specterm.core.errors import SpectermError

    def bad_check(config):
        raise SpectermError("there are no prompts to run; check --corpus/--prompts/--shard.")

    app = make_app(oracle_config=oracle_config(tmp_path / "live"), oracle=FakeOracle(), check=bad_check, **FAST)
    async with app.run_test(size=NARROW) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert "failed" in text(app.screen, "#run-phase") and "no prompts to run" in text(app.screen, "#run-phase")
        assert not (tmp_path / "live").exists()
