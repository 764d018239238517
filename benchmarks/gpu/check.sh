#!/usr/bin/env bash
# The GPU check (SPEC 1 and 6 on CUDA), for a box where nothing can be fetched: one command, within
# a budget (default 480 s), using only what benchmarks/gpu/prepare.sh put in CARRY.
#
#   bash benchmarks/gpu/check.sh DEST [--device cuda|cpu] [--budget-s 480] [--carry DIR]
#   bash benchmarks/gpu/check.sh DEST --synthetic [--device cuda|cpu] [--budget-s 480] [--shrink] [--sizes 1.5B,7B]
#
# --synthetic: real sizes with nothing carried but the config (benchmarks/gpu/synthetic.py, issue 51):
# Qwen2-architecture pairs of real shapes (0.5B-shaped draft; 1.5B- and, where memory allows, 7B-shaped
# targets) with seeded random weights built on the box, the oracle in float32 and bfloat16, `costs` with
# the block overhead and `confirm` at the decision's g and two others through a replay drafter (the
# shipped Qwen run's bits), and Hugging Face assisted generation timed against greedy. specterm comes
# from this repository (PYTHONPATH), nothing is installed; DEST gets check.log, synthetic.json and
# synthetic.md. --shrink: small shapes of the same architecture (the `--device cpu` dry run).
#
# DEST (new or empty) gets at most 8 files, each <= 16 MiB: check.log, env.json, device_vs_cpu.json,
# bf16_vs_f32.json, report.json, runs.tar.gz (the three runs), summary.md. The summary table is
# printed last. Steps, each logging its time; one that cannot finish before the budget is not started
# (or is stopped with SIGINT: a run keeps its finished prompts), and the results so far are kept:
#   install      the carried wheels the box lacks, into a temporary folder put first on PYTHONPATH
#                (pip install --no-index --no-deps --target; specterm always, from its wheel)
#   env          python, torch, CUDA, the GPU (torch.cuda.get_device_name, memory, capability), TF32
#   device-f32   the oracle on --device, float32, TF32 off (specterm sets it for float32 on CUDA;
#                NVIDIA_TF32_OVERRIDE=0 too), 2 prompts per corpus, 64 tokens
#   cpu-f32      the same prompts on the CPU, float32
#   device_vs_cpu  bits (and y) compared stream by stream (results.py compare)
#   device-bf16  the same on --device in bfloat16 (specterm's default dtype on CUDA, except for GGUF)
#   bf16_vs_f32  flips counted against device-f32
#   costs        `specterm costs RUN --batch`: a cost profile of this machine (its GPU's name, the
#                engine, c_decode, c_verify(g), c_draft and the by-batch grid) added to device-f32
#   confirm      `specterm confirm RUN -k 1 --corpus code,prose --decision-only`: realized speedup at
#                the run's g_hw, outputs checked against the stored y (two corpora: a minute on 2 CPU cores)
#   report       `specterm report RUN --format json`
# Nothing is fetched: the hub and pip are offline (HF_HUB_OFFLINE, TRANSFORMERS_OFFLINE, PIP_NO_INDEX),
# caches live in a temporary folder. PYTHON (default python3) is the box's python.
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
usage() { echo "usage: check.sh DEST [--device cuda|cpu] [--budget-s 480] [--carry DIR] | DEST --synthetic [--device cuda|cpu] [--budget-s 480] [--shrink] [--sizes 1.5B,7B]" >&2; exit 2; }
[ $# -ge 1 ] || usage
DEST=$1; shift
DEVICE=cuda; BUDGET=480; CARRY=$HERE/carry; SYNTHETIC=0; SHRINK=(); SIZES=1.5B,7B
while [ $# -gt 0 ]; do
  case $1 in
    --device) DEVICE=${2:-}; shift 2 ;;
    --budget-s) BUDGET=${2:-}; shift 2 ;;
    --carry) CARRY=${2:-}; shift 2 ;;
    --synthetic) SYNTHETIC=1; shift ;;
    --shrink) SHRINK=(--shrink); shift ;;
    --sizes) SIZES=${2:-}; shift 2 ;;
    *) usage ;;
  esac
done
[[ $DEVICE == cuda || $DEVICE == cpu || $DEVICE == cuda:* ]] || { echo "--device must be cuda or cpu" >&2; exit 2; }
[[ $BUDGET =~ ^[0-9]+$ ]] || { echo "--budget-s must be a whole number of seconds" >&2; exit 2; }
if (( SYNTHETIC )); then
  mkdir -p "$DEST" && DEST=$(cd "$DEST" && pwd)
  [ -z "$(ls -A "$DEST")" ] || { echo "$DEST is not empty; give a new or empty folder for the results." >&2; exit 2; }
  REPO=$(cd "$HERE/../.." && pwd)
  export PYTHONPATH=$REPO${PYTHONPATH:+:$PYTHONPATH} HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 PIP_NO_INDEX=1
  export TOKENIZERS_PARALLELISM=false PYTHONDONTWRITEBYTECODE=1 NVIDIA_TF32_OVERRIDE=0 SPECTERM_CACHE=
  WORK=$(mktemp -d "${TMPDIR:-/tmp}/specterm-synthetic.XXXXXX")
  # the runs stay in WORK (removed after); the numbers go to DEST; SIGINT at the budget keeps what is written
  timeout --foreground --signal=INT --kill-after=20 "$BUDGET" "${PYTHON:-python3}" "$HERE/synthetic.py" "$WORK" \
    --device "$DEVICE" --budget-s $(( BUDGET > 60 ? BUDGET - 30 : BUDGET )) --sizes "$SIZES" "${SHRINK[@]}" >"$DEST/check.log" 2>&1
  rc=$?
  for f in synthetic.json synthetic.md; do [ -f "$WORK/$f" ] && cp "$WORK/$f" "$DEST/$f"; done
  rm -rf "$WORK"
  [ -f "$DEST/synthetic.md" ] && cat "$DEST/synthetic.md"
  exit $rc
fi
[ -f "$CARRY/manifest.json" ] || { echo "$CARRY/manifest.json is missing; run benchmarks/gpu/prepare.sh on a connected machine and copy its folder here." >&2; exit 2; }
mkdir -p "$DEST" && DEST=$(cd "$DEST" && pwd) && CARRY=$(cd "$CARRY" && pwd)
[ -z "$(ls -A "$DEST")" ] || { echo "$DEST is not empty; give a new or empty folder for the results." >&2; exit 2; }

PY=${PYTHON:-python3}
T0=$(date +%s)
WORK=$(mktemp -d "${TMPDIR:-/tmp}/specterm-gpu-check.XXXXXX")
SITE=$WORK/site; RUNS=$WORK/runs; LOG=$WORK/check.log
mkdir -p "$SITE" "$RUNS" "$WORK/notes"
RESERVE=45  # seconds kept for the report, the summary and packing the results

export PYTHONPATH=$SITE${PYTHONPATH:+:$PYTHONPATH}
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_DATASETS_OFFLINE=1 PIP_NO_INDEX=1 PIP_DISABLE_PIP_VERSION_CHECK=1
export HF_HOME=$WORK/hf XDG_CACHE_HOME=$WORK/cache SPECTERM_MODELS=$CARRY/model
export TOKENIZERS_PARALLELISM=false PYTHONDONTWRITEBYTECODE=1 NVIDIA_TF32_OVERRIDE=0
unset TORCH_ALLOW_TF32_CUBLAS_OVERRIDE

elapsed() { echo $(( $(date +%s) - T0 )); }
log() { echo "[$(elapsed)s] $*" | tee -a "$LOG" >&2; }
record() { printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "${4:-}" >>"$WORK/steps.tsv"; }

# step NAME NEED_S CMD...: run CMD (output to the log) if at least NEED_S seconds are left before the
# reserve, stopped with SIGINT when the budget runs out; one row of steps.tsv either way.
step() {
  local name=$1 need=$2; shift 2
  local left=$(( BUDGET - RESERVE - $(elapsed) ))
  if (( left < need )); then
    (( left < 0 )) && left=0
    log "$name: skipped, ${left}s left before the reserve and it needs ~${need}s"
    record "$name" skipped 0 "budget: ${left}s left, needs ~${need}s"; return 1
  fi
  log "$name: start (at most ${left}s)"
  local s rc dt
  s=$(date +%s)
  echo "----- $name: $*" >>"$LOG"
  # --foreground: Ctrl-C reaches the step too (timeout would otherwise put it in a process group of its own)
  timeout --foreground --signal=INT --kill-after=20 "$left" "$@" >>"$LOG" 2>&1; rc=$?
  dt=$(( $(date +%s) - s ))
  case $rc in
    0) record "$name" ok "$dt"; log "$name: ok in ${dt}s" ;;
    124|137) record "$name" "stopped at the budget" "$dt"; log "$name: stopped at the budget after ${dt}s" ;;
    *) record "$name" "failed (rc $rc)" "$dt"; log "$name: failed (rc $rc) after ${dt}s; see check.log" ;;
  esac
  return $rc
}
needs() {  # needs NAME FILE...: record NAME as skipped unless every FILE exists
  local name=$1; shift
  for f in "$@"; do
    [ -e "$f" ] || { record "$name" skipped 0 "needs $(basename "$(dirname "$f")")/$(basename "$f")"; log "$name: skipped (no $f)"; return 1; }
  done
}
ST=("$PY" -P -m specterm)  # -P: the installed wheel, never a specterm/ in the working directory

packed=0
finish() {
  (( packed )) && return
  packed=1
  log "packing the results into $DEST"
  for f in check.log env.json device_vs_cpu.json bf16_vs_f32.json report.json; do
    [ -f "$WORK/$f" ] && cp "$WORK/$f" "$DEST/$f"
  done
  if [ -n "$(ls -A "$RUNS")" ]; then
    tar -czf "$DEST/runs.tar.gz" -C "$WORK" --exclude=run.lock runs
  fi
  if "$PY" "$HERE/results.py" limits "$DEST" 2>>"$LOG"; then
    record results ok 0 "$(ls "$DEST" | wc -l) files in $DEST, each <= 16 MiB (summary.md next)"
  else
    record results "over the limits" 0 "see check.log"
  fi
  record total "" "$(elapsed)" "budget ${BUDGET}s, device $DEVICE"
  "$PY" "$HERE/results.py" summary "$WORK" >"$DEST/summary.md" 2>>"$LOG" || echo "summary failed: see check.log" >"$DEST/summary.md"
  cp "$LOG" "$DEST/check.log"
  echo
  cat "$DEST/summary.md"
  rm -rf "$WORK"
}
trap finish EXIT
trap 'log "interrupted"; exit 130' INT TERM

read -r TARGET DRAFT < <("$PY" -c 'import json,sys; m=json.load(open(sys.argv[1])); print(sys.argv[2] + "/" + m["target"], m["draft"])' \
                          "$CARRY/manifest.json" "$CARRY")
log "check: device $DEVICE, budget ${BUDGET}s, target $TARGET, draft $DRAFT, work $WORK"

# ---- install: the carried wheels this python lacks (specterm always), into $SITE
install_wheels() {
  local names
  names=$("$PY" - "$CARRY/wheels" <<'PY'
import platform, re, sys
from importlib import metadata
from pathlib import Path

# A wheel fits this python when its tags are py3-none-any or this CPython's on Linux x86-64.
cp = f"cp{sys.version_info.major}{sys.version_info.minor}"
def fits(whl: Path) -> bool:
    py, abi, plat = whl.name[:-4].split("-")[-3:]
    pure = abi == "none" and plat == "any" and "py3" in py.split(".")
    return pure or (cp in py.split(".") and abi in (cp, "abi3", "none") and platform.machine() in plat)

wheels: dict[str, list[Path]] = {}
for whl in Path(sys.argv[1]).glob("*.whl"):
    wheels.setdefault(re.sub(r"[-_.]+", "-", whl.name.split("-")[0]).lower(), []).append(whl)
for name in sorted(wheels):
    if name != "specterm":
        try:
            print(f"present: {name} {metadata.version(name)}", file=sys.stderr)
            continue
        except metadata.PackageNotFoundError:
            pass
    if not any(fits(w) for w in wheels[name]):
        print(f"no wheel for this python ({cp}): {name}, left out", file=sys.stderr)
        continue
    print(name)

# Warn (in the log) where the box's own version of a package does not meet a carried wheel's requirement.
try:
    import zipfile
    from packaging.requirements import Requirement
except ImportError:
    sys.exit(0)
for whls in wheels.values():
    with zipfile.ZipFile(whls[0]) as z:
        meta = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
        lines = z.read(meta).decode("utf-8", "replace").splitlines()
    for line in (l for l in lines if l.startswith("Requires-Dist:")):
        req = Requirement(line.split(":", 1)[1].strip())
        if req.marker is not None and not req.marker.evaluate({"extra": ""}):
            continue
        try:
            have = metadata.version(req.name)
        except metadata.PackageNotFoundError:
            continue
        if req.specifier and not req.specifier.contains(have, prereleases=True):
            print(f"warning: this python has {req.name} {have}, but {whls[0].name} asks for {req}", file=sys.stderr)
PY
)
  echo "installing: $(echo $names)"
  echo "into a temporary folder: $(echo $names)" >"$NOTES/install.txt"
  if "$PY" -m pip --version >/dev/null 2>&1; then
    # --isolated and no config file: only the carried wheels, whatever this machine's pip settings say
    # shellcheck disable=SC2086  # names: one distribution name per word
    PIP_CONFIG_FILE=/dev/null "$PY" -m pip --isolated install --no-index --no-deps --find-links "$CARRY/wheels" --target "$SITE" $names
  else  # no pip on the box: a wheel is a zip of what goes on sys.path
    # shellcheck disable=SC2086
    "$PY" - "$CARRY/wheels" "$SITE" $names <<'PY'
import re, sys, zipfile
from pathlib import Path

wheels, site, names = Path(sys.argv[1]), sys.argv[2], set(sys.argv[3:])
tag = f"cp{sys.version_info.major}{sys.version_info.minor}"
for whl in sorted(wheels.glob("*.whl")):
    name = re.sub(r"[-_.]+", "-", whl.name.split("-")[0]).lower()
    if name in names and ("-py3-none-" in whl.name or f"-{tag}-" in whl.name):
        zipfile.ZipFile(whl).extractall(site)
        print("unpacked", whl.name)
PY
  fi
  "$PY" -P -c 'import specterm, specterm.cli, textual, textual_plotext, gguf, transformers, torch, sys
assert specterm.__file__.startswith(sys.argv[1]), specterm.__file__
print("imports ok; specterm from", specterm.__file__)' "$SITE"
}
NOTES=$WORK/notes
export -f install_wheels; export PY CARRY SITE NOTES
step install 10 bash -c install_wheels || true

# ---- env: what this box is (one json file and one line for the summary)
step env 5 "$PY" -P - "$DEVICE" "$WORK/env.json" "$WORK/notes/env.txt" <<'PY' || true
import json, os, platform, subprocess, sys

import torch

device, out, note = sys.argv[1:4]
env = {"python": sys.version.split()[0], "platform": platform.platform(), "torch": torch.__version__,
       "cuda_build": torch.version.cuda, "threads": torch.get_num_threads(), "cpu": None,
       "cuda_available": torch.cuda.is_available(), "NVIDIA_TF32_OVERRIDE": os.environ.get("NVIDIA_TF32_OVERRIDE")}
try:
    env["cpu"] = next(line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name"))
except (OSError, StopIteration):
    env["cpu"] = platform.processor()
import specterm, transformers
env["specterm"], env["transformers"] = getattr(specterm, "__version__", "?"), transformers.__version__
line = f"python {env['python']}, torch {env['torch']}, transformers {env['transformers']}, {env['cpu']}"
if device.startswith("cuda"):
    if not torch.cuda.is_available():
        json.dump(env, open(out, "w"), indent=1)
        sys.exit("torch sees no CUDA device; run with --device cpu or check the driver (nvidia-smi).")
    props = torch.cuda.get_device_properties(0)
    env["gpu"] = {"name": torch.cuda.get_device_name(0), "memory_gib": round(props.total_memory / 2**30, 1),
                  "capability": f"{props.major}.{props.minor}", "count": torch.cuda.device_count()}
    try:
        env["gpu"]["driver"] = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                                              capture_output=True, text=True, timeout=20).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        env["gpu"]["driver"] = None
    # what specterm sets for float32 on CUDA (specterm.engines.torch.models_torch.exact_float32), checked here
    from specterm.engines.torch.models_torch import exact_float32
    exact_float32(device, torch.float32)
    env["tf32_after_exact_float32"] = {"matmul": torch.backends.cuda.matmul.allow_tf32, "cudnn": torch.backends.cudnn.allow_tf32}
    g = env["gpu"]
    line = (f"{g['name']} ({g['memory_gib']} GiB, sm {g['capability']}, driver {g['driver']}), CUDA {env['cuda_build']}, "
            f"TF32 off: {not any(env['tf32_after_exact_float32'].values())}; " + line)
json.dump(env, open(out, "w"), indent=1)
open(note, "w").write(line)
print(line)
PY

COMMON=(--target "$TARGET" --draft "$DRAFT" --limit 2 --max-new-tokens 64 --headless)
step device-f32 40 "${ST[@]}" run "${COMMON[@]}" --device "$DEVICE" --dtype float32 --no-cost --out "$RUNS/device-f32" || true
step cpu-f32 40 "${ST[@]}" run "${COMMON[@]}" --device cpu --dtype float32 --no-cost --out "$RUNS/cpu-f32" || true
needs device_vs_cpu "$RUNS/device-f32/prompts.jsonl" "$RUNS/cpu-f32/prompts.jsonl" &&
  step device_vs_cpu 5 bash -c '"$0" "$1" compare "$2" "$3" >"$4"' "$PY" "$HERE/results.py" "$RUNS/device-f32" "$RUNS/cpu-f32" "$WORK/device_vs_cpu.json"
step device-bf16 40 "${ST[@]}" run "${COMMON[@]}" --device "$DEVICE" --dtype bfloat16 --no-cost --out "$RUNS/device-bf16" || true
needs bf16_vs_f32 "$RUNS/device-bf16/prompts.jsonl" "$RUNS/device-f32/prompts.jsonl" &&
  step bf16_vs_f32 5 bash -c '"$0" "$1" compare "$2" "$3" >"$4"' "$PY" "$HERE/results.py" "$RUNS/device-bf16" "$RUNS/device-f32" "$WORK/bf16_vs_f32.json"

# the cost profile of this machine (GPU name, engine, dtype, samples) with the by-batch grid; --busy-ok: on the
# one visit a busy machine is measured and marked busy (every verdict from it says so) rather than waited for
needs costs "$RUNS/device-f32/run.json" &&
  step costs 30 "${ST[@]}" costs "$RUNS/device-f32" --batch --busy-ok --max-seconds 90
needs confirm "$RUNS/device-f32/run.json" &&
  step confirm 40 "${ST[@]}" confirm "$RUNS/device-f32" -k 1 -n 64 --corpus code,prose --decision-only
RESERVE=15  # the report uses the reserve kept for it
needs report "$RUNS/device-f32/prompts.jsonl" && step report 10 "${ST[@]}" report "$RUNS/device-f32" --format json -o "$WORK/report.json" --no-cache
exit 0
