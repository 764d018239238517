"""Next steps that work (issue 53): `specterm costs IMPORTED --target T --draft D` measures costs for imported
bits; a run remembers, on this machine only and never in run.json, where its models were, so `costs` and
`confirm` find them; the Run screen's ETA comes from the prompts timed so far and its clock runs on."""

from __future__ import annotations

import json
import statistics

import numpy as np
import pytest

from app_fixture import judged_streams
from specterm.core.store import Stream, load_run, new_meta, read_meta, write_run
from specterm.core.store import modelkeys as M


@pytest.fixture()
def state(tmp_path, monkeypatch):
    path = tmp_path / "state" / "models.json"
    monkeypatch.setenv("SPECTERM_STATE", str(path))
    return path


def test_a_run_remembers_its_local_models_outside_run_json(tmp_path, state, monkeypatch):
    run = write_run(tmp_path / "streams" / "r", new_meta("r"), judged_streams())
    before = (run / "run.json").read_bytes()
    target = tmp_path / "models" / "t.gguf"
    target.parent.mkdir()
    target.write_bytes(b"x")
    M.remember_models(run, str(target), "layers:3")        # a self-draft needs no memory
    assert M.remembered_models(run) == {"target": str(target.resolve())}
    assert (run / "run.json").read_bytes() == before        # never in run.json
    assert str(target.resolve()) not in json.dumps(read_meta(run))
    # the same run reached by another path is the same run; a model that went away is not offered
    monkeypatch.chdir(tmp_path)
    assert M.remembered_models("streams/r") == {"target": str(target.resolve())}
    target.unlink()
    assert M.remembered_models(run) == {}
    # an unwritable state file costs only the memory
    monkeypatch.setenv("SPECTERM_STATE", str(tmp_path / "run.json" / "nope" / "models.json"))
    (tmp_path / "run.json").write_text("{}")
    M.remember_models(run, str(run / "run.json"), None)


def test_costs_and_confirm_take_the_remembered_models(tmp_path, state, monkeypatch):
    from specterm import cli

    run = write_run(tmp_path / "r", new_meta("r"), judged_streams())
    t, d = tmp_path / "t.gguf", tmp_path / "d.gguf"
    t.write_bytes(b"t")
    d.write_bytes(b"d")
    assert cli._models_here(run, None, None) == (None, None)
    assert cli._models_here(run, str(t), str(d)) == (str(t), str(d))  # given: used, and remembered
    assert cli._models_here(run, None, None) == (str(t.resolve()), str(d.resolve()))
    assert cli._models_here(run, "other", None) == ("other", str(d.resolve()))  # a flag wins over the memory


def _imported(tmp_path) -> object:
    rng = np.random.default_rng(0)
    streams = [Stream(id=f"{c}{i}", corpus=c, bits=(rng.random(n) < 0.8).astype(np.uint8))
               for c in ("code", "prose") for i, n in enumerate((40, 60, 80))]
    return write_run(tmp_path / "imp", new_meta("imp", imported_from="bits.jsonl"), streams)


def test_imported_bits_get_a_stated_cost_context(tmp_path):
    from specterm.engines.costs import IMPORTED_CONTEXT_RULE, IMPORTED_PROMPT_TOKENS, context_length

    run = load_run(_imported(tmp_path))
    n, ids, rule = context_length(run, lambda text: list(range(len(text.split()))))
    assert n == round(IMPORTED_PROMPT_TOKENS + statistics.median([40, 60, 80] * 2) / 2) == 94
    assert len(ids) == n and rule == IMPORTED_CONTEXT_RULE


def test_costs_on_imported_bits_with_target_and_draft_adds_a_profile(tmp_path, monkeypatch):
    """The imported run names no model: the torch engine loads the ones given (nothing to check them
    against) and the profile says how its context was chosen."""
    import test_profiles as TP
    from specterm.engines import costs as C
    from specterm.engines.torch import TorchEngine

    path = _imported(tmp_path)
    opened = {}

    def fake_load_pair(config, report):
        opened["specs"] = (config.target, config.draft)

        class Loaded:
            meta = {"target": {"sha256": "aa", "spec": "t.gguf"}, "draft": {"sha256": "bb", "spec": "d.gguf"}}
        return Loaded()

    monkeypatch.setattr("specterm.engines.torch.oracle_torch.load_pair", fake_load_pair)
    monkeypatch.setattr("specterm.engines.torch.TorchPair", lambda loaded, threads, drafter=None: TP.FakePair())
    pair = TorchEngine().open(read_meta(path), C.OpenOptions(target="/m/t.gguf", draft="/m/d.gguf", device=None,
                                                              dtype=None, threads=1), lambda p: None)
    assert opened["specs"] == ("/m/t.gguf", "/m/d.gguf") and isinstance(pair, TP.FakePair)
    # without --target/--draft: one sentence naming both flags
    with pytest.raises(Exception, match="pass both --target and --draft"):
        TorchEngine().open(read_meta(path), C.OpenOptions(target=None, draft=None, device=None, dtype=None, threads=1),
                           lambda p: None)
    # the whole measurement on the fake engine: a profile whose context rule names the imported bits
    monkeypatch.setattr(C, "engine_for", lambda meta: TP.FakeEngine())
    reads = iter([(0.0, 0.1)] + [(0.0, 0.5)] * 100)
    monkeypatch.setattr(C.Quiet, "read", lambda self: next(reads))
    record = C.measure(C.CostsConfig(run=path, target="/m/t.gguf", draft="/m/d.gguf"))
    assert record["context_rule"] == C.IMPORTED_CONTEXT_RULE
    assert [p["id"] for p in read_meta(path)["profiles"]] == [record["id"]]


# ------------------------------------------------------------------------ the Run screen's ETA ---

def test_eta_is_the_wall_time_per_prompt_so_far_times_the_prompts_left():
    from specterm.engines.progress import Tally

    seen = []
    tally = Tally(seen.append, n_todo=10, max_new_tokens=128, t_start=0.0)
    # before any prompt is saved: the tokens left at the generation rate (optimistic, said so)
    assert tally.eta(now=5.0, rate=64.0) == pytest.approx(10 * 128 / 64)
    assert tally.eta(now=5.0, rate=0.0) is None
    # 4 prompts saved 40 s after the first started (10 s each, teacher forcing and saving included)
    tally.t_prompts, tally.done, tally.t_last_save = 2.0, 4, 42.0
    assert tally.eta(now=42.0, rate=999.0) == pytest.approx(60.0)        # 6 left x 10 s, whatever the token rate
    assert tally.eta(now=45.0, rate=999.0) == pytest.approx(57.0)        # 3 s into the next one
    assert tally.eta(now=200.0, rate=999.0) == 0.0                        # never below 0


def test_resume_says_how_many_prompts_were_already_kept(tmp_path):
    from specterm.engines.progress import Progress, Tally

    seen: list[Progress] = []
    tally = Tally(seen.append, n_todo=3, max_new_tokens=8, t_start=0.0)
    s = Stream(id="a", corpus="c", bits=np.array([1, 1, 0], dtype=np.uint8), gate=np.ones(3, dtype=np.uint8))
    tally.saved(s, before=True)
    tally.saved(s, before=True)
    tally.emit("generating")
    assert seen[-1].already == 2 and seen[-1].prompts_done == 2 and seen[-1].n_prompts == 5


def test_the_stats_line_runs_on_between_reports():
    from specterm.engines.progress import Progress
    from specterm.widgets.progress import bits_legend, stats_line

    p = Progress("generating", elapsed_s=12.0, eta_s=30.0, tokens_per_s=5.0)
    assert "ETA [b]30s[/]" in stats_line(p) and "elapsed 12s" in stats_line(p)
    later = stats_line(p, since=7.0)
    assert "ETA [b]23s[/]" in later and "elapsed 19s" in later
    assert "ETA [b]0s[/]" in stats_line(p, since=99.0)
    # before a prompt starts, the legend reads as a key, not as counts
    assert bits_legend("") == "current prompt: not started yet   (key: 1 accepted · 0 rejected · ? not yet known)"


pytestmark = pytest.mark.anyio


async def test_the_run_screens_clock_runs_while_a_prompt_takes_long(tmp_path, monkeypatch):
    """No freeze: between the oracle's reports (a long prompt, the wait after Escape) elapsed and the ETA
    move each second from the last report; the head line names the run, its engine and this machine."""
    from app_fixture import FakeOracle, oracle_config
    from tui_checks import static_text
    from textual.widgets import Static

    from specterm.app import make_app
    from specterm.screens import run as run_screen

    oracle = FakeOracle(block_after=2)
    app = make_app(oracle_config=oracle_config(tmp_path / "live"), oracle=oracle, boot=50, shuffles=2)
    async with app.run_test(size=(80, 24)) as pilot:
        assert oracle.blocked.wait(10)
        await pilot.pause(0.2)
        screen = app.screen
        last = screen.last
        assert last is not None and last.eta_s is not None
        head = static_text(screen.query_one("#head", Static))
        assert head.startswith("Run · run 1/1 · torch -n ") and head.endswith("(this machine)"), head
        monkeypatch.setattr(run_screen, "now", lambda: screen.last_at + 5.0)
        screen.tick()
        text = static_text(screen.query_one("#run-stats", Static))
        assert f"elapsed {int(last.elapsed_s + 5)}s" in text, text
        screen.state = "cancelling"  # Escape pressed, the current step not ended yet: no ETA, the clock runs on
        monkeypatch.setattr(run_screen, "now", lambda: screen.last_at + 9.0)
        screen.tick()
        text = static_text(screen.query_one("#run-stats", Static))
        assert "ETA" not in text and f"elapsed {int(last.elapsed_s + 9)}s" in text, text
        screen.state = "running"
        await pilot.press("escape")


def test_imported_bits_are_timed_by_torch_and_their_profiles_match_this_machine():
    """An import names no engine (issue 56 labels it "import"): `specterm costs` times the models given with
    torch, and a profile of this device by any engine is the import's (else the Overview would keep saying
    "no costs of this machine" after the costs were measured)."""
    from specterm.core.decide.hardware import profiles as P
    from specterm.core.decide.machine import Machine
    from specterm.engines import engine_for
    from specterm.engines.torch import TorchEngine

    meta = new_meta("imp", imported_from="bits.jsonl")
    assert P.run_engine(meta) == P.IMPORT
    assert isinstance(engine_for(meta), TorchEngine)
    prof = P.Profile({"id": "p", "engine": {"name": "torch"}, "device": {"kind": "cpu", "name": "AMD EPYC", "threads": 1}})
    here = Machine(cpu="AMD EPYC", cores=2, threads=1)
    assert prof.matches(here, P.IMPORT) and prof.matches(here, "torch") and not prof.matches(here, "llama.cpp")
    assert not prof.matches(Machine(cpu="Intel Xeon", cores=2, threads=1), P.IMPORT)
