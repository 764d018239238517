"""`specterm confirm --engine llama.cpp` on an ngram-simple run (engines/llamacpp/ngram_confirm.py).

Unit tests run a stub llama-speculative-simple: a script that runs examples/speculative-simple's loop
literally (common_ngram_simple_draft copied statement by statement, n_draft_max, greedy acceptance) against
a small deterministic "target", and prints what the example prints (-v "accepted K/N" lines, encoded /
decoded, the pieces on stdout). The confirmation must find every target-call count equal to specterm's walk
along y', every output equal to y', and flag a stub whose drafter differs. The slow test runs the real
binary on SmolLM2's GGUF at g = 2, 4, 8."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

from specterm.core.compare.speclog import parse_speculative_log
from specterm.core.errors import SpectermError
from specterm.core.store import Stream, load_run, new_meta, write_run

V = 4  # token ids 3..V+2; 2 is the end-of-generation token
EOS = 2
SIZE_N = 2

STUB = r'''#!{python}
import os, sys
args = sys.argv[1:]
def opt(name, default=None):
    return args[args.index(name) + 1] if name in args else default
V, EOS = {V}, {EOS}
prompt, n_predict = opt("-p"), int(opt("-n"))
N, M, n_ctx = int(opt("--spec-ngram-simple-size-n")), int(opt("--spec-ngram-simple-size-m")), int(opt("-c"))
bug = os.environ.get("STUB_BUG") == "1"

def tokenize(text):
    return [ord(c) % V + 3 for c in text]

flip = os.environ.get("STUB_FLIP") == "1"

def target(ctx, batched=False):  # the model: greedy next token of a context
    if "!" in prompt and len(ctx) == len(tokenize(prompt)) + 17:
        return EOS
    t = ctx[-6] if len(ctx) % 9 else (ctx[-1] - 3 + 1) % V + 3
    if flip and batched and len(ctx) == len(tokenize(prompt)) + 12:  # a near-tie that flips in a batch
        t = (t - 3 + 1) % V + 3
    return t

def ngram_simple(tokens, sampled, n, m):  # common/ngram-map.cpp common_ngram_simple_draft
    cur_len = len(tokens)
    if cur_len <= n + m + 1:
        return []
    pattern = tokens[cur_len - n + 1:cur_len] + [sampled]
    match_pos = 0
    j = cur_len - n - 1
    while j > 0:
        if all(tokens[j + k] == pattern[k] for k in range(len(pattern))):
            match_pos = j
            break
        j -= 1
    if match_pos == 0:
        return []
    copy_max = min(m, cur_len - (match_pos + n))
    if copy_max < n:
        return []
    return tokens[match_pos + n:match_pos + n + copy_max]

inp = tokenize(prompt)
out = ["\n\n", "".join(chr(97 + t) for t in inp)]
err = []
prompt_tgt, id_last, n_past, n_pred, blocks, drafted = inp[:-1], inp[-1], len(inp) - 1, 0, 0, 0
while True:
    n_draft_max = max(min(n_ctx - n_past - 2, n_predict - n_pred - 1), 0)
    draft = ngram_simple(prompt_tgt, id_last, N, M)
    if n_draft_max > 0:
        draft = draft[:n_draft_max]
    if bug and len(draft) > 2:
        draft = draft[:-1]
    ctx = prompt_tgt + [id_last]
    ids = []
    for d in draft:
        t = target(ctx + ids, True)
        if t != d:
            break
        ids.append(d)
    ids.append(target(ctx + ids, len(draft) > 0))
    n_past += len(ids)
    n_pred += len(ids)
    blocks += 1
    drafted += len(draft)
    eos = False
    for t in ids:
        prompt_tgt.append(id_last)
        id_last = t
        if t == EOS:
            eos = True
            break
        out.append(chr(97 + t))
    err.append(f"0.01.000.{{blocks:03d}} D accepted {{len(ids) - 1}}/{{len(draft)}} draft tokens, the last target token is: ({{id_last}})")
    if n_pred > n_predict or eos:
        break
out.append("\n\n\n\n")
secs = 0.01 * blocks + 0.001 * drafted
err += [f"encoded {{len(inp):4d}} tokens in    0.100 seconds, speed:  10.000 t/s",
        f"decoded {{n_pred:4d}} tokens in {{secs:8.3f}} seconds, speed:  10.000 t/s", f"n_predict = {{n_pred}}"]
sys.stdout.write("".join(out))
sys.stderr.write("\n".join(err) + "\n")
'''

PROMPTS = {("grounded", "g1"): "abcabcabdabcabcabd", ("grounded", "g2"): "hello hello hello world!",
           ("code", "c1"): "def f(x): return f(x)"}


class FakeVocab:
    def tokenize(self, text: str) -> list[int]:
        return [ord(c) % V + 3 for c in text]


def _target(ctx: list[int], prompt: str) -> int:
    """The stub's target, here (to write the run's stored y)."""
    if "!" in prompt and len(ctx) == len(FakeVocab().tokenize(prompt)) + 17:
        return EOS
    return ctx[-6] if len(ctx) % 9 else (ctx[-1] - 3 + 1) % V + 3


def _greedy(prompt: str, n: int) -> list[int]:
    ctx = FakeVocab().tokenize(prompt)
    out: list[int] = []
    while len(out) < n:
        out.append(_target(ctx + out, prompt))
        if out[-1] == EOS:
            break
    return out


def _ngram_run(tmp_path: Path, n: int = 30, draft: dict[str, Any] | None = None) -> Path:
    from specterm.engines.drafters import NgramSimple, along_y

    d = NgramSimple(size_n=SIZE_N, max_tokens=32)
    streams = []
    for (corpus, pid), prompt in PROMPTS.items():
        y = _greedy(prompt, n)
        if pid == "c1":
            y[11] = 3 if y[11] != 3 else 4  # the stored y (torch's numerics) differs from llama.cpp's at token 11
        ids = FakeVocab().tokenize(prompt)
        runs, proposed, _ = along_y(d, ids, y)
        streams.append(Stream(id=pid, corpus=corpus, bits=np.zeros(0, dtype=np.uint8), prompt=prompt,
                              gate=np.ones(len(y), dtype=np.uint8), y=np.array(y, dtype=np.int32),
                              stop="eos" if y[-1] == EOS else "length", runs=runs, proposed=proposed,
                              prompt_tokens=len(ids)))
    meta = new_meta("ng", target={"spec": "t.gguf", "sha256": "ab" * 32, "vocab_size": 100},
                    draft=draft or {**d.describe(), "max_tokens": 32},
                    generation={"max_new_tokens": n, "y_method": "batched greedy"})
    return write_run(tmp_path / "ng", meta, streams)


@pytest.fixture
def stub(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A directory holding the stub binary; the binding's pieces replaced by the stub's tokenizer."""
    from specterm.engines.llamacpp import binding, confirm_llamacpp
    from specterm.engines.llamacpp import models_llamacpp as LM

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    exe = bin_dir / "llama-speculative-simple"
    exe.write_text(STUB.format(python=sys.executable, V=V, EOS=EOS), encoding="utf-8")
    exe.chmod(0o755)
    monkeypatch.setattr(binding, "require_binding", lambda: None)
    monkeypatch.setattr(confirm_llamacpp, "resolve_gguf", lambda meta, role, override: tmp_path / "t.gguf")
    monkeypatch.setattr(LM, "load_gguf", lambda *a, **k: FakeVocab())
    monkeypatch.setattr(LM, "eog_ids", lambda model: {EOS})
    monkeypatch.setattr(LM, "engine_info", lambda threads: {"binding_version": "stub"})
    return bin_dir


def test_stub_confirmation_equals_the_walk_and_reports_where_y_differs(tmp_path: Path, stub: Path) -> None:
    from specterm.core.drafted.drafter_analysis import analyse_drafter
    from specterm.core.drafted.drafter_export import drafter_markdown
    from specterm.engines.llamacpp.ngram_confirm import confirm_ngram_llamacpp

    path = _ngram_run(tmp_path)
    rec = confirm_ngram_llamacpp(path, k=2, gammas=(2, 4, 8), llama_bin=stub, log=lambda m: None)
    assert rec["engine"]["name"] == "llama.cpp" and len(rec["prompts"]) == 3
    drafted = 0
    for p in rec["prompts"]:
        assert p["n"] == len(_greedy(PROMPTS[(p["corpus"], p["id"])], 30))
        assert p["greedy_identical"] == (p["id"] != "c1")
        assert p["greedy_first_divergence"] == (11 if p["id"] == "c1" else None)
        assert set(p["spec"]) == {"2", "4", "8"}
        for g, r in p["spec"].items():
            assert r["identical"], (p["id"], g)
            assert r["target_calls"] == r["blocks_walk"] == r["blocks_walk_own"] and r["first_block_mismatch"] is None
            assert r["first_divergence"] is None and r["own_block_mismatch"] is None
            assert (r["drafted"], r["accepted"]) == (r["drafted_walk"], r["accepted_walk"])
            # the stub times 0.01 s per block and 0.001 s per drafted token, greedy 0.01 s per token
            assert r["s"] == pytest.approx(0.01 * r["target_calls"] + 0.001 * r["drafted"], abs=1e-3)
            assert r["greedy_s"] == pytest.approx(0.01 * r["tokens_out"], abs=1e-3)
            drafted += r["accepted"]
    assert drafted > 0  # the stub's target repeats: the drafter has something to find
    g2 = next(p for p in rec["prompts"] if p["id"] == "g2")
    # y' ends at the end-of-generation token the stub's target gives at 17 tokens past the prompt: 18 tokens
    assert g2["n"] == 18 and all(r["tokens_out"] <= 18 for r in g2["spec"].values())
    run = load_run(path)
    assert run.meta["drafter_confirmations"][-1]["prompts"] == rec["prompts"]  # stored, and the run loads sealed
    rep = analyse_drafter([run], boot=0)
    rows = {c.gamma: c for c in rep.sets["grounded"].confirmed}
    both = [p["spec"]["4"] for p in rec["prompts"] if p["corpus"] == "grounded"]
    assert rows[4].decoder == "llama.cpp" and rows[4].prompts == 2
    assert rows[4].realized == pytest.approx(sum(r["greedy_s"] for r in both) / sum(r["s"] for r in both))
    assert rows[4].target_calls == sum(r["target_calls"] for r in both)
    assert rows[4].blocks_walk_own == rows[4].target_calls
    text = drafter_markdown(rep)
    assert "llama.cpp's llama-speculative-simple --spec-type ngram-simple" in text and "outputs = greedy" in text
    assert "walk along its output" in text


def test_replay_of_kept_logs_gives_the_same_rows(tmp_path: Path, stub: Path) -> None:
    """--keep-logs keeps each run's -v log and printed text; a replay analyses them again (no binary run) into the
    same record's place: the same rows but the process wall seconds (the log's decoded seconds stand in)."""
    from specterm.engines.llamacpp.ngram_confirm import confirm_ngram_llamacpp

    path = _ngram_run(tmp_path)
    logs = tmp_path / "logs"
    first = confirm_ngram_llamacpp(path, k=1, gammas=(2, 4), llama_bin=stub, keep_logs=logs, log=lambda m: None)
    (stub / "llama-speculative-simple").write_text("#!/bin/sh\nexit 3\n")  # a replay never runs the binary
    again = confirm_ngram_llamacpp(path, k=1, gammas=(2, 4), llama_bin=stub, replay=logs, index=0, log=lambda m: None)
    stored = load_run(path).meta["drafter_confirmations"]
    assert len(stored) == 1 and stored[0]["replayed_from"]["logs"] == str(logs)
    assert again["measured_at"] == first["measured_at"]
    for a, b in zip(first["prompts"], again["prompts"]):
        for g in a["spec"]:
            a["spec"][g].pop("wall_s"), b["spec"][g].pop("wall_s")
        assert a == b


def test_stub_whose_drafter_differs_is_caught(tmp_path: Path, stub: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from specterm import cli

    path = _ngram_run(tmp_path)
    monkeypatch.setenv("STUB_BUG", "1")  # drafts one token fewer whenever it drafts 3 or more
    res = CliRunner().invoke(cli.app, ["confirm", str(path), "--engine", "llama.cpp", "--llama-bin", str(stub), "-k", "1"])
    assert res.exit_code != 0 and "differs from the walk" in res.output
    rec = load_run(path).meta["drafter_confirmations"][-1]  # kept for a look
    bad = [r for p in rec["prompts"] for r in p["spec"].values() if r["own_block_mismatch"] is not None]
    assert bad and all(r["drafted"] < r["drafted_walk"] or r["target_calls"] != r["blocks_walk"] for r in bad)


def test_output_leaving_y_is_reported_not_failed(tmp_path: Path, stub: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A target whose batched verification flips token 12 (llama.cpp's numerics on Qwen): the output leaves y' at
    12 where a batched block covers it; the blocks before equal the walk's along y', and every block equals the
    walk's along the decoder's own output; `specterm confirm` says so and succeeds."""
    from specterm import cli

    path = _ngram_run(tmp_path)
    monkeypatch.setenv("STUB_FLIP", "1")
    res = CliRunner().invoke(cli.app, ["confirm", str(path), "--engine", "llama.cpp", "--llama-bin", str(stub), "-k", "2"])
    assert res.exit_code == 0, res.output
    rows = [r for p in load_run(path).meta["drafter_confirmations"][-1]["prompts"] for r in p["spec"].values()]
    left = [r for r in rows if not r["identical"]]
    assert left and all(r["first_divergence"] == 12 for r in left)
    assert all(r["blocks_agree_before_divergence"] and r["own_block_mismatch"] is None for r in rows)
    assert all(r["target_calls"] == r["blocks_walk_own"] for r in rows)
    assert "leaves y'" in res.output and "at token 12" in res.output


def test_prompt_lookup_run_is_refused_with_a_sentence(tmp_path: Path, stub: Path) -> None:
    from specterm import cli

    path = _ngram_run(tmp_path, draft={"kind": "prompt-lookup", "spec": "prompt-lookup:2", "max_matching_ngram_size": 2,
                                       "max_tokens": 32, "eos_token_ids": [EOS], "source": "test"})
    res = CliRunner().invoke(cli.app, ["confirm", str(path), "--engine", "llama.cpp", "--llama-bin", str(stub)])
    said = res.output + str(res.exception)  # a SpectermError: launch.main prints it as one sentence
    assert res.exit_code != 0 and "llama.cpp does not implement" in said and "without --engine" in said
    res = CliRunner().invoke(cli.app, ["confirm", str(path), "--engine", "vllm"])
    assert res.exit_code != 0 and "unknown --engine vllm" in res.output
    res = CliRunner().invoke(cli.app, ["confirm", str(path), "--llama-bin", str(stub)])  # torch: HF's prompt lookup
    assert res.exit_code != 0 and "--llama-bin, --llama-src and --keep-logs are for --engine llama.cpp" in res.output
    res = CliRunner().invoke(cli.app, ["confirm", str(path), "-n", "48"])  # HF's prompt lookup times each y whole
    assert res.exit_code != 0 and "-n is not supported for a prompt-lookup run yet" in res.output


def test_greedy_run_must_not_draft_and_blocks_are_compared_one_by_one() -> None:
    from specterm.engines.llamacpp.ngram_confirm import Decoded, check_blocks, first_divergence, greedy_tokens, printed

    log = parse_speculative_log("accepted 0/0 draft tokens, the last target token is: (5)\n"
                                "accepted 0/0 draft tokens, the last target token is: (6)\n", drafts_logged=False)
    assert greedy_tokens(Decoded(log, 1.0, b"", "")) == [5, 6]
    drafting = parse_speculative_log("accepted 0/2 draft tokens, the last target token is: (5)\n", drafts_logged=False)
    with pytest.raises(SpectermError, match="drafted"):
        greedy_tokens(Decoded(drafting, 1.0, b"", ""))
    # y' = 5 6 7 8 9; blocks (K/N, target): 1/2 -> 6 at position 1; 2/2 -> 9 at position 4: 5 tokens, 2 blocks
    spec = parse_speculative_log("accepted 1/2 draft tokens, the last target token is: (6)\n"
                                 "accepted 2/2 draft tokens, the last target token is: (9)\n", drafts_logged=False)
    y = [5, 6, 7, 8, 9]
    ok = check_blocks(spec, y, np.array([2, 2]), np.array([1, 2]))
    assert ok == {"first_block_mismatch": None, "targets_equal": True, "tokens_out": 5}
    assert check_blocks(spec, y, np.array([2, 3]), np.array([1, 2]))["first_block_mismatch"] == 1
    assert check_blocks(spec, y, np.array([2, 2, 1]), np.array([1, 2, 0]))["first_block_mismatch"] == 2
    assert not check_blocks(spec, [5, 6, 7, 8, 4], np.array([2, 2]), np.array([1, 2]))["targets_equal"]
    assert printed(b"\n\nabc\n\n\n\n") == b"abc" and printed(b"\n\nab\n\n\n\n\n\n") == b"ab\n\n"
    assert first_divergence([1, 2, 3], [1, 2, 3]) is None and first_divergence([1, 2, 3], [1, 5, 3]) == 1
    assert first_divergence([1, 2], [1, 2, 3]) == 2


# ------------------------------------------------------------------------------ the real binary, slow ---

def _binary_dir() -> Path:
    from specterm.engines.llamacpp import binaries as B

    env = os.environ.get("SPECTERM_LLAMA_BIN")
    if env and B.find_binary(Path(env)) is not None:
        return Path(env)
    found = B.find_binary(None)
    if found is not None:
        return found.parent
    pytest.skip("llama-speculative-simple not built: set SPECTERM_LLAMA_BIN to its directory")


@pytest.mark.slow
@pytest.mark.llamacpp
def test_llamacpp_ngram_simple_target_calls_equal_the_walk_on_smollm2(tmp_path: Path) -> None:
    """SmolLM2-135M GGUF, real llama-speculative-simple --spec-type ngram-simple at g = 2, 4, 8 on four grounded
    and two code prompts: on every prompt and g the decoder's target calls (and each block's drafted and
    accepted counts) equal specterm's walk along llama.cpp's own greedy y', and its output is y'."""
    pytest.importorskip("llama_cpp")
    from models_fixtures import require_smollm2

    from specterm.engines.corpora import load_builtin
    from specterm.engines.drafters import NgramSimple, along_y
    from specterm.engines.llamacpp import models_llamacpp as LM
    from specterm.engines.llamacpp.ngram_confirm import confirm_ngram_llamacpp
    from specterm.engines.torch import models_torch as M

    bin_dir = _binary_dir()
    gguf = require_smollm2()
    spec = M.resolve_spec(str(gguf))
    vocab = LM.load_gguf(gguf, 64, 1, vocab_only=True)
    d = NgramSimple(size_n=2, max_tokens=32)
    streams = []
    for p in load_builtin(["grounded"], limit=4) + load_builtin(["code"], limit=2):
        ids = vocab.tokenize(p.text)
        y = [3] * 40  # a stand-in for torch's y: the check runs along llama.cpp's own greedy y'
        runs, proposed, _ = along_y(d, ids, y)
        streams.append(Stream(id=p.id, corpus=p.corpus, bits=np.zeros(0, dtype=np.uint8), prompt=p.text,
                              gate=np.ones(40, dtype=np.uint8), y=np.array(y, dtype=np.int32), stop="length",
                              runs=runs, proposed=proposed, prompt_tokens=len(ids)))
    meta = new_meta("smol-ng", target=spec.describe(), draft=d.describe(),
                    generation={"max_new_tokens": 40, "y_method": "batched greedy"})
    path = write_run(tmp_path / "smol-ng", meta, streams)
    rec = confirm_ngram_llamacpp(path, k=4, gammas=(2, 4, 8), target=str(gguf), llama_bin=bin_dir, log=print)
    accepted = 0
    for p in rec["prompts"]:
        for g, r in p["spec"].items():
            print(p["corpus"], p["id"], g, json.dumps({k: r[k] for k in ("target_calls", "blocks_walk", "identical", "s")}))
            assert r["identical"], (p["id"], g)
            assert r["target_calls"] == r["blocks_walk"] == r["blocks_walk_own"] and r["first_block_mismatch"] is None
            assert r["first_divergence"] is None and r["own_block_mismatch"] is None, (p["id"], g)
            accepted += r["accepted"]
    assert len(rec["prompts"]) == 6 and accepted > 0


def test_ctrl_c_keeps_the_prompts_already_timed(tmp_path: Path, stub: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The record is rewritten after every prompt: Ctrl-C during the second prompt leaves the first in run.json,
    marked "complete": false, and the run still loads; a finished confirmation says "complete": true."""
    from specterm.engines.llamacpp import ngram_confirm as NC

    path = _ngram_run(tmp_path)
    real = NC.time_prompt
    calls = []

    def interrupted(setup, prompt, n, gammas, reverse, keep_logs, name):  # the warm-up, the first prompt, then Ctrl-C
        calls.append(name)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return real(setup, prompt, n, gammas, reverse, keep_logs, name)

    monkeypatch.setattr(NC, "time_prompt", interrupted)
    with pytest.raises(KeyboardInterrupt):
        NC.confirm_ngram_llamacpp(path, k=2, gammas=(2, 4), llama_bin=stub, log=lambda m: None)
    (kept,) = load_run(path).meta["drafter_confirmations"]
    assert kept["complete"] is False and [p["id"] for p in kept["prompts"]] == [calls[1].split("-", 1)[1]]
    assert set(kept["prompts"][0]["spec"]) == {"2", "4"}
    monkeypatch.setattr(NC, "time_prompt", real)
    rec = NC.confirm_ngram_llamacpp(path, k=2, gammas=(2, 4), llama_bin=stub, log=lambda m: None)
    stored = load_run(path).meta["drafter_confirmations"]
    assert len(stored) == 2 and stored[1]["complete"] is True and len(stored[1]["prompts"]) == len(rec["prompts"]) == 3
