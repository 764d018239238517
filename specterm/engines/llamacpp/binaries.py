"""Where `llama-speculative-simple` comes from: a directory the user gives (--llama-bin), or a build
from the llama.cpp sources that llama-cpp-python vendors, into a cache directory, on demand.

Sources, in order: --llama-src (a llama.cpp source tree, or the llama-cpp-python sdist directory or
tarball, whose vendor/llama.cpp is used), $SPECTERM_LLAMA_SRC, then the sdist fetched with
`pip download --no-deps --no-binary llama-cpp-python llama-cpp-python==VERSION`. The build is the
one measured in /work/shared/models/README.md: Release, Ninja when present, no curl, examples on,
tests and server off, only the targets needed; about 3-4 min at -j2 on 2 cores (7-8 min at -j1).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
import time
from collections.abc import Callable
from pathlib import Path

from specterm.core.errors import SpectermError
from specterm.engines.llamacpp.binding import BINDING_VERSION

SPEC_BINARY = "llama-speculative-simple"
TARGETS = (SPEC_BINARY,)
CMAKE_FLAGS = ("-DCMAKE_BUILD_TYPE=Release", "-DLLAMA_CURL=OFF", "-DLLAMA_BUILD_EXAMPLES=ON",
               "-DLLAMA_BUILD_TESTS=OFF", "-DLLAMA_BUILD_SERVER=OFF")
EXTRA_CMAKE_ENV = "SPECTERM_LLAMA_CMAKE_ARGS"  # extra cmake flags for the build, e.g. the no-AMX set below
NO_AMX_HINT = (f"{EXTRA_CMAKE_ENV}=\"-DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_AVX512=ON -DGGML_AMX_TILE=OFF "
               "-DGGML_AMX_INT8=OFF\" (remove the cache directory first)")
BUILD_HINT = ("build it with `specterm confirm --engine llama.cpp` (it builds llama-speculative-simple from "
              "llama-cpp-python's vendored llama.cpp sources, about 4-8 min) or pass --llama-bin DIR")


def cache_dir() -> Path:
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "specterm" / f"llama.cpp-{BINDING_VERSION}"


def find_binary(bin_dir: Path | None = None) -> Path | None:
    """llama-speculative-simple in `bin_dir` (or its bin/ or build/bin/), else in the cache; None if absent."""
    places = []
    if bin_dir is not None:
        places += [bin_dir, bin_dir / "bin", bin_dir / "build" / "bin"]
    else:
        places += [cache_dir() / "build" / "bin"]
    for d in places:
        exe = Path(d) / SPEC_BINARY
        if exe.is_file() and os.access(exe, os.X_OK):
            return exe
    return None


def _vendored(src: Path) -> Path | None:
    """The llama.cpp tree inside `src` (itself, or vendor/llama.cpp of an sdist tree)."""
    for cand in (src, src / "vendor" / "llama.cpp"):
        if (cand / "examples" / "speculative-simple").is_dir() and (cand / "CMakeLists.txt").is_file():
            return cand
    return None


def locate_sources(src: Path | None, work: Path, log: Callable[[str], None]) -> Path:
    """A llama.cpp source tree to build from (see the module docstring); one sentence when none."""
    given = src or (Path(os.environ["SPECTERM_LLAMA_SRC"]) if os.environ.get("SPECTERM_LLAMA_SRC") else None)
    if given is not None:
        given = Path(given).expanduser()
        if given.is_file() and given.name.endswith((".tar.gz", ".tgz")):
            return _extract(given, work)
        tree = _vendored(given)
        if tree is None:
            raise SpectermError(f"{given} holds no llama.cpp sources (no examples/speculative-simple); pass a llama.cpp "
                                "tree or the llama-cpp-python sdist.")
        return tree
    for old in sorted(work.glob("llama_cpp_python-*/")):
        tree = _vendored(old)
        if tree is not None:
            return tree
    log(f"fetching the llama-cpp-python {BINDING_VERSION} sdist (its vendored llama.cpp sources) with pip")
    work.mkdir(parents=True, exist_ok=True)
    res = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", "llama-cpp-python",
                          "-d", str(work), f"llama-cpp-python=={BINDING_VERSION}"], capture_output=True, text=True, check=False)
    tarballs = sorted(work.glob("llama_cpp_python-*.tar.gz"))
    if res.returncode != 0 or not tarballs:
        raise SpectermError("could not fetch the llama-cpp-python sdist for llama.cpp's sources; pass --llama-src "
                            "(a llama.cpp tree or the sdist) or --llama-bin DIR.")
    return _extract(tarballs[-1], work)


def _extract(tarball: Path, work: Path) -> Path:
    with tarfile.open(tarball) as tf:
        tf.extractall(work, filter="data")
    for tree in sorted(work.glob("llama_cpp_python-*/")):
        found = _vendored(tree)
        if found is not None:
            return found
    raise SpectermError(f"{tarball} has no vendor/llama.cpp; pass a llama.cpp tree with --llama-src.")


def build(src: Path | None = None, jobs: int = 1, log: Callable[[str], None] = print) -> Path:
    """Build llama-speculative-simple into cache_dir()/build; returns the binary. Logs progress
    (cmake's [k/N] lines) and the time it took."""
    if shutil.which("cmake") is None:
        raise SpectermError("building llama-speculative-simple needs cmake and a C++ compiler; install them or pass "
                            "--llama-bin DIR.")
    root = cache_dir()
    tree = locate_sources(src, root / "src", log)
    build_dir = root / "build"
    gen = ["-G", "Ninja"] if shutil.which("ninja") else []
    t0 = time.perf_counter()
    log(f"building {SPEC_BINARY} from {tree} into {build_dir} (-j{jobs}; about 4 min at -j2, 8 at -j1 on 2 cores)")
    extra = os.environ.get(EXTRA_CMAKE_ENV, "").split()
    steps = [["cmake", "-S", str(tree), "-B", str(build_dir), *gen, *CMAKE_FLAGS, *extra],
             ["cmake", "--build", str(build_dir), "--target", *TARGETS, f"-j{jobs}"]]
    for cmd in steps:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        tail: list[str] = []
        assert proc.stdout is not None
        for line in proc.stdout:
            tail = (tail + [line.rstrip()])[-20:]
            if line.startswith("["):
                log(f"{time.perf_counter() - t0:5.0f} s {line.split(' ', 1)[0]} {line.split(' ', 1)[-1].strip()[:70]}")
        if proc.wait() != 0:
            raise SpectermError(f"building {SPEC_BINARY} failed ({tail[-1] if tail else 'no output'}); see cmake's "
                                f"output in {build_dir} or pass --llama-bin DIR.")
    exe = find_binary(None)
    if exe is None:
        raise SpectermError(f"the build finished but {SPEC_BINARY} is not in {build_dir / 'bin'}; pass --llama-bin DIR.")
    (root / "BUILD.txt").write_text(build_record(tree, time.perf_counter() - t0, jobs) + f"extra: {' '.join(extra)}\n",
                                    encoding="utf-8")
    log(f"built {exe} in {time.perf_counter() - t0:.0f} s")
    return exe


def build_record(tree: Path, seconds: float, jobs: int) -> str:
    return (f"source: {tree}\ncmake flags: {' '.join(CMAKE_FLAGS)}\ntargets: {' '.join(TARGETS)}\njobs: {jobs}\n"
            f"seconds: {seconds:.0f}\n")


KERNEL_FLAGS = ("CMAKE_BUILD_TYPE", "GGML_NATIVE", "GGML_AVX", "GGML_AVX2", "GGML_AVX512", "GGML_FMA", "GGML_F16C",
                "GGML_OPENMP", "BUILD_SHARED_LIBS", "CMAKE_CXX_COMPILER", "CMAKE_C_COMPILER", "GGML_BLAS", "GGML_LLAMAFILE")


def cmake_flags(cache: Path) -> dict[str, str]:
    """The flags of a CMakeCache.txt that change llama.cpp's kernels (KERNEL_FLAGS)."""
    flags = {}
    for line in cache.read_text(errors="replace").splitlines():
        key = line.split(":", 1)[0]
        if key in KERNEL_FLAGS and "=" in line:
            flags[key] = line.split("=", 1)[1]
    return flags


def binary_info(exe: Path) -> dict[str, object]:
    """What confirm records about the binary: its path and its build's kernel flags."""
    info: dict[str, object] = {"path": str(exe)}
    cache = exe.parent.parent / "CMakeCache.txt"
    if cache.is_file():
        info["cmake"] = cmake_flags(cache)
    return info
