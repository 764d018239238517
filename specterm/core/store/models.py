"""Models: what identifies a run's model across runs (model_key), how it is named in messages and in
a shared run.json (model_label, public_model), and where to load it from again (model_location)."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from specterm.core.errors import SpectermError


def model_key(model: Any) -> Any:
    """What identifies a model across runs: the sha256 of its file when known, else its spec."""
    if isinstance(model, dict):
        return model.get("sha256") or model.get("spec")
    return model


def model_label(model: Any) -> str:
    """A short name of a model for messages: its spec (a hub id, a file name, layers:K)."""
    if isinstance(model, dict):
        return str(model.get("spec") or model.get("sha256") or "unknown model")
    return "no model" if model is None else str(model)


def public_model(desc: dict[str, Any], record_paths: bool = False) -> dict[str, Any]:
    """A model description fit to share: a hub id or layers:K as given; a local file or directory
    named by its last two path parts (e.g. 'qwen2.5-coder-1.5b-instruct/model.gguf') with its
    sha256 and size, without the absolute path unless `record_paths`."""
    out = dict(desc)
    path = out.get("path")
    if out.get("source") in ("gguf", "dir") and isinstance(path, str):
        p = Path(path)
        out["spec"] = f"{p.parent.name}/{p.name}" if p.parent.name else p.name
        if p.is_file():
            out["size"] = p.stat().st_size
        if not record_paths:
            del out["path"]
    return out


def sha256_file(path: Path, chunk: int = 1 << 22) -> str:
    """Hex sha256 of a file, read in 4 MiB chunks."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(chunk):
            h.update(block)
    return h.hexdigest()


def models_dirs() -> list[Path]:
    """Where model_location looks for a run's local models by name: $SPECTERM_MODELS (os.pathsep
    separated), then ./models."""
    env = os.environ.get("SPECTERM_MODELS", "")
    return [Path(p) for p in env.split(os.pathsep) if p] + [Path("models")]


def model_location(model: Any, override: str | None = None, search: Sequence[Path] | None = None) -> str:
    """The argument to load a run's model with (a path, a hub id or layers:K).

    `override` (e.g. --target/--draft) wins. Otherwise: a hub id or layers:K as recorded; a local
    model at its recorded path when the run kept one (--record-paths) and it still exists; else the
    file/directory found by its recorded name ('parent/file') or file name under the `search`
    directories (default models_dirs()), checked against the recorded sha256 for a file.
    """
    if override:
        return override
    if not isinstance(model, dict):
        raise SpectermError("the run names no model (an imported run?); pass --target and --draft.")
    source, spec = model.get("source"), model.get("spec")
    if source in ("hub", "layers") and isinstance(spec, str):
        return spec
    path = model.get("path")
    if isinstance(path, str) and Path(path).exists():
        return path
    if not isinstance(spec, str):
        raise SpectermError("the run does not say where its model came from; pass --target and --draft.")
    rel = Path(spec)
    want_size, want_sha = model.get("size"), model.get("sha256")
    for root in (models_dirs() if search is None else list(search)):
        if not root.is_dir():
            continue
        candidates = [root / rel, root / rel.name, *sorted(root.glob(f"*/{rel.name}"))]
        for cand in dict.fromkeys(candidates):
            if not cand.exists():
                continue
            if cand.is_file():
                if want_size is not None and cand.stat().st_size != want_size:
                    continue
                if want_sha is not None and sha256_file(cand) != want_sha:
                    continue
            return str(cand)
    dirs = ", ".join(str(d) for d in (models_dirs() if search is None else search))
    raise SpectermError(f"model {spec} was not found under {dirs}; pass its location with --target/--draft or set SPECTERM_MODELS.")
