"""Loading draft and target models: a Hugging Face id, a local directory, a GGUF file, or a
layer-skip self-draft (`layers:K`, the target's first K layers + its final norm and LM head).

Also the tokenizer check (SPEC 1.5), device/dtype resolution, and the small torch helpers the
oracle and the speculative decoder share (forward with a KV cache, cache cropping).
"""

from __future__ import annotations

import contextlib
import copy
import inspect
import os
import re
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, cast

from specterm.core.errors import SpectermError
from specterm.core.decide.machine import this_machine
from specterm.core.store.modelkeys import sha256_file

_LAYERS_RE = re.compile(r"^layers:(\d+)$")
if TYPE_CHECKING:
    import torch
    from transformers import DynamicCache, PreTrainedModel, PreTrainedTokenizerBase

    from specterm.engines.base import OracleConfig
    from specterm.engines.progress import ProgressCallback

_HUB_ID_RE = re.compile(r"[\w.-]+(/[\w.-]+)?")


@dataclass
class ModelSpec:
    """Where a model comes from. kind: 'gguf' | 'dir' | 'hub' | 'layers'."""

    spec: str
    kind: str
    path: Path | None = None  # directory to load from (GGUF: its parent)
    gguf_file: str | None = None
    layers: int | None = None
    sha256: str | None = None

    def describe(self) -> dict[str, Any]:
        out: dict[str, Any] = {"spec": self.spec, "source": self.kind}
        if self.path is not None:
            out["path"] = str(self.path / self.gguf_file) if self.gguf_file else str(self.path)
        if self.layers is not None:
            out["layers"] = self.layers
        if self.sha256:
            out["sha256"] = self.sha256
        return out


def resolve_spec(spec: str, hash_files: bool = True) -> ModelSpec:
    """Classify a model argument and check that a local one exists, before any model work."""
    m = _LAYERS_RE.match(spec.strip())
    if m:
        k = int(m.group(1))
        if k < 1:
            raise SpectermError(f"draft '{spec}' must keep at least one layer, e.g. layers:8.")
        return ModelSpec(spec=spec, kind="layers", layers=k)
    p = Path(spec).expanduser()
    if spec.lower().endswith(".gguf"):
        if not p.is_file():
            raise SpectermError(f"model file {spec} does not exist; check the path or pass a hub id like Qwen/Qwen2.5-1.5B.")
        if not _looks_like_gguf(p):
            raise SpectermError(f"{spec} is not a readable GGUF file (bad magic bytes); re-download it.")
        return ModelSpec(spec=spec, kind="gguf", path=p.resolve().parent, gguf_file=p.name,
                         sha256=sha256_file(p) if hash_files else None)
    if p.is_dir():
        ggufs = sorted(p.glob("*.gguf"))
        if not (p / "config.json").exists() and len(ggufs) == 1:
            return resolve_spec(str(ggufs[0]), hash_files)
        if not (p / "config.json").exists():
            raise SpectermError(f"{spec} has no config.json (and not exactly one .gguf file); pass a model directory, a .gguf file or a hub id.")
        return ModelSpec(spec=spec, kind="dir", path=p.resolve())
    if p.exists():
        raise SpectermError(f"{spec} is a file but not a .gguf model; pass a model directory (with config.json), "
                            "a .gguf file or a hub id like Qwen/Qwen2.5-1.5B.")
    if not _HUB_ID_RE.fullmatch(spec) or spec.startswith("."):
        raise SpectermError(f"model path {spec} does not exist; pass an existing directory, a .gguf file or a hub id like Qwen/Qwen2.5-1.5B.")
    return ModelSpec(spec=spec, kind="hub")


def _looks_like_gguf(path: Path) -> bool:
    try:
        with open(path, "rb") as fh:
            return fh.read(4) == b"GGUF"
    except OSError:
        return False


_GGUF_ONCE = threading.RLock()
_gguf_depth = 0


@contextlib.contextmanager
def gguf_parsed_once() -> Iterator[None]:
    """Within the block, each GGUF file is parsed once and each tensor-name map built once.

    transformers reads a GGUF checkpoint with a fresh `gguf.GGUFReader` for each of the tokenizer,
    the config and the weights (three parses of every metadata field: SmolLM2's 49k-token vocabulary
    and its merges are ~300k small memmap reads each), and while mapping tensor names it builds
    `gguf.get_tensor_name_map(arch, n_layers)` once per submodule of the model (397 times for
    SmolLM2). Measured under cProfile on SmolLM2-135M: 20.6 s in the three parses and 7.9 s in the
    name maps, of a 42.6 s `load_pair`.

    Here `gguf.GGUFReader(path)` returns one reader per (file, size, mtime) and
    `gguf.get_tensor_name_map` one map per (arch, n_blocks); transformers imports both names from
    `gguf` inside the functions that use them, at call time, so the swap reaches every call. Both
    objects are only read after construction, and the memo lives for the block only (the readers'
    memory maps are released when it ends). The swap is process-wide, so blocks are serialised by a
    lock (a nested block on the same thread just runs); without the `gguf` package the block does
    nothing."""
    global _gguf_depth
    try:
        import gguf
    except ImportError:
        yield
        return
    with _GGUF_ONCE:
        if _gguf_depth:
            _gguf_depth += 1
            try:
                yield
            finally:
                _gguf_depth -= 1
            return
        reader_cls, name_map = gguf.GGUFReader, gguf.get_tensor_name_map
        readers: dict[tuple[str, str, int, int], Any] = {}
        maps: dict[tuple[Any, int], Any] = {}

        def reader(path: str | os.PathLike[str], mode: Literal["r", "r+", "c"] = "r") -> Any:
            st = os.stat(path)
            key = (os.path.realpath(path), mode, st.st_size, st.st_mtime_ns)
            if key not in readers:
                readers[key] = reader_cls(path, mode)
            return readers[key]

        def tensor_name_map(arch: Any, n_blocks: int) -> Any:
            if (arch, n_blocks) not in maps:
                maps[(arch, n_blocks)] = name_map(arch, n_blocks)
            return maps[(arch, n_blocks)]

        setattr(gguf, "GGUFReader", reader)  # noqa: B010  (assigned through setattr: a module attribute, not a type)
        setattr(gguf, "get_tensor_name_map", tensor_name_map)  # noqa: B010
        _gguf_depth = 1
        try:
            yield
        finally:
            _gguf_depth = 0
            setattr(gguf, "GGUFReader", reader_cls)  # noqa: B010
            setattr(gguf, "get_tensor_name_map", name_map)  # noqa: B010
            readers.clear()


_TOKENIZERS: dict[tuple[str, str, str, int | None, bool], PreTrainedTokenizerBase] = {}


def load_tokenizer(ms: ModelSpec, trust_remote_code: bool = False) -> PreTrainedTokenizerBase:
    """The model's tokenizer; kept per process (keyed by source and file time), because `specterm
    run` checks the prompts with it before loading the models, which load it again."""
    where = ms.path / ms.gguf_file if ms.gguf_file and ms.path is not None else ms.path
    stamp = where.stat().st_mtime_ns if where is not None and where.exists() else None
    key = (ms.kind, str(where), ms.spec, stamp, trust_remote_code)
    if key not in _TOKENIZERS:
        while len(_TOKENIZERS) >= 2:  # one pair's tokenizers are kept
            del _TOKENIZERS[next(iter(_TOKENIZERS))]
        _TOKENIZERS[key] = _load_tokenizer(ms, trust_remote_code)
    return _TOKENIZERS[key]


def _load_tokenizer(ms: ModelSpec, trust_remote_code: bool = False) -> PreTrainedTokenizerBase:
    from transformers import AutoTokenizer

    try:
        if ms.kind == "gguf":
            return AutoTokenizer.from_pretrained(str(ms.path), gguf_file=ms.gguf_file)
        if ms.kind == "dir":
            return AutoTokenizer.from_pretrained(str(ms.path), trust_remote_code=trust_remote_code)
        return AutoTokenizer.from_pretrained(ms.spec, trust_remote_code=trust_remote_code)
    except Exception as exc:  # transformers raises many types; the user needs one sentence
        raise SpectermError(load_error(ms, "tokenizer", exc)) from None


def load_error(ms: ModelSpec, what: str, exc: Exception) -> str:
    first = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else exc.__class__.__name__
    if ms.kind == "hub":
        return (f"could not load the {what} of '{ms.spec}' from the Hugging Face hub ({first}); "
                "check the id and your network, or pass a local directory or .gguf file.")
    if ms.kind == "gguf":
        return f"could not read the GGUF file {ms.spec} ({first}); re-download it or pass another checkpoint."
    return f"could not load the {what} from {ms.spec} ({first}); check the directory holds a transformers model."


def check_tokenizers(tok_target: PreTrainedTokenizerBase, tok_draft: PreTrainedTokenizerBase) -> None:
    """SPEC 1.5: same vocabulary and ids, else one clear error naming what differs.

    Padding of the embedding matrix (e.g. 151936 vs 151665 real tokens) is irrelevant here: we
    compare the tokenizers' real vocabularies, not the models' vocab_size.
    """
    vt, vd = tok_target.get_vocab(), tok_draft.get_vocab()
    if vt == vd:
        if tok_target.all_special_ids != tok_draft.all_special_ids:
            raise SpectermError(
                f"draft and target tokenizers share a vocabulary but not special tokens "
                f"({tok_draft.all_special_ids[:5]} vs {tok_target.all_special_ids[:5]}); use a draft from the target's family."
            )
        return
    only_t = sorted(set(vt) - set(vd))
    only_d = sorted(set(vd) - set(vt))
    moved = [k for k in set(vt) & set(vd) if vt[k] != vd[k]]
    parts = [f"target has {len(vt)} tokens, draft {len(vd)}"]
    if only_t:
        parts.append(f"{len(only_t)} only in the target (e.g. {only_t[0]!r})")
    if only_d:
        parts.append(f"{len(only_d)} only in the draft (e.g. {only_d[0]!r})")
    if moved:
        parts.append(f"{len(moved)} shared tokens with different ids (e.g. {moved[0]!r}: {vt[moved[0]]} vs {vd[moved[0]]})")
    raise SpectermError("draft and target tokenizers differ (" + "; ".join(parts) + "); choose a draft from the target's model family.")


def resolve_device(device: str) -> str:
    import torch

    if device == "auto":
        if torch.cuda.is_available():
            local = os.environ.get("LOCAL_RANK")
            return f"cuda:{local}" if local is not None else "cuda"
        if getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available():
            return "mps"
        return "cpu"
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise SpectermError("--device cuda was asked for but torch sees no CUDA GPU; use --device cpu or install a CUDA build of torch.")
    if device == "mps" and not (getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available()):
        raise SpectermError("--device mps was asked for but is not available here; use --device cpu.")
    if device not in ("cpu", "mps") and not device.startswith("cuda"):
        raise SpectermError(f"unknown --device {device}; use auto, cpu, cuda or mps.")
    return device


def resolve_dtype(dtype: str, device: str, any_gguf: bool) -> torch.dtype:
    import torch

    table = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}
    if dtype == "auto":
        if any_gguf or not device.startswith("cuda"):
            return torch.float32
        return torch.bfloat16
    if dtype not in table:
        raise SpectermError(f"unknown --dtype {dtype}; use auto, float32, bfloat16 or float16.")
    return table[dtype]


def load_model(ms: ModelSpec, device: str, dtype: torch.dtype, trust_remote_code: bool = False) -> PreTrainedModel:
    """Load a causal LM in eval mode on `device`. Never unpickles: safetensors or GGUF only."""
    import torch
    from transformers import AutoModelForCausalLM

    kw: dict[str, Any] = {"dtype": dtype}
    model: Any  # transformers' .to() wrapper is typed for a PreTrainedModel argument and .eval() is untyped
    try:
        if ms.kind == "gguf":
            model = AutoModelForCausalLM.from_pretrained(str(ms.path), gguf_file=ms.gguf_file, **kw)
        elif ms.kind == "dir":
            model = AutoModelForCausalLM.from_pretrained(str(ms.path), use_safetensors=True,
                                                         trust_remote_code=trust_remote_code, **kw)
        else:
            model = AutoModelForCausalLM.from_pretrained(ms.spec, use_safetensors=True,
                                                         trust_remote_code=trust_remote_code, **kw)
    except SpectermError:
        raise
    except Exception as exc:
        raise SpectermError(load_error(ms, "model", exc)) from None
    model.to(device)
    model.eval()
    torch.set_grad_enabled(False)
    exact_float32(device, dtype)
    return cast("PreTrainedModel", model)


def exact_float32(device: str, dtype: torch.dtype) -> None:
    """float32 on CUDA computes in IEEE float32: TF32 matmuls (cuBLAS) and convolutions (cuDNN) off.

    torch leaves cuDNN's TF32 on by default, and an earlier setting in the process can turn
    cuBLAS's on; with TF32 (a 10-bit mantissa) the float32 gate is not exact and a CUDA run is not
    comparable with a CPU run bit for bit. Other dtypes are left alone."""
    import torch

    if str(device).startswith("cuda") and dtype == torch.float32:
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False


def layer_skip_draft(target: PreTrainedModel, k: int) -> PreTrainedModel:
    """A draft made of the target's first k decoder layers, then its final norm and LM head.

    Shares every parameter with the target (no copy of weights): a shallow copy of the model and
    of its decoder with a shortened layer list and a config saying k layers.
    """
    import torch.nn as nn

    inner = target.get_decoder()  # type: ignore[no-untyped-call]  # transformers leaves get_decoder unannotated
    n = len(inner.layers)
    if not 1 <= k < n:
        raise SpectermError(f"layers:{k} must keep between 1 and {n - 1} of the target's {n} layers.")
    cfg = copy.deepcopy(target.config)
    cfg.num_hidden_layers = k
    if getattr(cfg, "layer_types", None):
        cfg.layer_types = list(cfg.layer_types)[:k]
    new_inner = copy.copy(inner)
    new_inner._modules = dict(inner._modules)
    new_inner.layers = nn.ModuleList(list(inner.layers)[:k])
    new_inner.config = cfg
    draft = copy.copy(target)
    draft._modules = dict(target._modules)
    attr = next(name for name, mod in target._modules.items() if mod is inner)
    setattr(draft, attr, new_inner)
    draft.config = cfg
    return draft


# ------------------------------------------------------------------ torch helpers (KV cache) ---

_CACHE_KW: dict[type, str] = {}


def cache_kwarg(model: PreTrainedModel) -> str:
    """transformers >= 5.2x names the forward argument `cache`; older versions `past_key_values`."""
    cls = type(model)
    if cls not in _CACHE_KW:
        params = inspect.signature(model.forward).parameters
        _CACHE_KW[cls] = "cache" if "cache" in params else "past_key_values"
    return _CACHE_KW[cls]


def new_cache(model: PreTrainedModel) -> DynamicCache:
    from transformers import DynamicCache

    try:
        return DynamicCache(config=model.config)
    except TypeError:
        return DynamicCache()


def cache_len(cache: DynamicCache) -> int:
    return int(cache.get_seq_length())


def crop_cache(cache: DynamicCache, keep: int) -> None:
    """Drop cached positions from `keep` on (works across transformers' two crop conventions)."""
    drop = cache_len(cache) - keep
    if drop <= 0:
        return
    try:
        cache.crop(-drop)
    except ValueError:
        cache.crop(keep)


def forward_logits(model: PreTrainedModel, ids: torch.Tensor, cache: DynamicCache) -> torch.Tensor:
    """Logits (1 x len(ids) x V) of feeding `ids` (1 x L LongTensor) after what `cache` holds."""
    out = model(input_ids=ids, use_cache=True, **{cache_kwarg(model): cache})
    logits: torch.Tensor = out.logits
    return logits


def eos_ids(model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase) -> set[int]:
    ids: set[int] = set()
    gen = getattr(model, "generation_config", None)
    for src in (getattr(gen, "eos_token_id", None), getattr(model.config, "eos_token_id", None), tokenizer.eos_token_id):
        if isinstance(src, int):
            ids.add(src)
        elif isinstance(src, (list, tuple)):
            ids.update(int(x) for x in src)
    return ids


# ------------------------------------------------------------------ what a cost profile records ---


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
    return {"kind": "cpu", "name": this_machine().cpu, "cores": os.cpu_count(), "threads": threads,
            "memory_gb": _memory_gb(), "driver": None, "capability": None}


def _memory_gb() -> float | None:
    try:
        return round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1)
    except (ValueError, OSError, AttributeError):
        return None


def describe_torch(device: str, threads: int, dtype: Any) -> dict[str, Any]:
    """A cost profile's engine, device and dtype for torch on `device` with `threads` per forward."""
    import torch

    return {"engine": {"name": "torch", "version": torch.__version__, "build": torch_build()},
            "device": torch_device(device, threads), "dtype": dtype}


@dataclass
class TargetOnly:
    """The target (no draft model), its tokenizer, EOS ids and run.json description. `target` None with a
    `loader`: loaded on first use (`model`), so a resumed run whose remaining prompts all come with y and
    gate from --y-from never loads the weights."""

    target: Any
    tokenizer: Any
    eos: set[int]
    meta: dict[str, Any]
    loader: Callable[[], Any] | None = None

    @property
    def model(self) -> Any:
        if self.target is None:
            assert self.loader is not None
            self.target = self.loader()
        return self.target

    @property
    def pad_id(self) -> int:
        pad = self.tokenizer.pad_token_id
        return int(pad) if pad is not None else min(self.eos)



def load_target(config: OracleConfig, report: ProgressCallback = lambda p: None,
                eos: set[int] | None = None) -> TargetOnly:
    """The target and its tokenizer; with `eos` (a resumed run's stored eos_token_ids) the weights load only
    when a prompt needs the target (TargetOnly.model)."""
    from specterm.engines.progress import Progress

    report(Progress("checking", "resolving the target"))
    t_spec = resolve_spec(config.target)
    if t_spec.kind == "layers":
        raise SpectermError("--target must be a model; 'layers:K' is only a draft (the target's first K layers).")
    device = resolve_device(config.device)
    dtype = resolve_dtype(config.dtype, device, t_spec.kind == "gguf")
    if eos is not None:
        report(Progress("loading", f"loading tokenizer of {config.target} (the target loads when a prompt needs it)"))
        tok = load_tokenizer(t_spec, config.trust_remote_code)

        def load() -> Any:
            report(Progress("loading", f"loading target {config.target} (no draft model: the drafters read the context)"))
            return load_model(t_spec, device, dtype, config.trust_remote_code)

        lazy_meta = {"target": t_spec.describe(), "tokenizer_vocab": len(tok.get_vocab()), "device": device,
                     "dtype": str(dtype).replace("torch.", "")}
        return TargetOnly(None, tok, set(eos), lazy_meta, loader=load)
    with gguf_parsed_once():
        report(Progress("loading", f"loading tokenizer of {config.target}"))
        tok = load_tokenizer(t_spec, config.trust_remote_code)
        report(Progress("loading", f"loading target {config.target} (no draft model: the drafters read the context)"))
        target = load_model(t_spec, device, dtype, config.trust_remote_code)
    meta = {
        "target": {**t_spec.describe(), "class": type(target).__name__,
                   "layers": target.config.num_hidden_layers, "vocab_size": target.config.vocab_size},
        "tokenizer_vocab": len(tok.get_vocab()),
        "device": device,
        "dtype": str(dtype).replace("torch.", ""),
    }
    return TargetOnly(target, tok, eos_ids(target, tok), meta)
