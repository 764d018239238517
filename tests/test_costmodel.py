"""core/decide/costmodel.py: each cost formula by hand, and a scan that fails when a copy of one of them
appears anywhere else in specterm/ (issue 17: the cost model was written four times)."""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest

from specterm.core.decide import costmodel as cm
from specterm.core.params import R_DEFAULT

ROOT = Path(__file__).resolve().parents[1] / "specterm"


def test_formulas_by_hand():
    # E = 3 at g = 4, c_decode 0.5, c_verify(4) 1.0, c_draft 0.2: block 1.0 + 0.8 = 1.8, S_hw = 1.5 / 1.8
    assert cm.block_cost(1.0, 0.2, 4).item() == pytest.approx(1.8)
    assert cm.speedup_hw(3.0, 0.5, 1.0, 0.2, 4).item() == pytest.approx(1.5 / 1.8)
    # refeed: half the blocks pay 0.3 more: 1.8 + 0.15
    assert cm.block_cost(1.0, 0.2, 4, 0.5, 0.3).item() == pytest.approx(1.95)
    assert cm.refeed_extra(0.2, 0.5) == pytest.approx(0.3) and cm.refeed_extra(0.2, 0.1) == 0.0
    assert cm.refeed_extra(0.2, None) == 0.0
    # memory-bound reference: 3 / (1 + 4 * 0.4) = 3 / 2.6
    assert cm.speedup_mb(3.0, 0.2 / 0.5, 4).item() == pytest.approx(3 / 2.6)
    # cost-ratio throughput: 10 tokens, 4 blocks, 16 drafted at r = 0.25: 10 / 8
    assert cm.throughput(10, 4, 16, 0.25).item() == pytest.approx(1.25)
    assert cm.curve_throughput([2.0], 0.5, [2]).tolist() == pytest.approx([1.0])
    assert cm.r_or_default(None) == R_DEFAULT and cm.r_or_default(0.3) == 0.3


def test_engine_block_term_by_hand():
    # llama.cpp's draft-simple block: c_verify(4) 1.0 + 4 * 0.2 + c_draft_fwd(4) 0.3 = 2.1 s; E = 3, c_decode 0.5
    assert cm.block_cost(1.0, 0.2, 4, c_draft_fwd=0.3).item() == pytest.approx(2.1)
    assert cm.speedup_hw(3.0, 0.5, 1.0, 0.2, 4, c_draft_fwd=0.3).item() == pytest.approx(1.5 / 2.1)
    # v* = E - (g c_draft + c_draft_fwd) / c_decode = 3 - (0.8 + 0.3) / 0.5 = 0.8 decode steps
    assert cm.break_even_verify(3.0, 0.2, 0.5, 4, c_draft_fwd=0.3).item() == pytest.approx(0.8)
    # the break-even still says exactly when S_hw > 1: c_verify = 0.39 (0.78 steps) pays, 0.41 (0.82) does not
    assert (cm.speedup_hw(3.0, 0.5, 0.39, 0.2, 4, c_draft_fwd=0.3).item() > 1
            > cm.speedup_hw(3.0, 0.5, 0.41, 0.2, 4, c_draft_fwd=0.3).item())
    # without the term every formula is SPEC 6's bit for bit (not "plus 0.0")
    E, cv, cd = np.array([2.7, 3.1]), np.array([0.913, 1.27]), 0.0731
    assert cm.speedup_hw(E, 0.41, cv, cd, [3, 4], c_draft_fwd=None).tobytes() == cm.speedup_hw(E, 0.41, cv, cd, [3, 4]).tobytes()
    # replicate axis: the term broadcasts like the other costs
    S = cm.speedup_hw(3.0, np.array([0.5, 1.0]), 1.0, 0.2, 4, c_draft_fwd=np.array([0.3, 0.5]))
    assert S.tolist() == pytest.approx([1.5 / 2.1, 3.0 / 2.3])


def test_break_even_by_hand():
    # v* = E - g c_draft / c_decode = 3 - 4 * 0.2 / 0.5 = 1.4 decode steps
    assert cm.break_even_verify(3.0, 0.2, 0.5, 4).item() == pytest.approx(1.4)
    # S_hw > 1 exactly when c_verify / c_decode < v*: c_verify = 0.69 (1.38 steps) pays, 0.71 (1.42) does not
    assert cm.speedup_hw(3.0, 0.5, 0.69, 0.2, 4).item() > 1 > cm.speedup_hw(3.0, 0.5, 0.71, 0.2, 4).item()


# ------------------------------------------------------------------ no copy outside costmodel ---

def _names(node: ast.AST) -> set[str]:
    out = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Name):
            out.add(n.id.lower())
        elif isinstance(n, ast.Attribute):
            out.add(n.attr.lower())
        elif isinstance(n, ast.Subscript) and isinstance(n.slice, ast.Constant) and isinstance(n.slice.value, str):
            out.add(n.slice.value.lower())
        elif (isinstance(n, ast.Call) and n.args and isinstance(n.args[0], (ast.Constant, ast.JoinedStr))):
            # a cost looked up by its sample key, e.g. med("draft") or med(f"verify:{g}")
            first = n.args[0]
            parts = [first] if isinstance(first, ast.Constant) else [v for v in first.values if isinstance(v, ast.Constant)]
            out.update(str(v.value).lower() for v in parts if isinstance(v.value, str))
    return out


def _mentions(node: ast.AST, word: str) -> bool:
    return any(word in name for name in _names(node))


def _is_one(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and node.value in (1, 1.0) and not isinstance(node.value, bool)


def _one_plus_product(node: ast.AST) -> bool:
    """1 + x * y (either order): the denominator of E / (1 + g r)."""
    if not (isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add)):
        return False
    sides = (node.left, node.right)
    return any(_is_one(a) for a in sides) and any(isinstance(b, ast.BinOp) and isinstance(b.op, ast.Mult) for b in sides)


def _block_sums(node: ast.BinOp, line: int) -> list[str]:
    """The additions written out in `node`: c_verify(g) + g c_draft, and c_block + c_draft_fwd."""
    found = []
    for prod in (node.left, node.right):
        if (isinstance(prod, ast.BinOp) and isinstance(prod.op, ast.Mult) and _mentions(prod, "draft")
                and not _mentions(prod, "draft2")):
            other = node.right if prod is node.left else node.left
            if _mentions(other, "verify") or _mentions(other, "tv"):
                found.append(f"{line}: c_verify(g) + g c_draft")
    for fwd in (node.left, node.right):
        other = node.right if fwd is node.left else node.left
        if _mentions(fwd, "fwd") and (_mentions(other, "block") or _mentions(other, "verify")):
            found.append(f"{line}: c_block + c_draft_fwd")
    return found


def formula_copies(source: str) -> list[str]:
    """Cost-model formulas written out in `source`: what costmodel defines once."""
    found = []
    for node in ast.walk(ast.parse(source)):
        line = getattr(node, "lineno", 0)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div) and _one_plus_product(node.right):
            found.append(f"{line}: E / (1 + g r)")
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            found += _block_sums(node, line)
        if (isinstance(node, ast.BinOp) and isinstance(node.op, ast.Sub) and isinstance(node.right, ast.BinOp)
                and _mentions(node.right, "draft") and _mentions(node.right, "decode")):
            found.append(f"{line}: E - g c_draft / c_decode")
        if isinstance(node, ast.IfExp) and "r_default" in _names(node.body) | _names(node.orelse):
            found.append(f"{line}: r, else R_DEFAULT")
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "max"
                and any(isinstance(a, ast.BinOp) and isinstance(a.op, ast.Sub) and _mentions(a, "draft") for a in node.args)):
            found.append(f"{line}: (c_draft2 - c_draft)+")
    return found


def test_the_scan_finds_each_planted_copy():
    planted = {
        "E / (1 + g r)": "s = E / (1.0 + g * r)",
        "c_verify(g) + g c_draft": "b = c_verify[g] + g * c_draft",
        "E - g c_draft / c_decode": "v = E - g * c_draft / c_decode",
        "r, else R_DEFAULT": "r = R_DEFAULT if r is None else r",
        "(c_draft2 - c_draft)+": "x = max(0.0, c_draft2 - c_draft)",
        "c_block + c_draft_fwd": "b = float(block_cost(cv, cd, g)) + float(fwd[g])",
    }
    for what, src in planted.items():
        assert [f.split(": ", 1)[1] for f in formula_copies(src)] == [what], src
    assert formula_copies("y = a / (b + 1)\nz = 1 + n\n") == []


def test_no_cost_formula_outside_costmodel():
    copies = {}
    for path in sorted(ROOT.rglob("*.py")):
        if path.name == "costmodel.py":
            continue
        found = formula_copies(path.read_text(encoding="utf-8"))
        if found:
            copies[str(path.relative_to(ROOT))] = found
    assert copies == {}, f"cost formulas written outside core/decide/costmodel.py: {copies}"


def test_the_scan_sees_the_old_copies():
    """The shapes the issue found (hardware.py, economics.py, confirm.py before the move) are caught."""
    old = ("out[i] = c_decode / (cv + g * c_draft)\n"
           "x = 1.0 / (1.0 + np.asarray(gammas, dtype=np.float64) * float(r))\n"
           "p = E * t1 / (tv + g * d1 + extra)\n"
           "block = np.asarray(c_verify, dtype=np.float64) + g * c_draft\n")
    kinds = [f.split(": ", 1)[1] for f in formula_copies(old)]
    assert kinds.count("E / (1 + g r)") == 1 and kinds.count("c_verify(g) + g c_draft") >= 1
    # crossstack's copy (issue 22), costs looked up by their sample keys
    assert formula_copies('S = E * med("decode") / (med(f"verify:{gamma}") + gamma * med("draft"))\n')


def test_speedups_broadcast_over_cost_replicates():
    E = np.array([2.0, 3.0])
    c_dec = np.array([[0.5], [1.0]])  # two replicates of the costs
    S = cm.speedup_hw(E, c_dec, np.array([1.0, 1.2]), np.array([[0.1], [0.2]]), np.array([1, 2]))
    assert S.shape == (2, 2) and S[1, 1] == pytest.approx(3.0 * 1.0 / (1.2 + 0.4))
