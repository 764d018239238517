"""The oracle on a tiny random Llama: exact a_t, gate, greedy y, resume, and clear errors."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest
import torch

from specterm.engines.corpora import Prompt, load_builtin
from specterm.core.errors import SpectermError
from specterm.engines.base import OracleConfig
from specterm.engines.torch import TorchPair
from specterm.engines.torch.oracle_torch import load_pair
from specterm.engines.oracle import run_oracle
from specterm.engines.progress import Cancelled
from specterm.core.decide.hardware import cost_curve
from specterm.core.store import load_run

N_NEW = 24


def _prompts(k=5):
    return load_builtin(["code", "json"], limit=3)[:k]


def _config(model_dir, out, **kw):
    base = dict(target=str(model_dir), draft="layers:2", prompts=_prompts(), out=out, max_new_tokens=N_NEW,
                batch_size=2, measure_cost=False, spec_gamma=5)
    base.update(kw)
    return OracleConfig(**base)


@pytest.fixture(scope="module")
def tiny_pair(tiny_model_dir):
    return load_pair(_config(tiny_model_dir, Path("/nonexistent")))


@pytest.fixture(scope="module")
def tiny_run(tiny_model_dir, tiny_pair, tmp_path_factory):
    out = tmp_path_factory.mktemp("runs") / "tiny"
    run_oracle(_config(tiny_model_dir, out), pair=TorchPair(tiny_pair))
    return load_run(out)


def _argmax_full(model, ids: list[int]) -> int:
    """Independent check: no cache, no batching, the whole prefix in one forward."""
    return int(torch.argmax(model(input_ids=torch.tensor([ids])).logits[0, -1]))


def test_gate_holds_and_a_t_matches_independent_check(tiny_run, tiny_pair):
    assert len(tiny_run.streams) == 5
    for s in tiny_run.streams:
        assert s.gate_rate == 1.0
        p = tiny_pair.tokenizer(s.prompt).input_ids
        y = s.y.tolist()
        expect = [int(_argmax_full(tiny_pair.draft, p + y[:t]) == y[t]) for t in range(len(y))]
        assert s.bits.tolist() == expect
        assert all(_argmax_full(tiny_pair.target, p + y[:t]) == y[t] for t in range(len(y)))


def test_y_equals_hf_greedy_generate(tiny_run, tiny_pair):
    from transformers import GenerationConfig

    eos = sorted(tiny_pair.eos)
    for s in tiny_run.streams:
        ids = torch.tensor([tiny_pair.tokenizer(s.prompt).input_ids])
        gen = GenerationConfig(do_sample=False, max_new_tokens=N_NEW, eos_token_id=eos, pad_token_id=eos[0])
        out = tiny_pair.target.generate(ids, generation_config=gen)[0, ids.shape[1]:].tolist()
        assert out == s.y.tolist()
        assert s.stop == ("eos" if out[-1] in tiny_pair.eos else "length")


def test_plain_greedy_and_batch_size_give_the_same_streams(tiny_model_dir, tiny_pair, tiny_run, tmp_path):
    run_oracle(_config(tiny_model_dir, tmp_path / "plain", spec_gamma=0, batch_size=3), pair=TorchPair(tiny_pair))
    plain = load_run(tmp_path / "plain")
    for a, b in zip(tiny_run.streams, plain.streams):
        assert a.id == b.id
        assert a.y.tolist() == b.y.tolist()
        assert a.bits.tolist() == b.bits.tolist()
        np.testing.assert_allclose(a.beta, b.beta, atol=1e-4)
        np.testing.assert_allclose(a.draft_conf, b.draft_conf, atol=1e-4)


def test_beta_and_confidences_are_probabilities(tiny_run):
    for s in tiny_run.streams:
        assert np.all((s.beta > 0) & (s.beta <= 1 + 1e-5))
        assert np.all((s.draft_conf > 0) & (s.draft_conf <= 1 + 1e-5))
        # beta = 1 - TV <= 1, and a token both models rank first carries at least min(p, q) of it
        both = (s.bits == 1) & (s.gate == 1)
        assert np.all(s.beta[both] >= np.minimum(s.draft_conf, s.target_conf)[both] - 1e-5)


def test_interrupted_run_resumes_to_the_same_result(tiny_model_dir, tiny_pair, tiny_run, tmp_path):
    out = tmp_path / "resumed"
    cancel = threading.Event()

    def on_progress(p):
        if p.phase == "saved" and p.prompts_done == 2:
            cancel.set()

    with pytest.raises(Cancelled):
        run_oracle(_config(tiny_model_dir, out, batch_size=1), on_progress, cancel, pair=TorchPair(tiny_pair))
    assert [s.id for s in load_run(out).streams] == [s.id for s in tiny_run.streams[:2]]
    # a torn final line from a crash mid-write is dropped, never half-read
    with open(out / "prompts.jsonl", "a") as fh:
        fh.write('{"id": "torn", "corp')
    assert len(load_run(out).streams) == 2
    with pytest.raises(SpectermError, match="--resume"):
        run_oracle(_config(tiny_model_dir, out, batch_size=1), pair=TorchPair(tiny_pair))
    run_oracle(_config(tiny_model_dir, out, batch_size=1, resume=True), pair=TorchPair(tiny_pair))
    resumed = load_run(out)
    assert [s.id for s in resumed.streams] == [s.id for s in tiny_run.streams]
    for a, b in zip(resumed.streams, tiny_run.streams):
        assert a.bits.tolist() == b.bits.tolist() and a.y.tolist() == b.y.tolist()
    # resuming a complete run adds nothing
    run_oracle(_config(tiny_model_dir, out, batch_size=1, resume=True), pair=TorchPair(tiny_pair))
    assert len(load_run(out).streams) == 5


def test_cost_ratio_is_stored(tiny_model_dir, tiny_pair, tmp_path):
    out = tmp_path / "cost"
    seen = []
    run_oracle(_config(tiny_model_dir, out, prompts=_prompts(1), measure_cost=True, cost_repeats=3, cost_gammas=(1, 4, 8)),
               on_progress=lambda p: seen.append(p.message) if p.phase == "cost" else None, pair=TorchPair(tiny_pair))
    cost = load_run(out).meta["cost"]
    assert cost["r_measured"] == cost["r_by_gamma"]["4"] > 0
    assert cost["r_by_gamma"]["4"] == pytest.approx(cost["c_draft_s"] / cost["c_verify_s"]["4"])
    assert sorted(cost["c_verify_s"]) == ["1", "4", "8"] and cost["c_decode_s"] > 0
    # medians of the stored samples (3 repeats per quantity), spreads beside them
    assert all(len(v) == 3 for v in cost["samples_s"].values())
    assert cost["c_verify_s"]["8"] == pytest.approx(float(np.median(cost["samples_s"]["verify:8"])))
    assert cost["c_verify_iqr_s"]["8"] >= 0
    # the stored robust curve is the documented fit of the stored samples (a violation beyond noise
    # may survive by design, so monotonicity is not asserted: under load a tiny model's timings break it)
    curve = cost_curve(cost)
    assert curve is not None
    assert cost["c_decode_robust_s"] == pytest.approx(curve.c_decode)
    assert [cost["c_verify_robust_s"][str(int(g))] for g in curve.gammas] == pytest.approx(curve.c_verify.tolist())
    # one progress line per timed forward (decode, draft, draft2, 3 verifies; 3 rounds) and per warm-up
    # forward (light: of each kind the narrowest and widest, so verify:4 is not warmed: 5 forwards);
    # the announced total is what was done
    lines = [m for m in seen if m.startswith("cost ")]
    assert len(lines) == 5 + 6 * 3 and lines[-1].startswith(f"cost {len(lines)}/{len(lines)}:")
    assert sum("(warm-up)" in m for m in lines) == 5 and not any("verify:4 (warm-up)" in m for m in lines)
    assert cost["decision_clock"] == ("cpu" if torch.get_num_threads() == 1 else "wall")


def test_missing_model_path_fails_with_one_sentence(tmp_path):
    with pytest.raises(SpectermError, match="does not exist"):
        load_pair(_config(tmp_path / "nope.gguf", tmp_path / "o"))
    with pytest.raises(SpectermError, match="does not exist"):
        load_pair(_config("./no/such/dir", tmp_path / "o"))


def test_unreadable_gguf_fails_with_one_sentence(tmp_path):
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"not a gguf at all")
    with pytest.raises(SpectermError, match="not a readable GGUF"):
        load_pair(_config(bad, tmp_path / "o"))
    truncated = tmp_path / "trunc.gguf"
    truncated.write_bytes(b"GGUF" + b"\x03\x00\x00\x00" + b"\xff" * 20)
    with pytest.raises(SpectermError, match="GGUF"):
        load_pair(_config(truncated, tmp_path / "o"))


def test_mismatched_tokenizers_fail_before_model_work(tiny_model_dir, tmp_path):
    from tiny_models import make_tiny_model_dir

    other = make_tiny_model_dir(tmp_path / "other", vocab_size=300)
    with pytest.raises(SpectermError, match="tokenizers differ"):
        load_pair(_config(tiny_model_dir, tmp_path / "o", draft=str(other)))


def test_layer_skip_draft_shares_weights(tiny_pair):
    t, d = tiny_pair.target, tiny_pair.draft
    assert d.config.num_hidden_layers == 2 and t.config.num_hidden_layers == 4
    assert d.get_decoder().layers[0] is t.get_decoder().layers[0]
    assert d.get_output_embeddings() is t.get_output_embeddings()


def test_prompt_list_from_file_and_limit(tmp_path):
    from specterm.runner import load_prompts

    f = tmp_path / "mine.txt"
    f.write_text("first prompt\n\nsecond prompt\nthird\n")
    ps = load_prompts(None, f, None, 2)
    assert [p.text for p in ps] == ["first prompt", "second prompt"]
    assert all(isinstance(p, Prompt) for p in ps)


def test_running_alpha_counts_only_gate_valid_positions():
    """The progress line's running alpha is SPEC 2's alpha (accepted / gate-valid positions, as the report
    counts it), not accepted / every position: after a gate failure the old count fell far too low."""
    from specterm.core.store import Stream
    from specterm.engines.progress import Tally

    got = []
    tally = Tally(report=got.append, n_todo=2, max_new_tokens=10)
    bits = np.array([1, 1, 0, 1, 1, 1, 1, 1, 1, 1], dtype=np.uint8)
    gate = np.array([1, 1, 1, 1, 0, 1, 1, 1, 1, 1], dtype=np.uint8)  # gate fails at 4: positions 0..3 are analysed
    tally.saved(Stream(id="a", corpus="c", bits=bits, gate=gate))
    tally.saved(Stream(id="b", corpus="c", bits=np.array([1, 0], dtype=np.uint8), gate=np.ones(2, dtype=np.uint8)))
    tally.emit("generating")
    # accepted among valid positions: 3 of 4, then 1 of 2 -> 4 / 6; gate rate over every position: 11 / 12
    assert got[-1].running_alpha == pytest.approx(4 / 6)
    assert got[-1].gate_rate == pytest.approx(11 / 12)


def test_batch_grid_in_slices_times_the_same_schedule_as_in_one_go(tiny_pair):
    """The grid a confirmation times between its prompts: slices of any size give the schedule of one
    go (warm-up of draft:B and target:B:1 first, then 2 rounds with the second rotated by half), every
    (B, m) gets exactly 2 timed samples, and an unfinished grid cannot be stored."""
    from specterm.engines.timing import GridSchedule
    from specterm.engines.torch.costs_torch import BatchGrid

    labels = [f"q{i}" for i in range(5)] + ["draft:2", "target:2:1"]
    order_one, order_sliced = [], []
    one = GridSchedule([(q,) for q in labels], lambda q: (order_one.append(q[0]) or 1.0, 0.5), 2, None, None, None)
    one.run_all()
    sliced = GridSchedule([(q,) for q in labels], lambda q: (order_sliced.append(q[0]) or 1.0, 0.5), 2, None, None, None)
    for k in (3, 0, 1, 7, 100):
        sliced.step(k)
    assert order_sliced == order_one and sliced.complete and sliced.total == 2 + 2 * 7
    # warm-up, then round 1 in list order, then round 2 starting at item 7 // 2 = 3
    assert order_one == ["draft:2", "target:2:1", *labels, *labels[3:], *labels[:3]]
    assert all(v == [1.0, 1.0] for v in sliced.samples()[0].values())

    target, draft = tiny_pair.target, tiny_pair.draft
    grid = BatchGrid(target, draft, list(range(5, 29)), batches=(2, 4), fit_m=(1, 2, 3), repeats=2)
    assert grid.total == 4 + 2 * (2 + 6)  # warm-up: draft:B and target:B:1 for B = 2, 4
    grid.step(5)
    with pytest.raises(ValueError, match="not complete"):
        grid.record()
    while not grid.complete:
        grid.step(3)
    rec = grid.record()
    assert sorted(rec["samples_s"]) == sorted(["draft:2", "draft:4"] + [f"target:{B}:{m}" for B in (2, 4) for m in (1, 2, 3)])
    assert all(len(v) == 2 and min(v) > 0 for v in rec["samples_s"].values())
    assert rec["wall_s"] >= sum(sum(v) for v in rec["samples_s"].values())


def _write_gguf(path: Path, words: list[str], weight: np.ndarray) -> None:
    import gguf

    w = gguf.GGUFWriter(str(path), "llama")
    w.add_block_count(2)
    w.add_array("tokenizer.ggml.tokens", words)
    w.add_tensor("token_embd.weight", weight)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def _fields(reader) -> dict:
    return {name: [bytes(p).hex() for p in f.parts] for name, f in reader.fields.items()}


def test_gguf_parsed_once_shares_one_parse_per_file_and_restores_gguf(tmp_path):
    """Inside models.gguf_parsed_once, GGUFReader(path) is one parse per (file, size, mtime), with the
    same fields and tensors as a fresh reader; a rewritten file is parsed again; name maps are built
    once per (arch, n_blocks); after the block (also after an error, and after a nested block) gguf's
    own names are back."""
    import gguf

    from specterm.engines.torch import models_torch as M

    path = tmp_path / "m.gguf"
    _write_gguf(path, ["a", "bb", "ccc"], np.arange(6, dtype=np.float32).reshape(2, 3))
    fresh = gguf.GGUFReader(str(path))
    reader_cls, name_map = gguf.GGUFReader, gguf.get_tensor_name_map
    with M.gguf_parsed_once():
        first = gguf.GGUFReader(str(path))
        assert gguf.GGUFReader(path) is first  # a Path or a str: one file
        assert _fields(first) == _fields(fresh)
        assert [t.name for t in first.tensors] == ["token_embd.weight"]
        assert np.array_equal(first.tensors[0].data, fresh.tensors[0].data)
        with M.gguf_parsed_once():  # nested: same memo, and the inner exit restores nothing
            assert gguf.GGUFReader(str(path)) is first
        assert gguf.GGUFReader(str(path)) is first
        _write_gguf(path, ["a", "bb", "ccc", "dddd"], np.ones((2, 3), dtype=np.float32))
        again = gguf.GGUFReader(str(path))
        assert again is not first and len(again.fields["tokenizer.ggml.tokens"].data) == 4
        names = gguf.get_tensor_name_map(gguf.MODEL_ARCH.LLAMA, 2)
        assert gguf.get_tensor_name_map(gguf.MODEL_ARCH.LLAMA, 2) is names
        assert gguf.get_tensor_name_map(gguf.MODEL_ARCH.LLAMA, 3) is not names
        assert names.mapping == name_map(gguf.MODEL_ARCH.LLAMA, 2).mapping
    assert (gguf.GGUFReader, gguf.get_tensor_name_map) == (reader_cls, name_map)
    assert gguf.GGUFReader(str(path)) is not again
    with pytest.raises(RuntimeError), M.gguf_parsed_once():
        raise RuntimeError("a load that fails")
    assert (gguf.GGUFReader, gguf.get_tensor_name_map) == (reader_cls, name_map)
