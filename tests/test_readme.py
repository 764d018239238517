"""The shipped run and the README agree: Results are generated from it, and it meets issue 5's bar."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from readme_results import ROOT, RUN, readme_block, render
from specterm.cli import app


def test_readme_results_are_generated_from_the_shipped_run():
    assert readme_block((ROOT / "README.md").read_text(encoding="utf-8")) == render()


def test_shipped_run_has_five_corpora_of_16_prompts_with_gate_one():
    res = CliRunner().invoke(app, ["report", str(RUN), "--format", "json", "--boot", "50"])
    assert res.exit_code == 0, res.output
    sets = json.loads(res.stdout)["sets"]
    assert set(sets) == {"prose", "code", "json", "math", "multilingual", "pooled"}
    for name, s in sets.items():
        assert s["n_streams"] >= (80 if name == "pooled" else 16)
        assert s["gate_rate"] == 1.0


def test_ci_runs_exactly_the_readme_test_command():
    import re

    blocks = re.findall(r"```bash\n(.*?)\n```", (ROOT / "README.md").read_text(encoding="utf-8"), re.S)
    install_and_open, run_tests = blocks[0].strip(), blocks[1].strip()
    assert install_and_open.endswith("&& specterm")
    assert run_tests in (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
