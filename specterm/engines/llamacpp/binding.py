"""The llama.cpp backend: `specterm run --backend llama.cpp`, llama.cpp costs, and
`specterm confirm --engine llama.cpp` (llama.cpp's own `llama-speculative-simple`).

Needs the `llamacpp` extra (`pip install -e ".[llamacpp]"`: llama-cpp-python, which builds
llama.cpp from its sources, about 4-5 minutes on 2 cores). Nothing here is imported by the core.
"""

from __future__ import annotations

from types import ModuleType

from specterm.core.errors import SpectermError

BINDING_VERSION = "0.3.36"  # the pinned binding: this package uses its low-level batch and context wrappers
MISSING_BINDING = ('the llama.cpp backend needs the llama-cpp-python binding; install the extra with '
                   'pip install -e ".[llamacpp]" (it builds llama.cpp from source, about 5 minutes).')


def require_binding() -> ModuleType:
    """The `llama_cpp` module, or one sentence naming the extra to install."""
    try:
        import llama_cpp
    except ImportError:
        raise SpectermError(MISSING_BINDING) from None
    return llama_cpp
