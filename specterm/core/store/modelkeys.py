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


def _file_matches(cand: Path, want_size: Any, want_sha: Any) -> bool:
    """True when a file has the recorded size and sha256 (each checked when recorded)."""
    if want_size is not None and cand.stat().st_size != want_size:
        return False
    return want_sha is None or sha256_file(cand) == want_sha


def _found_under(rel: Path, roots: Sequence[Path], want_size: Any, want_sha: Any, differs: list[Path]) -> str | None:
    """The first file or directory named `rel` (or its file name, or */file name) under `roots` that
    matches the recorded size and sha256; files found with another checksum are added to `differs`."""
    for root in roots:
        if not root.is_dir():
            continue
        candidates = [root / rel, root / rel.name, *sorted(root.glob(f"*/{rel.name}"))]
        for cand in dict.fromkeys(candidates):
            if not cand.exists():
                continue
            if cand.is_file() and not _file_matches(cand, want_size, want_sha):
                differs.append(cand)
                continue
            return str(cand)
    return None


def model_location(model: Any, override: str | None = None, search: Sequence[Path] | None = None) -> str:
    """The argument to load a run's model with (a path, a hub id or layers:K).

    `override` (e.g. --target/--draft) wins. Otherwise: a hub id or layers:K as recorded; a local
    model at its recorded path when the run kept one (--record-paths), it still exists and (a file)
    has the recorded size and sha256; else the file/directory found by its recorded name
    ('parent/file') or file name under the `search` directories (default models_dirs()), checked
    the same way. Every file is checked before it is returned, so nothing with another checksum is
    ever loaded; when only such files exist the sentence says "checksum differs" and where.
    """
    if override:
        return override
    if not isinstance(model, dict):
        raise SpectermError("the run names no model (an imported run?); pass --target and --draft.")
    source, spec = model.get("source"), model.get("spec")
    if source in ("hub", "layers") and isinstance(spec, str):
        return spec
    want_size, want_sha = model.get("size"), model.get("sha256")
    differs: list[Path] = []
    path = model.get("path")
    if isinstance(path, str) and Path(path).exists():
        if not Path(path).is_file() or _file_matches(Path(path), want_size, want_sha):
            return path
        differs.append(Path(path))
    if not isinstance(spec, str):
        raise SpectermError("the run does not say where its model came from; pass --target and --draft.")
    found = _found_under(Path(spec), models_dirs() if search is None else list(search), want_size, want_sha, differs)
    if found is not None:
        return found
    if differs:
        raise SpectermError(f"model {spec} was found at {differs[0]} but its checksum differs from the one this run was made "
                            "with; restore the original file or pass its location with --target/--draft.")
    dirs = ", ".join(str(d) for d in (models_dirs() if search is None else search))
    raise SpectermError(f"model {spec} was not found under {dirs}; pass its location with --target/--draft or set SPECTERM_MODELS.")


# ---------------------------------------------------------------- where this machine keeps a run's models ---
# run.json never holds a local path (a run is shared between machines); this machine remembers, per run
# folder, where the models it was made or timed with were, in a per-user state file, so `specterm costs`
# and `specterm confirm` find them again without --target/--draft.

ROLES = ("target", "draft")


def state_file() -> Path:
    """The per-user state file: $SPECTERM_STATE, else $XDG_STATE_HOME/specterm/models.json, else
    ~/.local/state/specterm/models.json. Never inside a run, never shared with it."""
    env = os.environ.get("SPECTERM_STATE")
    if env:
        return Path(env)
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "specterm" / "models.json"


def _run_key(run_dir: str | os.PathLike[str]) -> str:
    return str(Path(run_dir).resolve())


def _read_state() -> dict[str, Any]:
    import json

    try:
        data = json.loads(state_file().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def local_model_path(spec: str | None) -> str | None:
    """The absolute path of a model argument that names a local file or directory, else None (a hub id,
    layers:K)."""
    if not spec or spec.startswith("layers:"):
        return None
    p = Path(spec).expanduser()
    return str(p.resolve()) if p.exists() else None


def remember_models(run_dir: str | os.PathLike[str], target: str | None, draft: str | None) -> None:
    """Remember on this machine where `run_dir`'s models are (the local ones among `target`/`draft`;
    a hub id needs no memory). Best effort: a state file that cannot be written costs only the memory."""
    from specterm.core.store.atomic import write_json_atomic

    paths = {role: p for role, p in zip(ROLES, (local_model_path(target), local_model_path(draft))) if p}
    if not paths:
        return
    state = _read_state()
    stored = state.get("runs")
    runs: dict[str, Any] = stored if isinstance(stored, dict) else {}
    entry = dict(runs.get(_run_key(run_dir)) or {})
    entry.update(paths)
    runs[_run_key(run_dir)] = entry
    state["runs"] = runs
    try:
        state_file().parent.mkdir(parents=True, exist_ok=True)
        write_json_atomic(state_file(), state)
    except OSError:
        pass


def remembered_models(run_dir: str | os.PathLike[str]) -> dict[str, str]:
    """{role: path} this machine remembers for `run_dir`, only those that still exist."""
    runs = _read_state().get("runs")
    entry = runs.get(_run_key(run_dir)) if isinstance(runs, dict) else None
    if not isinstance(entry, dict):
        return {}
    return {role: str(p) for role, p in entry.items() if role in ROLES and isinstance(p, str) and Path(p).exists()}
