"""The shipped run and docs/results.md agree: Results are generated from it, and it meets issue 5's bar; the
README's screenshot is the TUI's Overview as it renders."""

from __future__ import annotations

import json

from typer.testing import CliRunner

import re

import pytest
from readme_results import RESULTS_MD, ROOT, RUN, prose_block, readme_block, render, render_prose
from specterm.cli import app


def test_readme_results_are_generated_from_the_shipped_run():
    assert readme_block(RESULTS_MD.read_text(encoding="utf-8")) == render()


@pytest.fixture(scope="module")
def prose_pair() -> tuple[str, str]:
    return prose_block(RESULTS_MD.read_text(encoding="utf-8")), render_prose()


def test_readme_results_prose_is_generated_from_the_reports(prose_pair):
    """Every figure in the Results paragraphs is filled from `specterm report` (readme_results.prose)."""
    readme, rendered = prose_pair
    assert readme == rendered


def test_a_figure_changed_by_hand_in_the_prose_fails(prose_pair):
    """The check above can fail: change any one number of the README's paragraphs and it no longer matches."""
    readme, rendered = prose_pair
    numbers = list(re.finditer(r"\d+\.\d+", readme))
    assert len(numbers) > 30
    for m in numbers[:: max(1, len(numbers) // 12)]:
        digit = m.group()[-1]
        edited = readme[: m.end() - 1] + str((int(digit) + 1) % 10) + readme[m.end():]
        assert edited != rendered


def test_the_prose_says_what_the_issue_found_false_no_longer():
    """Sentences issue 19 found false are gone from the results; beta is said to be measured along y."""
    text = RESULTS_MD.read_text(encoding="utf-8")
    flat = " ".join(text.split())
    for false in ("each corpus's CI still includes 1", "over-dispersion is clear pooled",
                  "within 0.01 of greedy alpha in every corpus.", "(P4, P5 hold)"):
        assert false not in flat
    assert "along the greedy continuation y" in " ".join(prose_block(text).split())


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


def test_readme_screenshot_is_the_overview_as_it_renders():
    """The README's screenshot is the TUI's Overview at 80x24 on the shipped runs, rendered now: a change
    to the screen (or the numbers) without regenerating it fails here."""
    from readme_results import render_screenshot, screenshot_block

    shot = screenshot_block((ROOT / "README.md").read_text(encoding="utf-8"))
    assert shot == render_screenshot()
    lines = shot.splitlines()
    assert len(lines) == 24 and max(len(line) for line in lines) <= 80
    # the answer comes first: the head line, the breadcrumb, then "Speculate on this machine?"
    assert lines[2].strip().startswith("Speculate on this machine?")
