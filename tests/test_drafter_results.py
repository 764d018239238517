"""The Results block on drafters (tests/readme_drafters.py) matches what `specterm report` prints for the
shipped runs (issue 54)."""

from __future__ import annotations

import pytest
from readme_drafters import LOOKUP, current, render, target_file


@pytest.mark.skipif(not (LOOKUP / "run.json").exists(), reason="the shipped prompt-lookup run is not in streams/")
def test_drafter_results_are_generated_from_the_shipped_runs():
    shown = current(target_file().read_text(encoding="utf-8"))
    assert shown is not None, "the drafters block is missing: python tests/readme_drafters.py --write"
    assert shown == render()
