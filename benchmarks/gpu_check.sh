#!/usr/bin/env bash
# GPU check for issue 18 (SPEC 1 and 6 on CUDA): one short script, about 8 minutes on one GPU.
#
#   SPECTERM_MODELS=/path/to/models bash benchmarks/gpu_check.sh [OUT_DIR]
#
# $SPECTERM_MODELS must hold smollm2-135m-instruct/, qwen2.5-coder-0.5b-instruct/ and
# qwen2.5-coder-1.5b-instruct/, each with model.gguf (the files of /work/models). Steps:
#   1. the oracle on CUDA, float32 with TF32 off (NVIDIA_TF32_OVERRIDE=0), SmolLM2 self-draft (layers:25)
#      and the Qwen pair, 2 prompts per corpus, 64 tokens; the same prompts on the CPU (float32, 4 threads);
#   2. bits compared stream by stream between the CUDA and the CPU runs (exact greedy: they must agree
#      unless a near-tie flips; the gate rate of every stream is printed);
#   3. the default dtype on CUDA (bfloat16) for the Qwen pair, bits compared likewise (differences expected
#      where bfloat16 flips a near-tie: counted, not failed);
#   4. costs by batch on CUDA (B = 1, 2, 4, 8 and the sparse grid of oracle/costs.py) and a confirmation
#      of the Qwen CUDA run (every corpus, 2 prompts, its decision g_hw), then `specterm report` (json).
# Everything goes to OUT_DIR (default ./gpu_check_out): runs, logs, reports and bits_compare.txt.
set -euo pipefail

OUT=${1:-gpu_check_out}
MODELS=${SPECTERM_MODELS:?set SPECTERM_MODELS to the folder holding the three models}
mkdir -p "$OUT"
SMOL=$MODELS/smollm2-135m-instruct/model.gguf
QT=$MODELS/qwen2.5-coder-1.5b-instruct/model.gguf
QD=$MODELS/qwen2.5-coder-0.5b-instruct/model.gguf
COMMON=(--limit 2 --max-new-tokens 64 --headless)
t0=$(date +%s)
log() { echo "[$(( $(date +%s) - t0 ))s] $*" | tee -a "$OUT/gpu_check.log"; }

nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv | tee -a "$OUT/gpu_check.log" || true
python -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda, torch.cuda.get_device_name(0))" \
  | tee -a "$OUT/gpu_check.log"

log "1a. CUDA float32, TF32 off: SmolLM2 self-draft"
NVIDIA_TF32_OVERRIDE=0 specterm run --target "$SMOL" --draft layers:25 --device cuda --dtype float32 \
  "${COMMON[@]}" --out "$OUT/smol-cuda-f32" >>"$OUT/gpu_check.log" 2>&1
log "1b. CUDA float32, TF32 off: Qwen pair"
NVIDIA_TF32_OVERRIDE=0 specterm run --target "$QT" --draft "$QD" --device cuda --dtype float32 \
  "${COMMON[@]}" --out "$OUT/qwen-cuda-f32" >>"$OUT/gpu_check.log" 2>&1
log "1c. CPU float32, the same prompts (4 threads)"
OMP_NUM_THREADS=4 specterm run --target "$SMOL" --draft layers:25 --device cpu --dtype float32 --no-cost \
  "${COMMON[@]}" --out "$OUT/smol-cpu-f32" >>"$OUT/gpu_check.log" 2>&1
OMP_NUM_THREADS=4 specterm run --target "$QT" --draft "$QD" --device cpu --dtype float32 --no-cost \
  "${COMMON[@]}" --out "$OUT/qwen-cpu-f32" >>"$OUT/gpu_check.log" 2>&1
log "3. CUDA default dtype: Qwen pair"
specterm run --target "$QT" --draft "$QD" --device cuda "${COMMON[@]}" --out "$OUT/qwen-cuda-default" \
  >>"$OUT/gpu_check.log" 2>&1

log "2. bits compared"
python - "$OUT" <<'PY' | tee "$OUT/bits_compare.txt"
import sys
from pathlib import Path

from specterm.core.store import load_run

out = Path(sys.argv[1])
for a, b in (("smol-cuda-f32", "smol-cpu-f32"), ("qwen-cuda-f32", "qwen-cpu-f32"), ("qwen-cuda-default", "qwen-cpu-f32")):
    ra, rb = load_run(out / a), load_run(out / b)
    by_id = {s.id: s for s in rb.streams}
    same = diff = 0
    for s in ra.streams:
        t = by_id.get(s.id)
        if t is None:
            continue
        n = min(s.n, t.n)
        ok = s.bits[:n].tolist() == t.bits[:n].tolist() and s.n == t.n
        same += ok
        diff += not ok
        if not ok:
            first = next((i for i in range(n) if s.bits[i] != t.bits[i]), n)
            print(f"{a} vs {b}: {s.id} differs from position {first} (lengths {s.n}, {t.n})")
    gates = [s.valid_len / s.n for s in ra.streams if s.n]
    print(f"{a} vs {b}: {same} identical streams, {diff} differ; gate rate min {min(gates):.3f}")
PY

log "4a. costs by batch and a confirmation on CUDA (Qwen, float32, TF32 off)"
NVIDIA_TF32_OVERRIDE=0 specterm confirm "$OUT/qwen-cuda-f32" -k 2 -n 64 --decision-only --batch-costs --repeats 5 \
  >>"$OUT/gpu_check.log" 2>&1
log "4b. batched confirmation at B = 4 (code)"
NVIDIA_TF32_OVERRIDE=0 specterm confirm "$OUT/qwen-cuda-f32" -k 4 -n 64 --corpus code --batch 4 --repeats 2 \
  >>"$OUT/gpu_check.log" 2>&1 || log "batched confirmation failed (see log)"
for r in qwen-cuda-f32 smol-cuda-f32 qwen-cuda-default; do
  specterm report "$OUT/$r" --format json -o "$OUT/$r.report.json" >>"$OUT/gpu_check.log" 2>&1
  specterm report "$OUT/$r" --format md -o "$OUT/$r.report.md" >>"$OUT/gpu_check.log" 2>&1
done
python - "$OUT" <<'PY' | tee -a "$OUT/gpu_check.log"
import json
import sys
from pathlib import Path

out = Path(sys.argv[1])
rep = json.loads((out / "qwen-cuda-f32.report.json").read_text())
for name, s in rep["sets"].items():
    d = s["decision_hw"]
    print(f"{name:>12}: {d['verdict']}")
    print(f"{'':>12}  by batch: " + ", ".join(f"B={r['batch']} g={r['gamma_hw']} {r['speedup_hw']['value']:.2f}x"
                                             for r in d.get("by_batch", [])) + f"; B_hw = {d.get('batch_crossover')}")
    for c in d["confirmed"]:
        print(f"{'':>12}  confirmed g={c['gamma']}: realized {c['realized']:.2f}x, decision predicts "
              f"{c['decision_predicted']['value']:.2f}x {c['decision_predicted']['ci']}, in PI {c['in_ci']}, sign {c['sign_held']}")
PY
log "done: $(( $(date +%s) - t0 )) s"
