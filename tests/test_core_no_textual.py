"""The headless core never loads the UI: importing every specterm.core module leaves textual out."""

import subprocess
import sys

CODE = """
import importlib, pkgutil, sys
import specterm.core
names = [m.name for m in pkgutil.iter_modules(specterm.core.__path__, "specterm.core.")]
for name in names:
    importlib.import_module(name)
loaded = sorted(m for m in sys.modules if m == "textual" or m.startswith("textual.") or m.startswith("textual_plotext"))
print(len(names), ",".join(loaded))
"""


def test_core_imports_without_textual():
    out = subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True, check=True).stdout.split()
    n_modules, loaded = int(out[0]), out[1] if len(out) > 1 else ""
    assert n_modules >= 10  # streams, blockwalk, bootstrap, navigate, analysis, export, ...
    assert loaded == ""


def test_cli_help_does_not_load_the_app():
    code = "import sys; from specterm import cli; print('textual' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip() == "False"
