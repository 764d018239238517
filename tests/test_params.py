"""One home per idea: the parameters, the one throughput formula, the one tie rule and the one
Hugging Face schedule rule, checked against hand-computed values."""

from __future__ import annotations

import numpy as np
import pytest

from specterm.core import params
from specterm.core.decide.cost_ratio import speedup
from specterm.core.decide.optimum import best_gamma, best_index, curve_throughput, throughput
from specterm.core.decide.replay import heuristic_next


def test_parameters():
    assert params.GAMMAS.tolist() == list(range(1, 33))
    assert params.R_GRID == (0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6)
    assert params.R_DEFAULT in params.R_GRID and params.YIELD_GAMMAS == (2, 4, 8, 16)
    assert params.ACCELERATORS[params.DEFAULT_ACCELERATOR].ridge == pytest.approx(989.4 / 3.35)
    assert params.DEFAULT_RIDGE == 295.0


def test_one_throughput_formula():
    assert throughput(10, 4, 8, 0.25) == pytest.approx(10 / 6)  # tokens / (blocks + r drafted)
    assert np.isnan(throughput(0, 0, 0, 0.3))
    # per block of fixed g: E(g) / (1 + g r), which is also decide's speedup
    assert curve_throughput([2.0, 3.0], 0.5, [1, 2]).tolist() == pytest.approx([2 / 1.5, 3 / 2.0])
    assert speedup([2.0, 3.0], [1, 2], 0.5).tolist() == pytest.approx([2 / 1.5, 1.5])  # by hand: 2/(1+0.5), 3/(1+1)


def test_one_tie_rule():
    assert best_gamma([1.0, 3.0, 3.0 * (1 - 1e-15), 2.0], [1, 2, 3, 4]) == 2  # tied within 1e-12: smallest g
    assert best_gamma([1.0, 3.0, 3.0 * (1 + 1e-9)], [5, 6, 7]) == 7  # a real gain is not a tie
    assert best_gamma([np.nan, 2.0, np.inf], [1, 2, 3]) == 2  # only finite values count
    assert best_gamma([np.nan, np.nan]) is None and best_index([]) is None


def test_heuristic_schedule_rule():
    # +2 after a fully accepted block, else -1 with a floor
    cases = [(4, 4, 1, 6), (4, 2, 1, 3), (1, 0, 1, 1), (3, 0, 2, 2), (0, 0, 0, 2)]
    for g, k, g_min, want in cases:
        assert heuristic_next(g, k, g_min) == want
    g, k = np.array([4, 4, 1]), np.array([4, 2, 0])
    assert heuristic_next(g, k, 1).tolist() == [6, 3, 1]


def string_literals(source: str) -> list[str]:
    """The string constants of a module that are not docstrings (labels, messages)."""
    import ast

    tree = ast.parse(source)
    docs = {id(n.body[0].value) for n in ast.walk(tree)
            if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
            and n.body and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}
    return [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docs]


def test_steady_state_and_warm_up_bounds_live_in_params_only():
    """STEADY_FROM (SPEC 4) and the warm-up bounds (SPEC 3) are defined once, and no label hard-codes them."""
    import re
    from pathlib import Path

    assert (params.STEADY_FROM, params.WARMUP_EARLY, params.WARMUP_LATE) == (32, 16, 32)
    root = Path(params.__file__).resolve().parents[1]
    defined, labels = [], []
    for path in root.rglob("*.py"):
        source = path.read_text(encoding="utf-8")
        if re.search(r"^(STEADY_FROM|WARMUP_EARLY|WARMUP_LATE)\s*=", source, re.M):
            defined.append(path.relative_to(root).as_posix())
        labels += [s for s in string_literals(source) if re.search(r"t\s*(>=|<|=)\s*(16|32)\b", s)]
    assert defined == ["core/params.py"] and labels == []
    assert string_literals('"""doc"""\nx = "t >= 32"\n') == ["t >= 32"]  # the scan sees a label
