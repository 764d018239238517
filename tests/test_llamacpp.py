"""The llama.cpp backend on SmolLM2-135M (GGUF) through llama-cpp-python (the `llamacpp` extra).

- a model drafting for itself gives alpha 1 (bits equal the gate at every position);
- bits, gate, top-1 probabilities and beta equal a hand loop over the binding's own logits
  (Llama.eval with logits_all=True: another code path of the binding than the backend's);
- `specterm run --backend llama.cpp` writes a run the store reads back (beta in [0, 1], gate reported);
- without the binding: one sentence naming the extra.
"""

from __future__ import annotations

import importlib.util
import math
import os
import sys
from pathlib import Path

import numpy as np
import pytest
from models_fixtures import require_smollm2

from specterm.core.errors import SpectermError

HAVE_BINDING = importlib.util.find_spec("llama_cpp") is not None
pytestmark = pytest.mark.xdist_group("llamacpp-smol")  # one worker under xdist: the module's `smol` is loaded once


def require_binding():
    if not HAVE_BINDING:
        msg = 'llama-cpp-python missing: pip install -e ".[llamacpp]"'
        if os.environ.get("CI"):
            pytest.fail(msg)
        pytest.skip(msg)


PROMPT = "def fibonacci(n):\n    \"\"\"Return the n-th Fibonacci number.\"\"\"\n"


@pytest.fixture(scope="module")
def smol():
    require_binding()
    from specterm.engines.llamacpp import models_llamacpp as LM

    path = require_smollm2()
    try:
        LM.probe_decode(path)  # a build this CPU cannot run fails here with its one sentence, not with SIGILL
    except SpectermError as exc:
        pytest.fail(str(exc))
    return path, LM.load_gguf(path, 256, 1)


@pytest.mark.parametrize("cmake_args", [None, "-DGGML_NATIVE=OFF"])
def test_what_a_run_records_of_llamacpp_is_a_valid_run_json(tmp_path, monkeypatch, cmake_args):
    """engine_info (run.json's "backend") and describe_llamacpp (a cost profile's engine) pass the run.json
    validator for a pip-built binding too: its build was a string, which refused every new llama.cpp run."""
    require_binding()
    from specterm.core.store import new_meta
    from specterm.core.store.meta import validate_meta
    from specterm.engines.llamacpp.models_llamacpp import describe_llamacpp, engine_info

    monkeypatch.delenv("LLAMA_CPP_LIB_PATH", raising=False)
    if cmake_args is None:
        monkeypatch.delenv("CMAKE_ARGS", raising=False)
    else:
        monkeypatch.setenv("CMAKE_ARGS", cmake_args)
    info = engine_info(2)
    assert isinstance(info["build"], dict) and info["build"]["how"].startswith("pip install llama-cpp-python")
    assert info["build"]["how"].endswith(f"; CMAKE_ARGS={cmake_args}") == (cmake_args is not None)
    validate_meta(new_meta("r", backend=info), tmp_path / "run.json")  # raises on a field of the wrong type
    assert describe_llamacpp(2)["engine"]["build"]["how"] == info["build"]["how"]


def test_missing_binding_gives_one_sentence_naming_the_extra(monkeypatch):
    from specterm.engines.llamacpp.binding import require_binding as req

    monkeypatch.setitem(sys.modules, "llama_cpp", None)  # makes `import llama_cpp` raise ImportError
    with pytest.raises(SpectermError) as info:
        req()
    msg = str(info.value)
    assert 'pip install -e ".[llamacpp]"' in msg and msg.count(". ") == 0 and msg.endswith(".")


def test_missing_binding_from_the_cli(monkeypatch, tmp_path, capsys):
    from specterm import cli

    monkeypatch.setitem(sys.modules, "llama_cpp", None)
    monkeypatch.setattr(sys, "argv", ["specterm", "run", "--backend", "llama.cpp", "-t", "x.gguf", "-d", "x.gguf",
                                      "-o", str(tmp_path / "r")])
    with pytest.raises(SystemExit) as info:
        cli.main()
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert "llamacpp" in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


@pytest.mark.slow
@pytest.mark.llamacpp
def test_self_draft_gives_alpha_one(smol):
    from specterm.engines.llamacpp import models_llamacpp as LM
    from specterm.engines.llamacpp.oracle_llamacpp import (
        serial_greedy,
        stream_columns,
        teacher_force_logits,
    )

    _, m = smol
    ids = m.tokenize(PROMPT)
    y = serial_greedy(m, ids, 24, LM.eog_ids(m))
    lt = teacher_force_logits(m, ids, y)
    cols = stream_columns(lt, teacher_force_logits(m, ids, y), np.asarray(y))
    assert (cols["bits"] == cols["gate"]).all()
    valid = int(np.argmin(cols["gate"])) if not cols["gate"].all() else len(y)
    assert valid > 0 and cols["bits"][:valid].mean() == 1.0  # alpha over the gate-valid positions
    np.testing.assert_allclose(cols["beta"], 1.0, atol=1e-6)  # p = q: sum min(p, q) = 1


@pytest.mark.slow
@pytest.mark.llamacpp
def test_bits_equal_a_hand_loop_over_the_bindings_logits(smol):
    """Target = SmolLM2, draft = the same GGUF with its context's logits read through Llama.eval
    (another path through the binding); the draft is perturbed by a fixed temperature so q != p."""
    import llama_cpp

    from specterm.engines.llamacpp import models_llamacpp as LM
    from specterm.engines.llamacpp.oracle_llamacpp import (
        serial_greedy,
        stream_columns,
        teacher_force_logits,
    )

    path, m = smol
    ids = m.tokenize(PROMPT)
    y = serial_greedy(m, ids, 8, LM.eog_ids(m))
    mine_t = teacher_force_logits(m, ids, y)
    ref = llama_cpp.Llama(model_path=str(path), n_ctx=256, n_batch=256, n_ubatch=256, n_threads=1, logits_all=True,
                          verbose=False)
    ref.eval(ids + y[:-1])
    scores = np.array(ref.scores[len(ids) - 1: len(ids) - 1 + len(y)], dtype=np.float64)
    draft_scores = scores / 1.7  # a different distribution with the same argmax
    draft_scores[3, y[3]] -= 100.0  # and one position where the draft's argmax is not y
    cols = stream_columns(mine_t, draft_scores.astype(np.float32), np.asarray(y))
    for t in range(len(y)):
        row_p, row_q = scores[t].tolist(), draft_scores[t].tolist()
        mp, mq = max(row_p), max(row_q)
        p_row = [math.exp(v - mp) for v in row_p]
        zp = sum(p_row)
        q_row = [math.exp(v - mq) for v in row_q]
        zq = sum(q_row)
        t_arg = max(range(len(p_row)), key=lambda v: (p_row[v], -v))
        d_arg = max(range(len(q_row)), key=lambda v: (q_row[v], -v))
        assert cols["gate"][t] == int(t_arg == y[t])
        assert cols["bits"][t] == int(d_arg == y[t])
        assert cols["target_conf"][t] == pytest.approx(max(p_row) / zp, rel=1e-4)
        assert cols["draft_conf"][t] == pytest.approx(max(q_row) / zq, rel=1e-4)
        beta = sum(min(a / zp, b / zq) for a, b in zip(p_row, q_row))
        assert cols["beta"][t] == pytest.approx(min(1.0, beta), rel=1e-4)
    assert cols["bits"][3] == 0


@pytest.mark.slow
@pytest.mark.llamacpp
def test_run_backend_llamacpp_writes_a_readable_run(tmp_path, smol):
    from specterm.core.store import load_run
    from specterm.engines.corpora import Prompt
    from specterm.engines.oracle import run_oracle
    from specterm.engines.base import OracleConfig

    path, _ = smol
    prompts = [Prompt(id="p1", corpus="code", text=PROMPT), Prompt(id="p2", corpus="prose", text="The river was")]
    cfg = OracleConfig(target=str(path), draft=str(path), prompts=prompts, out=tmp_path / "run", max_new_tokens=12, backend="llama.cpp", threads=1,
                       measure_cost=True, cost_repeats=2, cost_gammas=(1, 2, 4))
    run_oracle(cfg)
    run = load_run(tmp_path / "run")
    assert run.meta["backend"]["name"] == "llama.cpp" and run.meta["backend"]["binding_version"]
    assert run.meta["generation"]["y_method"] == "llama.cpp serial greedy"
    assert {s.id for s in run.streams} == {"p1", "p2"}
    for s in run.streams:
        assert s.n == 12 or s.stop == "eos"
        assert (s.beta >= 0).all() and (s.beta <= 1).all()
        assert s.gate is not None and 0 <= s.gate_rate <= 1
    cost = run.meta["cost"]
    assert cost["engine"] == "llama.cpp" and set(cost["c_verify_s"]) == {"1", "2", "4"} and cost["threads"] == 1
    from specterm.core.decide.hardware import cost_curve

    assert cost_curve(cost) is not None  # the core's decision reads it unchanged
    # resume skips what is stored
    cfg.resume = True
    run_oracle(cfg)
    assert len(load_run(tmp_path / "run").streams) == 2


@pytest.mark.slow
@pytest.mark.llamacpp
def test_smollm2_self_draft_repaired_keeps_99_percent_with_alpha_one(tmp_path, smol):
    """SPEC 1.3 on SmolLM2 drafting for itself in llama.cpp, 3 prompts x 24 tokens: after the repair loop
    alpha is 1 on every kept position and at least 99% of the positions are kept (before the loop the
    first-failure cut kept 39 of 72, issue 35)."""
    from specterm.core.store import load_run
    from specterm.engines.corpora import load_builtin
    from specterm.engines.oracle import run_oracle
    from specterm.engines.base import OracleConfig

    path, _ = smol
    prompts = load_builtin(["code", "prose", "multilingual"], limit=1)
    cfg = OracleConfig(target=str(path), draft=str(path), prompts=prompts, out=tmp_path / "run", max_new_tokens=24, backend="llama.cpp", threads=1,
                       measure_cost=False)
    run_oracle(cfg)
    streams = load_run(tmp_path / "run").streams
    kept, n = sum(s.valid_len for s in streams), sum(s.n for s in streams)
    print(f"SmolLM2 self-draft, llama.cpp, repaired: {kept} of {n} positions kept, "
          f"repairs {[s.repairs for s in streams]}, gate {[round(s.gate_rate, 3) for s in streams]}")
    assert all(s.repairs is not None for s in streams)
    assert all(s.a.size and s.a.all() for s in streams)  # alpha = 1 on every kept position
    assert kept >= 0.99 * n


def _speculative_binary_dir():
    """llama-speculative-simple: $SPECTERM_LLAMA_BIN, else specterm's cache; skipped when neither has it
    (in CI confirm builds it into the cache on first use)."""
    from specterm.engines.llamacpp import binaries as B

    env = os.environ.get("SPECTERM_LLAMA_BIN")
    if env and B.find_binary(Path(env)) is not None:
        return Path(env)
    if B.find_binary(None) is not None or os.environ.get("CI"):
        return None
    pytest.skip("llama-speculative-simple not built: set SPECTERM_LLAMA_BIN to its directory")


@pytest.mark.slow
@pytest.mark.llamacpp
def test_confirm_llamacpp_times_1_4_8_and_gives_decision_checks_with_the_engine_block(tmp_path, smol, monkeypatch):
    """SmolLM2 self-draft in llama.cpp, end to end: `confirm --engine llama.cpp` times g = 1, 4, 8 and the
    run's decision g_hw, its predictions use the engine's block priced in the binary's own loop (c_verify(g) +
    g c_draft from its timed generations, by hand), and the report and crossstack show the decision-check rows."""
    from specterm.core.report.analysis import analyse
    from specterm.core.compare.crossstack import cross_stack
    from specterm.core.decide.hardware import cost_curve, decision_hw
    from specterm.core.store import load_run, load_runs
    from specterm.engines.corpora import Prompt
    from specterm.engines.base import ConfirmConfig
    from specterm.engines.confirm import confirm
    from specterm.engines.timing import COST_GAMMAS
    from specterm.engines.oracle import run_oracle
    from specterm.engines.base import OracleConfig

    bin_dir = _speculative_binary_dir()
    if bin_dir is None and not os.environ.get("SPECTERM_LLAMA_CMAKE_ARGS"):
        # confirm builds the binary on first use; in CI with the portable kernels the binding was built with
        # (README test line), not -march=native: a VM that advertises AMX kills a native build (SIGILL)
        monkeypatch.setenv("SPECTERM_LLAMA_CMAKE_ARGS", "-DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON")
    path, _ = smol
    prompts = [Prompt(id=f"p{i}", corpus="code", text=PROMPT + f"# case {i}\n") for i in range(3)]
    cfg = OracleConfig(target=str(path), draft=str(path), prompts=prompts, out=tmp_path / "run", max_new_tokens=24, backend="llama.cpp", threads=1,
                       measure_cost=True, cost_repeats=2, cost_gammas=(1, 2, 4, 8))
    run_oracle(cfg)
    run = load_run(tmp_path / "run")
    run_curve = cost_curve(run.meta["cost"])
    assert run_curve is not None and run_curve.c_draft_fwd is not None  # the engine term is stored with the costs
    corpus = [s for s in run.streams if s.valid_len]
    from specterm.core.streams.blockwalk import set_yield

    E_run = set_yield([s.a for s in corpus], run_curve.gammas)[0]
    g_decision = decision_hw(run_curve.gammas, E_run, None, run_curve).gamma_hw

    rec = confirm(ConfirmConfig(run=tmp_path / "run", engine="llama.cpp", per_corpus=1, max_new_tokens=20, threads=1,
                                cost_repeats=1, cost_gammas=(1, 2), decision_gammas=COST_GAMMAS, target=str(path),
                                draft=str(path), llama_bin=bin_dir, batch_costs=True))
    timed = {int(g) for g in rec["prompts"][0]["spec"]}
    assert {1, 4, 8, g_decision} <= timed and rec["choices"]["code"]["gamma_decision"] == g_decision
    assert rec["cost_context"] == rec["context_timed"] and rec["prompts"][0]["context"] == pytest.approx(
        rec["prompts"][0]["prompt_tokens"] + 20 / 2)
    # the session prices its blocks in the binary's own loop (engine_loop): c_verify(g) = the target's seconds
    # per block and c_draft = the speculator's seconds per drafted token, from its timed generations, by hand
    from specterm.core.decide.hardware.engine_loop import WHERE

    session = cost_curve(rec["cost"])
    assert session is not None and session.c_draft_fwd is None and session.forwards_where == WHERE
    assert sorted(session.gammas.tolist()) == sorted(timed)
    sp = rec["prompts"][0]["spec"]
    drafted = sum(x["draft_calls"] for x in sp.values())
    assert all(x["target_loop_s"] > 0 and x["draft_loop_s"] > 0 for x in sp.values())
    # and c_decode from its greedy generations, per token (what the realized speedup divides by)
    assert session.c_decode == pytest.approx(float(np.median([p["greedy_s"] / p["greedy_tokens"] for p in rec["prompts"]])))
    for r in rec["results"]:
        g = r["gamma"]
        x = sp[str(g)]
        assert session.verify_at(g) == pytest.approx(x["target_loop_s"] / x["target_calls"])
        assert session.c_draft == pytest.approx(float(np.median([y["draft_loop_s"] / y["draft_calls"] for y in sp.values()])))
        hand = r["E_prompts"] * session.c_decode / (session.verify_at(g) + g * session.c_draft)
        assert r["predicted"] == pytest.approx(hand) and "predicted_engine" not in r
        # self-draft accepts everything: llama.cpp's real decoder makes the walk's target calls
        assert r["tokens_per_call"] == pytest.approx(r["tokens_per_call_walk"])
    assert drafted > 0
    checks = {(c["corpus"], c["gamma"]): c for c in rec["decision_checks"]}
    assert set(checks) == {(r["corpus"], r["gamma"]) for r in rec["results"]}
    rep = analyse(load_runs([tmp_path / "run"]), boot=100, shuffles=0)
    rows = rep.sets["code"].decision_hw.confirmed
    assert {row.gamma for row in rows} == timed
    # --batch-costs: llama.cpp's costs by batch (contexts of n_seq_max = B) stored as the run's, with the
    # draft-simple forward by batch; the by-batch table scales the loop-priced block by the grid's ratios, by hand
    from specterm.core.decide.hardware.batch import batch_costs

    stored = load_run(tmp_path / "run").meta["batch_cost"]
    assert stored["engine"] == "llama.cpp" and any(k.startswith("draft_fwd:8:") for k in stored["samples_cpu_s"])
    bc = batch_costs(stored)
    assert bc is not None and bc.c_draft_fwd is not None
    d = rep.sets["code"].decision_hw
    assert [r["batch"] for r in d.by_batch] == [1, 2, 4, 8]
    # SPEC 6: each cost at batch B is the decision's (its profile's robust curve: confirm --batch-costs adds
    # a profile of this machine holding the grid) times the grid's ratio c(B) / c(1)
    from specterm.core.decide.hardware.profiles import run_profiles

    (shown,) = [p for p in run_profiles(load_run(tmp_path / "run").meta) if p.id == d.profile]
    assert shown.batch_cost == stored
    curve = cost_curve(shown.cost)
    for i, r in enumerate(d.by_batch):
        g = r["gamma_hw"]
        j = g - 1
        # the profile holds the session's costs, priced in the binary's loop: no separate draft forward, so the
        # grid's draft_fwd ratios do not enter (decision._set_batch)
        assert curve.c_draft_fwd is None
        hand = (rep.sets["code"].curve.at("E_true", g) * curve.c_decode * bc.c_decode[i] / bc.c_decode[0]
                / (curve.verify_at(g) * bc.c_verify[i, j] / bc.c_verify[0, j] + g * curve.c_draft * bc.c_draft[i] / bc.c_draft[0]))
        assert r["speedup_hw"]["value"] == pytest.approx(hand)
    for row in rows:
        assert row.decision_predicted is not None and row.decision_predicted.value is not None
        assert row.timed_context == pytest.approx(rec["prompts"][0]["context"])
    cs = cross_stack(run, load_run(tmp_path / "run"), gammas=(1, 4, 8))
    for g in ("1", "4", "8"):
        assert cs["corpora"]["code"]["by_gamma"][g]["real_tokens_per_call"] is not None
    assert cs["corpora"]["code"]["decision_b"]["confirmed"]
