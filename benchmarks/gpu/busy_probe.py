"""Does another busy process change a forward's cost? Times c_decode, c_draft and c_verify(3) with
0, 1, 4 and 12 CPU-bound processes beside (each a `while True: pass`), on the GPU and on the CPU at
several thread counts, and prints each cost as a ratio to the same device's first quiet round, with the
other processes' CPU that `specterm costs` reads meanwhile and whether it would call the round busy
(engines/costs.Quiet, the same reading).
It is the evidence behind that busy rule: a forward is slowed by
other processes only when they leave it fewer free cores than it uses.

    python benchmarks/gpu/busy_probe.py MODEL.gguf [--device cuda] [--repeats 31]

MODEL: a GGUF checkpoint (benchmarks/gpu/prepare.sh's cut SmolLM2 on the GPU box); the draft is its
first 2 layers. Needs torch and transformers; specterm from this tree or its wheel.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))


def hogs(n: int) -> list[subprocess.Popen]:
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--repeats", type=int, default=31)
    ap.add_argument("--cpu-threads", default="16,8", help="torch threads of the CPU rows (comma-separated)")
    a = ap.parse_args()

    import torch

    from specterm.engines.torch.costs_torch import measure_costs
    from specterm.engines.costs import Quiet
    from specterm.engines.torch.models_torch import layer_skip_draft, load_model, resolve_spec

    cores = os.cpu_count() or 1
    print(f"{cores} cores; torch {torch.__version__}; {a.repeats} repeats a quantity", flush=True)
    ms = resolve_spec(a.model, hash_files=False)
    ctx = list(range(100, 200))
    rows = []
    plans: list[tuple[str, int, list[int]]] = []
    if a.device.startswith("cuda"):
        plans.append((a.device, 1, [0, 1, 4, 12, 0]))
    for t in (int(x) for x in a.cpu_threads.split(",") if x.strip()):
        plans.append(("cpu", t, [0, 1, max(1, cores - t), 0]))
    for device, threads, levels in plans:
        torch.set_num_threads(threads)
        target = load_model(ms, device, torch.float32)
        draft = layer_skip_draft(target, 2)
        base = None
        for n in levels:
            procs = hogs(n)
            try:
                time.sleep(0.5)
                quiet = Quiet()
                cost = measure_costs(target, draft, ctx, gammas=(3,), repeats=a.repeats)
                other, load = quiet.read()
            finally:  # never leave a busy process behind (Ctrl-C, a failed forward)
                for p in procs:
                    p.kill()
                for p in procs:
                    p.wait()
            seen = ("n/a" if other is None else f"{other:.2f}") + " cores" + (" (busy)" if quiet.busy(other, load) else "")
            c = {"decode": cost["c_decode_s"], "draft": cost["c_draft_s"], "verify:3": cost["c_verify_s"]["3"]}
            base = base or c
            ratio = {k: c[k] / base[k] for k in c}
            rows.append((device, threads, n, other, c, ratio))
            print(f"{device:5s} threads {threads:2d}  busy processes {n:2d}  other {seen:>17}  "
                  + "  ".join(f"{k} {c[k] * 1e3:7.2f} ms ({ratio[k]:.2f}x)" for k in c), flush=True)
        del target, draft
    worst = {(d, t): max(max(r.values()) for dd, tt, n, _, _, r in rows if (dd, tt) == (d, t) and n)
             for d, t, _ in plans}
    print("worst ratio to quiet with others busy:", ", ".join(f"{d} {t} thread(s) {w:.2f}x" for (d, t), w in worst.items()))
    print("quiet again (last row / first):", ", ".join(
        f"{d} {t}: " + "/".join(f"{v:.2f}" for v in [r for dd, tt, n, _, _, r in rows if (dd, tt) == (d, t)][-1].values())
        for d, t, _ in plans))


if __name__ == "__main__":
    main()
