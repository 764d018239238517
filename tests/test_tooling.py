"""What pyproject.toml promises, checked: Textual pinned to the major version the tests run on (an
older Textual, which lacks what the app uses, is refused), and no module's type errors ignored whole."""

from __future__ import annotations

import tomllib
from importlib.metadata import version
from pathlib import Path

from packaging.requirements import Requirement
from packaging.version import Version

PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"


def requirement(name: str) -> Requirement:
    project = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["project"]
    found = [Requirement(r) for r in project["dependencies"] if Requirement(r).name == name]
    assert len(found) == 1, f"one requirement for {name}"
    return found[0]


def test_textual_is_pinned_to_the_major_version_the_tests_run_on():
    spec = requirement("textual").specifier
    installed = Version(version("textual"))
    assert spec.contains(installed)
    assert not spec.contains("5.3.0")  # no Binding.Group: `import specterm.app` failed with AttributeError
    assert not spec.contains(f"{installed.major - 1}.99.0") and not spec.contains(f"{installed.major + 1}.0.0")


def test_no_module_has_its_type_errors_ignored_whole():
    mypy = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["tool"]["mypy"]
    assert not mypy.get("ignore_errors")
    assert not [o["module"] for o in mypy.get("overrides", []) if o.get("ignore_errors")]
