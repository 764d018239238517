"""The llama.cpp oracle's repair loop end to end on a toy engine behind GGUFModel's interface (no model
file, no binding): a new run repairs by default, and `--resume` repairs an existing run's streams in
place (records rewritten atomically with checksums, a `sessions` entry, Ctrl-C keeping finished
streams, streams already repaired skipped).

The toy (test_repair.py's rules): a decode of more than one token is batched and flips the near-ties;
1-token decodes are serial. The expected y is test_repair.teacher_greedy, a hand loop over the rules.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest
from test_repair import EOS, V, batched_choice, serial_next, serial_y, teacher_greedy

from specterm.engines.progress import Cancelled
from specterm.core.store import load_run, write_run
from specterm.engines.corpora import Prompt
from specterm.engines.llamacpp import LlamaPair
from specterm.engines.llamacpp.oracle_llamacpp import stream_columns, teacher_force_logits
from specterm.engines.oracle import run_oracle
from specterm.engines.base import OracleConfig

NEAR = {4 + 3: "next", 4 + 9: "next"}  # near-ties at t = 3 and 9 for 4-token prompts
PROMPTS = [Prompt(id="a", corpus="code", text="abcd"), Prompt(id="b", corpus="prose", text="wxyz")]
MAX_NEW = 14


class ToyLM:
    """GGUFModel's decode interface over the toy target (or a draft that disagrees at every 4th context)."""

    def __init__(self, near: dict[int, str], draft: bool = False):
        self.near, self.draft, self.seq = near, draft, []
        self.n_vocab, self.llm = V, self
        self.decodes = 0

    def tokenize(self, text: str) -> list[int]:
        return [ord(c) % 7 for c in text]

    def detokenize(self, ids, special=True) -> bytes:
        return bytes(97 + int(i) for i in ids)

    def clear(self, keep: int = 0) -> None:
        del self.seq[keep:]

    def decode(self, tokens, n_past, rows=None) -> np.ndarray:
        assert n_past == len(self.seq)
        self.decodes += 1
        self.seq += [int(t) for t in tokens]
        want = [len(tokens) - 1] if rows is None else sorted(rows)
        out = np.full((len(want), V), -5.0, dtype=np.float32)
        for k, r in enumerate(want):
            ctx = self.seq[: n_past + r + 1]
            nxt = int(tokens[r + 1]) if r + 1 < len(tokens) else None
            tok = batched_choice(ctx, self.near, nxt) if len(tokens) > 1 else serial_next(ctx)
            if self.draft and len(ctx) % 4 == 0:
                tok = (tok + 2) % 7
            out[k, tok] = 2.0
            out[k, (tok + 1) % V] = 2.0 - 1e-3  # the runner-up: a near-tie
        return out


def toy_pair(near=NEAR) -> LlamaPair:
    model = {"source": "gguf", "spec": "toy/model.gguf", "sha256": "0" * 64, "class": "llama.cpp"}
    return LlamaPair.of_models(ToyLM(near), ToyLM(near, draft=True), {EOS},
                     {"target": model, "draft": {**model, "sha256": "1" * 64}, "tokenizer_vocab": V, "device": "cpu",
                      "dtype": "gguf", "backend": {"name": "llama.cpp"}})


def config(out, resume=False) -> OracleConfig:
    return OracleConfig(target="toy.gguf", draft="toy.gguf", prompts=PROMPTS, out=out, max_new_tokens=MAX_NEW,
                        resume=resume, measure_cost=False, backend="llama.cpp")


def expected_bits(prompt, y):
    """a_t of the toy draft by hand: its argmax after prompt + y[:t] (batched rows) against y_t."""
    out = []
    for t in range(len(y)):
        ctx = prompt + y[:t]
        tok = batched_choice(ctx, NEAR, y[t])
        if len(ctx) % 4 == 0:
            tok = (tok + 2) % 7
        out.append(int(tok == y[t]))
    return out


def test_a_new_llamacpp_run_repairs_by_default(tmp_path):
    run_oracle(config(tmp_path / "run"), pair=toy_pair())
    run = load_run(tmp_path / "run")
    assert run.meta["generation"]["repair"]["bound"] == 16
    for s, p in zip(run.streams, PROMPTS):
        ids = [ord(c) % 7 for c in p.text]
        assert s.repairs == [3, 9] and s.gate.all() and s.valid_len == s.n == MAX_NEW
        assert s.y.tolist() == teacher_greedy(NEAR, MAX_NEW, ids)
        assert s.bits.tolist() == expected_bits(ids, s.y.tolist())
        assert s.pieces == [chr(97 + int(t)) for t in s.y]


def _old_run(tmp_path):
    """A run as the backend wrote it before the repair loop: serial y, no `repairs`, no generation.repair."""
    new = tmp_path / "new"
    run_oracle(config(new), pair=toy_pair())
    meta = dict(load_run(new).meta)
    meta["generation"] = {k: v for k, v in meta["generation"].items() if k != "repair"}
    pair = toy_pair()
    streams = []
    for s, p in zip(load_run(new).streams, PROMPTS):
        ids = pair.target.tokenize(p.text)
        y = serial_y([], MAX_NEW, ids)
        cols = stream_columns(teacher_force_logits(pair.target, ids, y), teacher_force_logits(pair.draft, ids, y),
                              np.asarray(y))
        s2 = type(s)(id=s.id, corpus=s.corpus, prompt=s.prompt, y=np.asarray(y, dtype=np.int32), text="", stop="length",
                     piece_ends=np.zeros(len(y), dtype=np.int32), **cols)
        assert s2.repairs is None and s2.valid_len == 3  # the prefix rule cuts at the first flip
        streams.append(s2)
    return write_run(tmp_path / "old", meta, streams)


def test_resume_repairs_an_existing_run_in_place(tmp_path):
    old = _old_run(tmp_path)
    pair = toy_pair()
    run_oracle(config(old, resume=True), pair=pair)
    run = load_run(old)  # checksums verified on load
    assert len(run.streams) == 2 and run.meta["generation"]["repair"]["bound"] == 16
    for s, p in zip(run.streams, PROMPTS):
        ids = pair.target.tokenize(p.text)
        assert s.repairs == [3, 9] and s.gate.all() and s.y.tolist() == teacher_greedy(NEAR, MAX_NEW, ids)
        assert s.y[:3].tolist() == serial_y([], MAX_NEW, ids)[:3]  # the prefix before the first failure kept
        assert s.text == "".join(chr(97 + int(t)) for t in s.y)
    done = run.meta["sessions"][-1]["repaired_in_place"]
    assert done["streams"] == 2 and done["changed"] == 2 and done["repairs"] == 4 and done["excluded"] == 0
    assert done["machine"]["cores"] is not None and "cpu" in done["machine"]
    # a second --resume finds nothing to repair and leaves every record as it is
    before = (old / "prompts.jsonl").read_bytes()
    pair2 = toy_pair()
    run_oracle(config(old, resume=True), pair=pair2)
    assert (old / "prompts.jsonl").read_bytes() == before and pair2.target.decodes == 0
    assert "repaired_in_place" not in load_run(old).meta["sessions"][-1]


def test_a_stream_whose_gate_holds_gets_no_repairs(tmp_path):
    old = _old_run(tmp_path)
    pair = toy_pair(near={})  # this machine's batched rows agree with the serial decode
    run_oracle(config(old, resume=True), pair=pair)
    for s in load_run(old).streams:
        assert s.repairs == [] and s.gate.all() and s.valid_len == s.n


def test_ctrl_c_keeps_the_streams_repaired_before_it(tmp_path):
    old = _old_run(tmp_path)
    cancel = threading.Event()

    def on_progress(p):
        if p.message.startswith("repairing stored prompt 2/2"):
            cancel.set()

    with pytest.raises(Cancelled):
        run_oracle(config(old, resume=True), on_progress, cancel=cancel, pair=toy_pair())
    first, second = load_run(old).streams
    assert first.repairs == [3, 9] and second.repairs is None and second.valid_len == 3
    run_oracle(config(old, resume=True), pair=toy_pair())  # the next --resume repairs the rest
    assert [s.repairs for s in load_run(old).streams] == [[3, 9], [3, 9]]


def test_torch_float32_on_the_cpu_never_repairs(tiny_model_dir, tmp_path):
    """The torch oracle in float32 on the CPU writes no repair information: its gate failures keep SPEC 1's
    prefix rule (other dtypes and devices repair: test_repair_torch.py)."""
    from specterm.engines.oracle import run_oracle

    cfg = OracleConfig(target=str(tiny_model_dir), draft=str(tiny_model_dir), prompts=PROMPTS, out=tmp_path / "t",
                       max_new_tokens=6, measure_cost=False, device="cpu", dtype="float32")
    run_oracle(cfg)
    run = load_run(tmp_path / "t")
    assert "repair" not in run.meta["generation"]
    assert all(s.repairs is None for s in run.streams)
    assert b'"repairs"' not in (tmp_path / "t" / "prompts.jsonl").read_bytes()


def test_resume_says_what_reopening_the_run_swept(tmp_path, monkeypatch):
    # a killed writer's temp file in the run folder: --resume removes it and says so in one warning
    from specterm.core.store import atomic

    old = _old_run(tmp_path)
    (old / ".prompts.jsonl.0123456789ab.tmp").write_text("half a record")
    monkeypatch.setattr(atomic, "SWEEP_MIN_AGE_S", 0.0)
    seen = []
    run_oracle(config(old, resume=True), seen.append, pair=toy_pair())
    warnings = [p.message for p in seen if p.phase == "warning"]
    assert len(warnings) == 1 and "removed 1 leftover(s) of interrupted writes" in warnings[0]
    assert not (old / ".prompts.jsonl.0123456789ab.tmp").exists()
