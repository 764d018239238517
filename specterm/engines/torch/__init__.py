"""The torch engine (transformers models, specterm's own decoder): the engine interface over
specterm/oracle/ (models, costs)."""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from specterm.core.errors import SpectermError
from specterm.core.machine import cpu_name
from specterm.core.store import model_key, model_location
from specterm.engines.base import MeasureCallback, OpenOptions, Sampler


def torch_build() -> dict[str, Any]:
    """torch's BLAS / oneDNN build as torch.__config__.show() prints it (the lines that change costs)."""
    import torch

    text = torch.__config__.show()
    build: dict[str, Any] = {}
    for key in ("BLAS_INFO", "LAPACK_INFO", "USE_MKLDNN", "USE_OPENMP", "CUDA_VERSION", "CUDNN_VERSION"):
        m = re.search(rf"{key}=([^,\n]+)", text)
        if m:
            build[key] = m.group(1).strip()
    m = re.search(r"Intel\(R\) oneAPI Deep Neural Network Library \(oneDNN\) (v[\d.]+)", text)
    if m:
        build["oneDNN"] = m.group(1)
    m = re.search(r"CPU capability usage: (\S+)", text)
    if m:
        build["cpu_capability"] = m.group(1)
    return build


def torch_device(device: str, threads: int) -> dict[str, Any]:
    """The device record of a cost profile for a torch device."""
    import torch

    if device.startswith("cuda"):
        d = torch.device(device)
        props = torch.cuda.get_device_properties(d)
        return {"kind": "cuda", "name": torch.cuda.get_device_name(d), "cores": props.multi_processor_count,
                "threads": None, "memory_gb": round(props.total_memory / 2**30, 1),
                "driver": f"CUDA {torch.version.cuda}", "capability": f"{props.major}.{props.minor}"}
    if device == "mps":
        return {"kind": "mps", "name": "Apple MPS", "cores": os.cpu_count(), "threads": threads, "memory_gb": None,
                "driver": None, "capability": None}
    return {"kind": "cpu", "name": cpu_name(), "cores": os.cpu_count(), "threads": threads,
            "memory_gb": _memory_gb(), "driver": None, "capability": None}


def _memory_gb() -> float | None:
    try:
        return round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1)
    except (ValueError, OSError, AttributeError):
        return None


class TorchPair:
    def __init__(self, loaded: Any, threads: int) -> None:
        self.loaded = loaded
        self.threads = threads
        self._caches: dict[str, Any] = {}

    def describe(self) -> dict[str, Any]:
        import torch

        return {"engine": {"name": "torch", "version": torch.__version__, "build": torch_build()},
                "device": torch_device(str(self.loaded.meta.get("device", "cpu")), self.threads),
                "dtype": self.loaded.meta.get("dtype")}

    def encode(self, text: str) -> list[int]:
        from specterm.oracle.run import encode_prompt

        return encode_prompt(self.loaded.tokenizer, text)

    def cost_sampler(self, ctx: Sequence[int], gammas: Sequence[int], on_measure: MeasureCallback | None,
                     cancel: Any) -> Sampler:
        from specterm.oracle.costs import CostSampler

        return CostSampler(self.loaded.target, self.loaded.draft, ctx, gammas, on_measure=on_measure, cancel=cancel)

    def batch_costs(self, sampler: Sampler, ctx: Sequence[int], on_measure: MeasureCallback | None,
                    cancel: Any) -> dict[str, Any]:
        import time

        from specterm.oracle.confirm import _grid_record
        from specterm.oracle.costs import BatchGrid, reused_b1

        t0 = time.perf_counter()
        grid = BatchGrid(self.loaded.target, self.loaded.draft, ctx, on_measure=on_measure, cancel=cancel,
                         reuse=reused_b1(sampler.summary()),
                         prefilled={"target": sampler.quantities[0][2], "draft": sampler.quantities[1][2]})
        return _grid_record(grid.run_all(), time.perf_counter() - t0)

    def close(self) -> None:
        self.loaded = None


class TorchEngine:
    name = "torch"

    def open(self, meta: dict[str, Any], options: OpenOptions, report: Callable[[Any], None]) -> TorchPair:
        import torch

        from specterm.oracle.run import OracleConfig, load_pair

        torch.set_num_threads(options.threads)
        specs = {}
        for role, override in (("target", options.target), ("draft", options.draft)):
            entry = meta.get(role)
            if override is None and not isinstance(entry, dict):
                raise SpectermError(f"run.json names no {role} model; this needs a run made by `specterm run` (or pass --{role}).")
            specs[role] = model_location(entry, override)
        loaded = load_pair(OracleConfig(target=specs["target"], draft=specs["draft"], prompts=[], out=Path("."),
                                        device=options.device or meta.get("device") or "auto",
                                        dtype=options.dtype or meta.get("dtype") or "auto"), report)
        for role in ("target", "draft"):
            if model_key(loaded.meta.get(role)) != model_key(meta.get(role)):
                raise SpectermError(f"the {role} model loaded now is not the one this run was made with (checksum differs); "
                                    "restore the original file or re-run `specterm run`.")
        return TorchPair(loaded, options.threads)
