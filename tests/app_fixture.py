"""A small, fully known run for the TUI tests: two corpora, a few streams with tokens, confidences,
beta, and one stream whose gate fails part way. Everything here is fixed (no clock, no hardware),
so snapshots are stable."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from conftest import markov_bits
from specterm.core.store import FORMAT, SCHEMA_VERSION, Stream, new_meta, write_run

VOCAB = [" the", " cat", " sat", " on", " mat", ".", "\n", " def", " f", "(x", "):", " return", " x", " +", " 1",
         " a", " dog", " ran", ",", " and"]
GATE_FAIL_AT = 30


def make_stream(sid: str, corpus: str, n: int, seed: int, gate_fail: int | None = None) -> Stream:
    rng = np.random.default_rng(seed)
    bits = markov_bits(rng, n, 0.85, 0.35, first=1)
    y = rng.integers(0, len(VOCAB), n).astype(np.int32)
    pieces = [VOCAB[i] for i in y]
    draft = np.where(bits == 1, y, (y + 1) % len(VOCAB)).astype(np.int32)
    gate = np.ones(n, dtype=np.uint8)
    if gate_fail is not None:
        gate[gate_fail] = 0
    return Stream(
        id=sid,
        corpus=corpus,
        bits=bits,
        prompt=f"prompt {sid}",
        gate=gate,
        y=y,
        draft_argmax=draft,
        draft_conf=np.where(bits == 1, 0.875, 0.375).astype(np.float32),
        target_conf=np.full(n, 0.9375, dtype=np.float32),
        beta=np.where(bits == 1, 0.75, 0.25).astype(np.float32),
        text="".join(pieces),
        piece_ends=np.cumsum([len(p) for p in pieces]).astype(np.int32),
        stop="length",
    )


def fixture_streams() -> list[Stream]:
    return [
        make_stream("p0", "prose", 64, 1),
        make_stream("p1", "prose", 48, 2),
        make_stream("p2", "prose", 56, 3, gate_fail=GATE_FAIL_AT),
        make_stream("c0", "code", 60, 4),
        make_stream("c1", "code", 40, 5),
        make_stream("c2", "code", 52, 6),
    ]


def judged_streams() -> list[Stream]:
    """fixture_streams plus more of each corpus, params.MIN_PROMPTS per corpus: enough prompts for a verdict
    to be judged (below it every verdict reads "too few prompts", tests/test_evidence_limits.py)."""
    from specterm.core.params import MIN_PROMPTS

    base = fixture_streams()
    more = [make_stream(f"{c[0]}x{i}", c, 48 + 4 * (i % 5), 100 + i) for c in ("prose", "code")
            for i in range(MIN_PROMPTS - sum(s.corpus == c for s in base))]
    return base + more


META = {
    "format": FORMAT,
    "schema_version": SCHEMA_VERSION,
    "specterm_version": "0.1.0",
    "name": "tiny-run",
    "created": "2025-01-01T00:00:00+00:00",
    "target": {"spec": "tiny/target"},
    "draft": {"spec": "layers:1"},
    "device": "cpu",
    "dtype": "float32",
    "cost": {"r_measured": 0.15},
}


def make_fixture_run(root: Path, name: str = "tiny-run") -> Path:
    return write_run(Path(root) / name, {**META, "name": name}, fixture_streams())


class FakeOracle:
    """Stands in for `oracle.run_oracle(config, on_progress, cancel)`: appends the fixture streams to
    config.out one by one with RunWriter, reporting progress as the real oracle does. With
    `block_after=k` it stops after k saved prompts and waits for the cancel event (then raises
    Cancelled, like the real one), so a test can cancel at a known point."""

    def __init__(self, streams: list[Stream] | None = None, block_after: int | None = None):
        import threading

        self.streams = streams if streams is not None else fixture_streams()
        self.block_after = block_after
        self.blocked = threading.Event()

    def __call__(self, config, on_progress, cancel):
        from specterm.engines.progress import Progress, check_cancel
        from specterm.core.store import RunWriter, bits_to_str

        writer = RunWriter(config.out, {**META, "name": Path(config.out).name})
        n = len(self.streams)
        ones = total = 0
        for i, s in enumerate(self.streams):
            if self.block_after is not None and i == self.block_after:
                half = s.n // 2
                on_progress(Progress("generating", n_prompts=n, prompts_done=i, prompt_index=i, prompt_id=s.id,
                                     corpus=s.corpus, tokens=half, max_new_tokens=64, tokens_per_s=123.4,
                                     running_alpha=ones / total if total else None, gate_rate=1.0,
                                     bits=bits_to_str(s.bits[:half]) + "?", elapsed_s=12.0, eta_s=30.0))
                self.blocked.set()
                cancel.wait(timeout=30)
            check_cancel(cancel)
            writer.append(s)
            ones += int(s.a.sum())
            total += s.n
            on_progress(Progress("saved", f"saved {s.id}", n_prompts=n, prompts_done=i + 1, prompt_index=i,
                                 prompt_id=s.id, corpus=s.corpus, tokens=s.n, max_new_tokens=64, tokens_per_s=123.4,
                                 running_alpha=ones / total, gate_rate=1.0, bits=bits_to_str(s.bits),
                                 elapsed_s=2.0 * (i + 1), eta_s=2.0 * (n - i - 1)))
        on_progress(Progress("done", f"{n} prompt(s) saved in {config.out}", n_prompts=n, prompts_done=n))
        return Path(config.out)


def oracle_config(out: Path):
    """A real OracleConfig (no prompts needed by FakeOracle)."""
    from specterm.engines.base import OracleConfig

    return OracleConfig(target="tiny/target", draft="layers:1", prompts=[], out=Path(out))


# Drafter runs (SPEC 2b) of the fixture's target: see tests/test_tui_drafters.py for the hand values.
COST = {"c_decode_s": 1.0, "c_draft_s": 0.01, "c_verify_s": {"1": 1.2, "2": 1.5}, "c_draft_per": "block",
        "samples_s": {"decode": [1.0] * 5, "draft": [0.01] * 5, "verify:1": [1.2] * 5, "verify:2": [1.5] * 5}}
S_A = 5 / (1.5 + 1.5 + 0.02)
S_B = 5 / (1.2 + 1 + 1 + 1.2 + 1 + 0.05)


def make_drafter_run(root: Path, name: str, spec: str, runs: list[int], first: list[int] | None = None,
                     **meta_extra: object) -> Path:
    """A prompt-lookup run of MIN_PROMPTS prompts per corpus (code, prose), every stream L_s = `runs` (the very
    first, code-0, `first` when given), m_s = [2, 0, 0, 3, 0], costs COST; `meta_extra` goes into run.json."""
    from specterm.core.params import MIN_PROMPTS

    draft = {"kind": "prompt-lookup", "spec": spec, "max_matching_ngram_size": int(spec.split(":")[1]),
             "max_tokens": 32, "eos_token_ids": [2], "source": "test"}
    meta = new_meta(name, target=dict(META["target"]), draft=draft, cost=dict(COST),
                    generation={"max_new_tokens": 5, "y_method": "batched greedy"}, **meta_extra)
    streams = [Stream(id=f"{c}-{i}", corpus=c, bits=np.zeros(0, dtype=np.uint8), prompt=f"p{i}",
                      gate=np.ones(5, dtype=np.uint8), y=np.arange(5, dtype=np.int32), stop="length",
                      runs=np.array(first if first is not None and (c, i) == ("code", 0) else runs, dtype=np.int32),
                      proposed=np.array([2, 0, 0, 3, 0], dtype=np.int32))
               for c in ("code", "prose") for i in range(MIN_PROMPTS)]
    return write_run(root / name, meta, streams)


def make_drafter_runs(root: Path) -> list[Path]:
    """Two prompt-lookup runs of the fixture's target, decisions known by hand (tests/test_tui_drafters.py)."""
    return [make_drafter_run(root, "lookup-a", "prompt-lookup:2", [2, 0, 0, 1, 0]),
            make_drafter_run(root, "lookup-b", "prompt-lookup:3", [0, 0, 0, 0, 0])]
