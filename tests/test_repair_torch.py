"""The torch oracle's repair loop (SPEC 1.3) end to end on a toy engine: torch repairs wherever batched
and serial evaluation may differ (any dtype but float32, any device but the CPU) with the loop llama.cpp
runs (engines/repair.py); float32 on the CPU keeps the prefix rule.

The toy (test_repair.py's rules) replaces the torch passes of engines/torch/oracle_torch.py: its
teacher-forced pass is *batched* and flips the near-ties, its greedy decodes are serial. Expected streams
come from test_repair's hand loops (teacher_greedy, serial_y), never from the code under test.
"""

from __future__ import annotations

import numpy as np
import pytest
from test_repair import EOS, batched_choice, serial_next, serial_y, teacher_greedy

from specterm.core.store import load_run
from specterm.engines.corpora import Prompt
from specterm.engines.repair import REPAIR_BOUND
from specterm.engines.base import OracleConfig
from specterm.engines.oracle import run_oracle
from specterm.engines.torch import TorchPair
from specterm.engines.torch import oracle_torch as O
from specterm.engines.torch import specdec

PROMPTS = [Prompt(id="a", corpus="code", text="abcd"), Prompt(id="b", corpus="prose", text="wxyz")]
MAX_NEW = 14


class ToyTokenizer:
    pad_token_id = 0

    def __call__(self, text: str):
        return type("Enc", (), {"input_ids": [ord(c) % 7 for c in text]})()

    def decode(self, ids, skip_special_tokens=False, clean_up_tokenization_spaces=False) -> str:
        return "".join(chr(97 + int(i)) for i in ids)


def draft_choice(ctx: list[int], near: dict[int, str], nxt: int) -> int:
    """The toy draft: the batched target row's choice, moved by 2 at every 4th context length."""
    tok = batched_choice(ctx, near, nxt)
    return (tok + 2) % 7 if len(ctx) % 4 == 0 else tok


def toy_engine(monkeypatch, near: dict[int, str], calls: dict[str, int] | None = None) -> None:
    """Replace the torch passes by the toy's: batched teacher forcing with near-ties, serial greedy decodes."""
    calls = calls if calls is not None else {}

    def teacher_pass(pair, prompt_ids, ys):
        calls["teacher"] = calls.get("teacher", 0) + 1
        out = []
        for p, y in zip(prompt_ids, ys):
            t_arg = np.array([batched_choice(p + y[:t], near, y[t]) for t in range(len(y))], dtype=np.int64)
            d_arg = np.array([draft_choice(p + y[:t], near, y[t]) for t in range(len(y))], dtype=np.int64)
            yv = np.asarray(y, dtype=np.int64)
            n = len(y)
            out.append(({"bits": (d_arg == yv).astype(np.uint8), "gate": (t_arg == yv).astype(np.uint8),
                         "draft_argmax": d_arg.astype(np.int32), "draft_conf": np.full(n, 0.5, np.float32),
                         "target_conf": np.full(n, 0.6, np.float32), "beta": np.full(n, 0.7, np.float32)}, t_arg))
        return out

    def greedy_generate(model, prompt_ids, max_new_tokens, eos, cancel=None, on_token=None):
        calls["serial"] = calls.get("serial", 0) + 1
        out: list[int] = []
        while len(out) < max_new_tokens and (not out or out[-1] != EOS):
            out.append(serial_next(list(prompt_ids) + out))
        return out

    def batched_greedy_generate(model, prompts, max_new_tokens, eos, pad_id, on_step=None, cancel=None):
        return [serial_y([], max_new_tokens, list(p)) for p in prompts]

    monkeypatch.setattr(O, "teacher_pass", teacher_pass)
    monkeypatch.setattr(specdec, "greedy_generate", greedy_generate)
    monkeypatch.setattr(specdec, "batched_greedy_generate", batched_greedy_generate)


def toy_pair(device: str, dtype: str) -> O.LoadedPair:
    model = {"source": "dir", "spec": "toy", "sha256": "0" * 64, "class": "Toy"}
    return O.LoadedPair(target=None, draft=None, tokenizer=ToyTokenizer(), eos={EOS},
                        meta={"target": model, "draft": {**model, "sha256": "1" * 64}, "tokenizer_vocab": 8,
                              "device": device, "dtype": dtype})


def run_toy(tmp_path, monkeypatch, near, device="cpu", dtype="bfloat16", calls=None):
    toy_engine(monkeypatch, near, calls)
    cfg = OracleConfig(target="toy", draft="toy", prompts=PROMPTS, out=tmp_path / "run", max_new_tokens=MAX_NEW,
                         measure_cost=False, batch_size=2)
    run_oracle(cfg, pair=TorchPair(toy_pair(device, dtype)))
    return load_run(tmp_path / "run")


def ids_of(p: Prompt) -> list[int]:
    return [ord(c) % 7 for c in p.text]


@pytest.mark.parametrize("device,dtype,repairs", [("cpu", "float32", False), ("cpu", "bfloat16", True),
                                                  ("cpu", "float16", True), ("cuda:0", "float32", True),
                                                  ("cuda:0", "bfloat16", True), ("mps", "float32", True)])
def test_repairs_wherever_batched_and_serial_may_differ(device, dtype, repairs):
    assert O.repairs_needed(device, dtype) is repairs


def test_a_bfloat16_run_repairs_its_near_ties(tmp_path, monkeypatch):
    near = {4 + 3: "next", 4 + 9: "next"}  # near-ties at t = 3 and 9 for the 4-token prompts
    run = run_toy(tmp_path, monkeypatch, near)
    assert run.meta["generation"]["repair"]["bound"] == REPAIR_BOUND
    for s, p in zip(run.streams, PROMPTS):
        ids = ids_of(p)
        y = teacher_greedy(near, MAX_NEW, ids)
        assert s.y.tolist() == y and s.repairs == [3, 9]
        assert s.gate.all() and s.valid_len == s.n == MAX_NEW  # every position kept
        assert s.bits.tolist() == [int(draft_choice(ids + y[:t], near, y[t]) == y[t]) for t in range(len(y))]
        assert s.y[:3].tolist() == serial_y([], MAX_NEW, ids)[:3]  # the prefix before the first flip kept
        assert s.text == "".join(chr(97 + t) for t in y)


def test_float32_on_the_cpu_keeps_the_prefix_rule(tmp_path, monkeypatch):
    near = {4 + 3: "next", 4 + 9: "next"}
    run = run_toy(tmp_path, monkeypatch, near, dtype="float32")
    assert "repair" not in run.meta["generation"]
    for s, p in zip(run.streams, PROMPTS):
        assert s.repairs is None and s.y.tolist() == serial_y([], MAX_NEW, ids_of(p))
        assert s.valid_len == 3 and s.gate[3] == 0  # cut at the first failure and shown


def test_a_gate_that_holds_stores_no_repairs_and_costs_no_extra_pass(tmp_path, monkeypatch):
    calls: dict[str, int] = {}
    run = run_toy(tmp_path, monkeypatch, {}, device="cuda:0", dtype="float32", calls=calls)
    assert [s.repairs for s in run.streams] == [[], []] and all(s.gate.all() for s in run.streams)
    assert calls == {"teacher": 1}  # the one batched pass; no serial regeneration


def test_a_flip_that_keeps_coming_back_is_excluded_alone(tmp_path, monkeypatch):
    near = {4 + 5: "anti", 4 + 10: "next"}
    run = run_toy(tmp_path, monkeypatch, near)
    for s in run.streams:
        assert s.repairs == [5]
        assert np.flatnonzero(s.gate == 0).tolist() == [5, 10]  # bound reached: these fail, never the tail
        assert s.valid_len == s.n - 2 and s.n == MAX_NEW


@pytest.mark.slow
def test_smollm2_bfloat16_on_the_cpu_keeps_its_positions(tmp_path):
    """Issue 51: a bfloat16 run of SmolLM2 with an 8-layer self-draft, 3 prompts per built-in corpus,
    64 tokens (the run that kept 685 of 956 positions before torch repaired): >= 99% of positions kept."""
    from models_fixtures import require_smollm2

    from specterm.engines.corpora import load_builtin

    path = require_smollm2()
    prompts = load_builtin(limit=3)  # what `specterm run --limit 3` takes
    cfg = OracleConfig(target=str(path), draft="layers:8", prompts=prompts, out=tmp_path / "run", max_new_tokens=64,
                         device="cpu", dtype="bfloat16", measure_cost=False)
    run_oracle(cfg)
    run = load_run(tmp_path / "run")
    n = sum(s.n for s in run.streams)
    kept = sum(s.valid_len for s in run.streams)
    assert all(s.repairs is not None for s in run.streams)
    assert kept >= 0.99 * n, f"kept {kept} of {n} positions"


def test_the_report_and_the_streams_screen_show_torch_repairs(tmp_path, monkeypatch):
    """The Repairs table and the Streams screen read Stream.repairs whatever the engine: a torch bfloat16 run's
    repairs show as llama.cpp's do (two streams, two repairs each at t = 3 and 9, nothing excluded)."""
    from specterm.core.report.analysis import analyse
    from specterm.core.report.export import to_markdown
    from specterm.screens.streams import prompt_cells, repair_note

    run = run_toy(tmp_path, monkeypatch, {4 + 3: "next", 4 + 9: "next"})
    rep = analyse([run], boot=0, shuffles=0)
    r = rep.sets["pooled"].repairs
    assert r is not None and (r.streams, r.repaired, r.repairs, r.excluded) == (2, 2, 4, 0)
    assert "| pooled | 2 | 2 | 4 | 0 |" in to_markdown(rep)
    s = run.streams[0]
    assert "2 repair(s) at t = 3, 9" in repair_note(s) and prompt_cells(s)[3] == "1.000 r2"
