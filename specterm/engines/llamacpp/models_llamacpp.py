"""GGUF models in llama.cpp (through llama-cpp-python): loading, the tokenizer check, decoding
with chosen logit rows, and what run.json records about the engine.

Decoding goes through the binding's batch and context wrappers (`Llama._batch`, `Llama._ctx`)
instead of `Llama.eval`, so a forward computes logits only for the rows asked for (as llama.cpp's
own decoders do: one row per generated token, every row of a verification) and nothing is copied
beyond those rows.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from specterm.core.errors import SpectermError
from specterm.engines.llamacpp.binding import require_binding

PROMPT_ENCODING = "llama.cpp tokenize(text, add_special=True, parse_special=True), no chat template"
REBUILD_HINT = ("reinstall the binding without those instructions, e.g. CMAKE_ARGS=\"-DGGML_NATIVE=OFF -DGGML_AVX2=ON "
                "-DGGML_AVX512=ON -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF\" pip install --force-reinstall --no-cache-dir "
                "llama-cpp-python==0.3.36")
ILLEGAL_INSTRUCTION = ("llama.cpp stopped with an illegal instruction on a first test decode of {name}: its build uses CPU "
                       "instructions this machine advertises but refuses (AMX inside a VM does this); " + REBUILD_HINT + ".")
_PROBE = ("import sys, llama_cpp; m = llama_cpp.Llama(model_path=sys.argv[1], n_ctx=64, n_batch=64, n_threads=1, "
          "verbose=False); m.eval(m.tokenize(b'def f(x):\\n    return x + 1\\n'))")
_PROBED: set[str] = set()


@dataclass
class GGUFModel:
    """One loaded GGUF model: the binding's Llama object and what it was loaded with."""

    path: Path
    llm: Any
    n_ctx: int
    threads: int

    @property
    def n_vocab(self) -> int:
        return int(self.llm.n_vocab())

    def layers(self) -> int | None:
        meta = getattr(self.llm, "metadata", {}) or {}
        arch = meta.get("general.architecture")
        value = meta.get(f"{arch}.block_count") if arch else None
        return int(value) if value is not None else None

    def tokenize(self, text: str) -> list[int]:
        """What llama.cpp's examples do with a prompt: common_tokenize(text, add_special, parse_special)."""
        return list(self.llm.tokenize(text.encode("utf-8"), add_bos=True, special=True))

    def clear(self, keep: int = 0) -> None:
        """Drop cached positions from `keep` on."""
        self.llm._ctx.kv_cache_seq_rm(-1, keep, -1)

    def decode(self, tokens: Sequence[int], n_past: int, rows: Sequence[int] | None = None) -> np.ndarray:
        """Feed `tokens` at positions n_past.. (the cache must hold exactly n_past positions) and return
        the logits of the rows asked for (indices into `tokens`; default the last), float32 (k x V).

        One llama_decode call: the context's n_batch and n_ubatch are n_ctx, so a whole sequence is
        one physical batch (one pass, as SPEC 1.2 asks of the teacher-forced pass).
        """
        n = len(tokens)
        if n == 0:
            raise ValueError("decode needs at least one token")
        if n_past + n > self.n_ctx:
            raise SpectermError(f"prompt + continuation ({n_past + n} tokens) exceeds the llama.cpp context "
                                f"({self.n_ctx}); shorten the prompt or lower -n.")
        want = [n - 1] if rows is None else sorted({int(r) for r in rows})
        flags = np.zeros(n, dtype=bool)
        flags[want] = True
        self._decode(tokens, n_past, flags.tolist())
        V = self.n_vocab
        ptr = self.llm._ctx.get_logits()
        return np.ctypeslib.as_array(ptr, shape=(len(want) * V,)).reshape(len(want), V).copy()

    def decode_timed_only(self, tokens: Sequence[int], n_past: int, all_rows: bool) -> None:
        """Feed `tokens` at n_past with logits for every row (a verification) or the last only; no copy."""
        n = len(tokens)
        self._decode(tokens, n_past, [all_rows or i == n - 1 for i in range(n)])

    def _decode(self, tokens: Sequence[int], n_past: int, logits: Sequence[bool]) -> None:
        """One llama_decode of `tokens` at positions n_past.., sequence 0, logits where `logits` is true."""
        b = self.llm._batch.batch
        b.n_tokens = len(tokens)
        for i, tok in enumerate(tokens):
            b.token[i] = int(tok)
            b.pos[i] = n_past + i
            b.seq_id[i][0] = 0
            b.n_seq_id[i] = 1
            b.logits[i] = bool(logits[i])
        self.llm._ctx.decode(self.llm._batch)


_LOAD_LOCK = threading.Lock()


def gguf_path(ms: Any) -> Path:
    """The file of a resolved GGUF model spec (oracle.models.ModelSpec of kind 'gguf')."""
    assert ms.path is not None and ms.gguf_file is not None
    return Path(ms.path) / str(ms.gguf_file)


def probe_decode(path: Path) -> None:
    """Load `path` and decode a few tokens in a child process first, so that a llama.cpp build whose
    kernels this CPU cannot run (SIGILL) gives one sentence instead of killing specterm. Once per
    file and process."""
    key = str(Path(path).resolve())
    if key in _PROBED:
        return
    res = subprocess.run([sys.executable, "-c", _PROBE, str(path)], capture_output=True, timeout=600, check=False)
    if res.returncode == -signal.SIGILL:
        raise SpectermError(ILLEGAL_INSTRUCTION.format(name=Path(path).name))
    if res.returncode != 0:
        last = [ln for ln in res.stderr.decode("utf-8", "replace").splitlines() if ln.strip()][-1:] or ["no output"]
        raise SpectermError(f"llama.cpp failed a first test decode of {Path(path).name} ({last[0][:160]}); check the "
                            "file and the llama-cpp-python install.")
    _PROBED.add(key)


def load_gguf(path: Path, n_ctx: int, threads: int, vocab_only: bool = False) -> GGUFModel:
    """Load a GGUF file in llama.cpp on the CPU with `threads` threads and a context of n_ctx
    (n_batch = n_ubatch = n_ctx). One sentence when the file cannot be read."""
    llama_cpp = require_binding()
    with _LOAD_LOCK:
        try:
            llm = llama_cpp.Llama(model_path=str(path), n_ctx=n_ctx, n_batch=n_ctx, n_ubatch=n_ctx, n_threads=threads,
                                  n_threads_batch=threads, n_gpu_layers=0, logits_all=False, vocab_only=vocab_only,
                                  verbose=False)
        except (ValueError, RuntimeError, OSError) as exc:
            raise SpectermError(f"llama.cpp could not load {path} ({str(exc).strip()[:160]}); "
                                "check that it is a GGUF file llama.cpp supports.") from None
    return GGUFModel(path=Path(path), llm=llm, n_ctx=n_ctx, threads=threads)


def vocab_texts(model: GGUFModel) -> list[bytes]:
    """The text of every token id (llama_vocab_get_text), as llama.cpp reads the GGUF vocabulary."""
    llama_cpp = require_binding()
    vocab = llama_cpp.llama_model_get_vocab(model.llm._model.model)
    return [llama_cpp.llama_vocab_get_text(vocab, i) or b"" for i in range(model.n_vocab)]


def eog_ids(model: GGUFModel) -> set[int]:
    """Every end-of-generation token id (llama_vocab_is_eog): where llama.cpp's decoders stop."""
    llama_cpp = require_binding()
    vocab = llama_cpp.llama_model_get_vocab(model.llm._model.model)
    return {i for i in range(model.n_vocab) if llama_cpp.llama_vocab_is_eog(vocab, i)}


def check_vocabularies(target: GGUFModel, draft: GGUFModel) -> None:
    """SPEC 1.5 in llama.cpp: the same token text at every id and the same end-of-generation tokens,
    else one sentence naming the first difference. A longer vocabulary whose extra ids the other
    lacks is accepted only when every shared id agrees (SPEC 1.5's padding case)."""
    vt, vd = vocab_texts(target), vocab_texts(draft)
    shared = min(len(vt), len(vd))
    diff = next((i for i in range(shared) if vt[i] != vd[i]), None)
    if diff is not None:
        raise SpectermError(f"draft and target tokenizers differ (target has {len(vt)} tokens, draft {len(vd)}; "
                            f"id {diff} is {vt[diff]!r} vs {vd[diff]!r}); choose a draft from the target's model family.")
    et, ed = eog_ids(target), eog_ids(draft)
    if et != ed:
        raise SpectermError(f"draft and target tokenizers share a vocabulary but not end-of-generation tokens "
                            f"({sorted(ed)[:5]} vs {sorted(et)[:5]}); use a draft from the target's family.")


def engine_info(threads: int) -> dict[str, Any]:
    """What run.json records about llama.cpp: binding version, the library file it loaded, the
    build's system info (the CPU features compiled in) and how it was built."""
    llama_cpp = require_binding()
    lib = getattr(llama_cpp.llama_cpp, "_lib", None)
    lib_path = getattr(lib, "_name", None)
    info: dict[str, Any] = {
        "name": "llama.cpp",
        "binding": "llama-cpp-python",
        "binding_version": getattr(llama_cpp, "__version__", None),
        "library": str(lib_path) if lib_path else None,
        "library_override": os.environ.get("LLAMA_CPP_LIB_PATH"),
        "system_info": llama_cpp.llama_print_system_info().decode("utf-8", "replace").strip(),
        "threads": threads,
        "device": "cpu",
    }
    override = os.environ.get("LLAMA_CPP_LIB_PATH")
    cache = Path(override).parent / "CMakeCache.txt" if override else None
    if cache is not None and cache.is_file():
        from specterm.engines.llamacpp.binaries import cmake_flags

        info["build"] = {"cmake_cache": str(cache), **cmake_flags(cache)}
    else:
        # an object, as run.json's validator (core/store/meta.py) and a cost profile's engine.build require
        info["build"] = {"how": "pip install llama-cpp-python (its CMake defaults: Release, GGML_NATIVE on, OpenMP, CPU backend)"
                                + (f"; CMAKE_ARGS={os.environ['CMAKE_ARGS']}" if os.environ.get("CMAKE_ARGS") else "")}
    return info


def describe_llamacpp(threads: int) -> dict[str, Any]:
    """A cost profile's engine (binding version, the build's CPU features and flags), device and dtype."""
    from specterm.core.decide.machine import this_machine

    info = engine_info(threads)
    build = info.get("build")
    return {"engine": {"name": "llama.cpp", "version": info.get("binding_version"),
                       "build": {"system_info": info.get("system_info"),
                                 **(build if isinstance(build, dict) else {"how": build})}},
            "device": {"kind": "cpu", "name": this_machine().cpu, "cores": os.cpu_count(), "threads": threads,
                       "memory_gb": None, "driver": None, "capability": None},
            "dtype": "gguf"}
