"""The first K decoder blocks of a llama-architecture GGUF, with its embedding, final norm and
(tied) head, written as a GGUF that transformers loads: a real checkpoint small enough to carry.

Why GGUF and not safetensors: SmolLM2-135M's embedding alone is 49152 x 576 = 28.3M parameters,
56.6 MB in float16 or bfloat16, above the 40 MB a carried model may take. Its GGUF stores the
embedding in Q8_0 (30.1 MB) and each block in Q4_1 (2.2 MB); the tensors are copied byte for byte,
so the file is the first K blocks of the real checkpoint, and transformers dequantizes them to the
dtype asked for (specterm loads GGUF in float32).

    size(K) = fixed + K * per_block        fixed = header, metadata (tokenizer) and the tensors
                                           outside blk.*; every block has the same bytes (checked)
    K = max { K : size(K) <= max_bytes }, at most n_blocks - 1

    python benchmarks/gpu/cut_gguf.py SRC.gguf OUT.gguf [--max-bytes 40000000] [--check]

--check loads the cut file and the source with transformers (float32, CPU), checks the cut has K
layers and a head tied to its embedding, and that its logits on a prompt equal those of
specterm's `layers:K` self-draft of the source (the same first K blocks, final norm and head).
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from typing import Any

MAX_BYTES = 40_000_000  # 40 MB (decimal): the bound on the carried model
_BLOCK = re.compile(r"^blk\.(\d+)\.")


def block_sizes(tensors: list[tuple[str, int]]) -> tuple[int, int, int]:
    """(bytes of the tensors outside blk.*, bytes of one block, number of blocks) from (name, bytes)
    pairs; every block must have the same bytes."""
    per: dict[int, int] = {}
    fixed = 0
    for name, nbytes in tensors:
        m = _BLOCK.match(name)
        if m is None:
            fixed += nbytes
        else:
            per[int(m.group(1))] = per.get(int(m.group(1)), 0) + nbytes
    if not per or sorted(per) != list(range(len(per))):
        raise SystemExit("the GGUF has no blocks numbered blk.0 .. blk.N-1; pass a llama-architecture GGUF.")
    if len(set(per.values())) != 1:
        raise SystemExit(f"the GGUF's blocks differ in size ({sorted(set(per.values()))}); cutting by size needs equal blocks.")
    return fixed, per[0], len(per)


def layers_that_fit(max_bytes: int, fixed: int, per_block: int, n_blocks: int) -> int:
    """K = floor((max_bytes - fixed) / per_block), at most n_blocks - 1 (a cut, not the whole model);
    0 when not even one block fits."""
    if max_bytes <= fixed:
        return 0
    return min((max_bytes - fixed) // per_block, n_blocks - 1)


def _field_value(field: Any) -> Any:
    return field.contents()


def write_first_blocks(src: Path, out: Path, k: int) -> None:
    """Copy SRC's metadata (block count set to k) and the tensors of blocks 0..k-1 and outside blk.*."""
    import gguf

    reader = gguf.GGUFReader(str(src))
    arch = _field_value(reader.fields["general.architecture"])
    block_key = f"{arch}.block_count"
    writer = gguf.GGUFWriter(str(out), arch=arch, endianess=reader.endianess)
    for field in reader.fields.values():
        # the architecture and GGUF.* are written by GGUFWriter itself (as in gguf's gguf_new_metadata.py)
        if field.name == "general.architecture" or field.name.startswith("GGUF."):
            continue
        vtype = field.types[0]
        sub = field.types[-1] if vtype == gguf.GGUFValueType.ARRAY else None
        value = k if field.name == block_key else _field_value(field)
        writer.add_key_value(field.name, value, vtype, sub_type=sub)
    keep = [t for t in reader.tensors if (m := _BLOCK.match(t.name)) is None or int(m.group(1)) < k]
    for t in keep:
        writer.add_tensor_info(t.name, t.data.shape, t.data.dtype, t.data.nbytes, t.tensor_type)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_ti_data_to_file()
    for t in keep:
        writer.write_tensor_data(t.data)
    writer.close()


def cut(src: Path, out: Path, max_bytes: int) -> int:
    """Write the largest first-K-blocks cut of SRC that fits in max_bytes; returns K."""
    import gguf

    reader = gguf.GGUFReader(str(src))
    fixed_tensors, per_block, n_blocks = block_sizes([(t.name, int(t.n_bytes)) for t in reader.tensors])
    fixed = int(reader.data_offset) + fixed_tensors  # header + metadata + tensor infos, then the data
    k = layers_that_fit(max_bytes, fixed, per_block, n_blocks)
    print(f"{src.name}: {n_blocks} blocks of {per_block / 1e6:.3f} MB, {fixed / 1e6:.3f} MB outside them "
          f"(header and tokenizer {reader.data_offset / 1e6:.3f} MB); K = {k} fits {max_bytes / 1e6:.1f} MB")
    while k >= 2:
        write_first_blocks(src, out, k)
        if out.stat().st_size <= max_bytes:  # alignment padding is not in the estimate
            print(f"wrote {out}: {k} blocks, {out.stat().st_size} bytes ({out.stat().st_size / 2**20:.2f} MiB)")
            return k
        k -= 1
    out.unlink(missing_ok=True)
    raise SystemExit(f"fewer than 2 blocks of {src.name} fit in {max_bytes} bytes; raise --max-bytes.")


def check(src: Path, out: Path, k: int) -> None:
    """The cut loads in transformers (float32), has k layers, a head tied to its embedding, and its
    logits equal those of `layers:k` of the source on one prompt (CPU, float32)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from specterm.engines.torch.models_torch import layer_skip_draft

    torch.set_num_threads(1)

    def load(path: Path) -> Any:
        return AutoModelForCausalLM.from_pretrained(str(path.parent), gguf_file=path.name, dtype=torch.float32).eval()

    small, full = load(out), load(src)
    tok = AutoTokenizer.from_pretrained(str(out.parent), gguf_file=out.name)
    head, emb = small.get_output_embeddings().weight, small.get_input_embeddings().weight
    tied = head.data_ptr() == emb.data_ptr()
    assert small.config.num_hidden_layers == k == len(small.get_decoder().layers), "the cut has the wrong number of layers"
    assert tied and small.config.tie_word_embeddings, "the cut's head is not tied to its embedding"
    ids = torch.tensor([tok("def fibonacci(n):\n    \"\"\"Return the n-th Fibonacci number.\"\"\"\n").input_ids])
    with torch.no_grad():
        got = small(ids).logits
        want = layer_skip_draft(full, k)(ids).logits
    diff = float((got - want).abs().max())
    print(f"check: {k} layers, head tied to the embedding, float32 logits of {ids.shape[1]} positions: "
          f"max |cut - layers:{k} of the source| = {diff:g}")
    assert diff == 0.0, "the cut's logits differ from layers:K of the source"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("src", type=Path)
    ap.add_argument("out", type=Path)
    ap.add_argument("--max-bytes", type=int, default=MAX_BYTES)
    ap.add_argument("--check", action="store_true", help="load both with transformers and compare logits (about a minute)")
    a = ap.parse_args(argv)
    a.out.parent.mkdir(parents=True, exist_ok=True)
    k = cut(a.src, a.out, a.max_bytes)
    if a.check:
        check(a.src, a.out, k)
    return 0


if __name__ == "__main__":
    sys.exit(main())
