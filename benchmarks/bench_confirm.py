"""Predicted vs realized speedup per corpus, from every `specterm confirm` record of each run.

`specterm confirm RUN` does the timing (plain greedy against real lossless speculative decoding at
g_hw, g_iid and any --gamma, alternating prompt by prompt, with the cost curve re-measured in the
same session); this script turns its record into the RESULTS.md tables: predicted S_hw, realized,
their ratio, the memory-bound number, and the cross-checks of the cost micro-benchmark against real
decoding (greedy per-step time vs c_decode, per-block time vs c_verify(g) + g c_draft).

    specterm confirm streams/qwen2.5-coder-0.5b-1.5b --per-corpus 2 --threads 1     # the measurement
    python benchmarks/bench_confirm.py streams/qwen2.5-coder-0.5b-1.5b [--no-append]
"""

from __future__ import annotations

import argparse
from pathlib import Path

from _common import md_table, record


def tables(run_dir: Path) -> list[tuple[str, list[str]]]:
    """One (table, notes) per confirmation record of the run, oldest first."""
    from specterm.core.errors import SpectermError
    from specterm.core.decide.hardware import confirmations
    from specterm.core.store import read_meta

    meta = read_meta(run_dir)
    confs = confirmations(meta, where=str(run_dir / "run.json"))
    if not confs:
        raise SpectermError(f"{run_dir}/run.json has no confirmation record; run `specterm confirm RUN` first.")
    return [_table(run_dir, meta, conf) for conf in confs]


def _table(run_dir: Path, meta: dict, conf) -> tuple[str, list[str]]:
    rec = conf.record
    cost = rec["cost"]
    clock = cost.get("decision_clock", "wall")
    rows = []
    for r in rec["results"]:
        block = r.get("block_s_median")
        rows.append([
            r["corpus"], r["gamma"], ", ".join(k for k, v in (("g_hw", rec["choices"][r["corpus"]]["gamma_hw"]),
                                                           ("g_iid", rec["choices"][r["corpus"]]["gamma_iid_hw"]))
                                               if v == r["gamma"]) or "--gamma",
            r["prompts"], r["tokens"], f"{r['greedy_s']:.1f}", f"{r['spec_s']:.1f}",
            f"{r['predicted_mb']:.2f}x", f"{r['predicted_spec6']:.2f}x", f"{r['predicted']:.2f}x",
            f"**{r['realized']:.2f}x**", f"{r['realized'] / r['predicted_spec6']:.2f}", f"{r['ratio']:.2f}",
            f"{r['realized_cpu']:.2f}x" if r.get("realized_cpu") else "-",
            f"{r['realized_cpu'] / r['predicted_spec6']:.2f}" if r.get("realized_cpu") else "-",
            f"{r['ratio_cpu']:.2f}" if r.get("ratio_cpu") else "-",
            f"{r['predicted_insitu']:.2f}x" if r.get("predicted_insitu") else "-",
            f"{r['tokens_per_call']:.2f}", f"{r.get('refeed_share', 0):.2f}",
            f"{block:.3f}" if block is not None else "-", f"{r['block_model_s']:.3f}",
            "yes" if r["identical"] else "NO",
        ])
    body = md_table(["corpus", "g", "chosen as", "prompts", "tokens", "greedy s", "spec s", "memory-bound S_mb",
                     "predicted S_hw (SPEC 6)", "predicted (refeed model)", "realized", "realized / S_hw",
                     "realized / refeed", "realized (CPU time)", "realized (CPU) / S_hw", "realized (CPU) / refeed",
                     "S_hw from in-decoding forwards", "tokens per target call",
                     "2-token draft share", "block s (median)", "modelled block s", "same tokens"], rows)
    cc = rec.get("cross_check") or {}
    verify = cost["c_verify_s"]
    notes = [
        f"run {run_dir}: target {meta['target'].get('spec')}, draft {meta['draft'].get('spec')}, "
        f"{rec['device']} {rec.get('dtype')}, {rec['threads']} torch thread(s)",
        f"confirmation of {rec['date']} ({'complete' if conf.complete else 'INCOMPLETE: interrupted, finished prompts kept'}), "
        f"corpora {', '.join(sorted({r['corpus'] for r in rec['results']}))}, {rec['per_corpus']} prompt(s) per corpus, "
        f"load avg at start {rec.get('load_avg_start', [None])[0]}, "
        f"at end {(rec.get('load_avg_end') or [None])[0]}",
        f"costs at context {cost['context']} ({cost['repeats']} interleaved rounds): c_decode {cost['c_decode_s']:.3f} s "
        f"(IQR {cost['c_decode_iqr_s']:.3f}), c_draft {cost['c_draft_s']:.3f} s (IQR {cost['c_draft_iqr_s']:.3f}), "
        "c_verify(g) " + ", ".join(f"{g}: {verify[g]:.3f}" for g in sorted(verify, key=int) if int(g) in (1, 2, 4, 8, 16))
        + f" s; line fit a {cost['c_verify_line']['a_s']:.3f} s + b {cost['c_verify_line']['b_s_per_token']:.4f} s/token "
        f"(RMS {cost['c_verify_line']['rms_s']:.3f} s)",
        f"cross-check: greedy per-step median {cc.get('greedy_step_s_median', float('nan')):.3f} s vs c_decode "
        f"{cost['c_decode_s']:.3f} s; prefill: first greedy step {cc.get('greedy_prefill_s_median', float('nan')):.2f} s, "
        f"first speculative block {cc.get('spec_first_block_s_median', float('nan')):.2f} s (median over prompts)",
        f"predicted S_hw = E c_decode / (c_verify(g) + g c_draft) (SPEC 6) and the refeed model E c_decode / (c_verify(g) "
        f"+ g c_draft + phi (c_draft2 - c_draft)) on the {clock} clock, with E "
        "and phi (share of blocks after a fully accepted one, whose first draft step feeds 2 tokens) from the exact walk "
        "of these prompts' stored streams; memory-bound S_mb = E / (1 + g c_draft / c_decode); realized = greedy s / spec s "
        "(wall), and the same in process CPU time",
    ]
    return body, notes


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("runs", nargs="+", type=Path)
    ap.add_argument("--no-append", action="store_true", help="print only; do not append to RESULTS.md")
    args = ap.parse_args()
    for run_dir in args.runs:
        for body, notes in tables(run_dir):
            record("Confirmation: predicted vs realized speedup on this hardware", body, notes, append=not args.no_append)


if __name__ == "__main__":
    main()
