"""The torch engine's part of `specterm confirm` (the flow is engines/confirm.py): greedy and
speculative generations (engines/torch/specdec.py) timed step by step and block by block, every target and
draft forward inside them timed (`ForwardTimer`, torch forward hooks), and the batched confirmation.

What torch rows record beside the common fields (SPEC 6, Confirmation, checks stored beside): the same
ratio in process CPU time (robust to other processes' load on a time-shared CPU); the forwards real
decoding made, each timed: their medians against c_decode, c_verify(g), c_draft, and the S_hw they imply;
2-token draft forwards (after a fully accepted block) and Python overhead; per-block and per-step times;
prefill times (`cross_check`).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from specterm.core.decide import costmodel
from specterm.core.errors import SpectermError
from specterm.core.decide.hardware import batch_costs
from specterm.core.decide.hardware.confirmations import insitu_speedup
from specterm.core.decide.hardware.profiles import decision_profile
from specterm.core.decide.machine import this_machine
from specterm.engines.progress import Progress, check_cancel
from specterm.core.store import META_FILE, read_meta
from specterm.engines.base import BlockTiming, Generation, Item, StepCallback

if TYPE_CHECKING:
    import threading

    import torch
    from torch.utils.hooks import RemovableHandle
    from transformers import PreTrainedModel

    from specterm.engines.base import ConfirmSession, Sampler
    from specterm.engines.drafters import Drafter
    from specterm.engines.timing import MeasureCallback
    from specterm.engines.torch.costs_torch import CostSampler
    from specterm.engines.torch.oracle_torch import LoadedPair
    from specterm.engines.torch.specdec import SpecResult

METHOD = ("per (corpus, g): realized = sum greedy s / sum speculative s over the same prompts, methods "
          "alternating (order reversed every other prompt); predicted = S_hw(g) = E c_decode / (c_verify(g) + "
          "g c_draft) with E = tokens / blocks of the exact walk of these prompts and this session's robust costs")
COST_CONTEXT_RULE = "mean over the timed prompts of prompt tokens + n/2 (n = tokens generated)"


class ForwardTimer:
    """Wall time of every target and draft forward inside real decoding (torch forward hooks), so the
    micro-benchmark's costs can be checked against the forwards decoding really makes.

    A layer-skip draft is a shallow copy of the target and shares its hook dicts: hooks are
    registered once per distinct dict and tell the models apart by identity.
    """

    def __init__(self, target: PreTrainedModel, draft: PreTrainedModel) -> None:
        self.target = target
        self.records: list[tuple[str, int, float]] = []  # (role, tokens fed, seconds)
        self.cpu: list[float] = []  # process CPU seconds of each forward of `records`
        self._pending: list[tuple[int, float, float]] = []
        self._handles: list[RemovableHandle] = []
        self._cuda = target.device.type == "cuda" or draft.device.type == "cuda"
        seen: set[int] = set()
        for model in (target, draft):
            if id(model._forward_pre_hooks) in seen:
                continue
            seen.add(id(model._forward_pre_hooks))
            self._handles.append(model.register_forward_pre_hook(self._pre, with_kwargs=True))
            self._handles.append(model.register_forward_hook(self._post))

    def _sync(self) -> None:
        if self._cuda:
            import torch

            torch.cuda.synchronize()

    def _pre(self, module: torch.nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        ids = kwargs.get("input_ids", args[0] if args else None)
        self._sync()
        self._pending.append((int(ids.shape[1]) if ids is not None else 0, time.perf_counter(), time.process_time()))

    def _post(self, module: torch.nn.Module, args: tuple[Any, ...], output: Any) -> None:
        self._sync()
        n, t0, c0 = self._pending.pop()
        self.records.append(("target" if module is self.target else "draft", n, time.perf_counter() - t0))
        self.cpu.append(time.process_time() - c0)

    def take(self) -> list[tuple[str, int, float]]:
        out, self.records, self.cpu = self.records, [], []
        return out

    def forward_seconds(self) -> tuple[float, float]:
        """(wall, process CPU) seconds inside the forwards recorded since the last take()."""
        return sum(r[2] for r in self.records), sum(self.cpu)

    def close(self) -> None:
        for h in self._handles:
            h.remove()


def _median_of(records: Sequence[tuple[str, int, float]], role: str, tokens: int) -> float | None:
    vals = [dt for r, n, dt in records if r == role and n == tokens]
    return statistics.median(vals) if vals else None


def _median(values: Iterable[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return statistics.median(present) if present else None


def warm_up(pair: LoadedPair, item: Item, gamma: int, cancel: threading.Event | None = None) -> None:
    """One short greedy and one short speculative generation, not timed."""
    from specterm.engines.torch import specdec

    specdec.greedy_generate(pair.target, item.ids, 2, pair.eos, cancel=cancel)
    specdec.speculative_generate(pair.target, pair.draft, item.ids, 2, pair.eos, specdec.FixedGamma(gamma), cancel=cancel)


def greedy_timed(pair: LoadedPair, timer: ForwardTimer | None, item: Item, on_step: StepCallback,
                 cancel: threading.Event | None = None) -> Generation:
    """specdec.greedy_generate of item.n tokens, each step stamped: the first step includes the prefill."""
    from specterm.engines.torch import specdec

    stamps: list[float] = []

    def on_token(k: int) -> None:
        stamps.append(time.perf_counter())
        on_step(tokens=k)

    if timer is not None:
        timer.take()
    t0, c0 = time.perf_counter(), time.process_time()
    out = specdec.greedy_generate(pair.target, item.ids, item.n, pair.eos, cancel=cancel, on_token=on_token)
    dt, dc = time.perf_counter() - t0, time.process_time() - c0
    steps = np.diff([t0] + stamps).tolist()
    fw = timer.take() if timer is not None else []
    return Generation(tokens=list(out), seconds=dt, fields=dict(
        greedy_s=dt, greedy_cpu_s=dc, greedy_prefill_s=steps[0],
        greedy_step_s_median=statistics.median(steps[1:]) if steps[1:] else None,
        greedy_decode_forward_s_median=_median_of(fw, "target", 1),
        greedy_forward_s_sum=sum(r[2] for r in fw)))


def speculative_timed(pair: LoadedPair, timer: ForwardTimer | None, item: Item, g: int, on_step: StepCallback,
                      cancel: threading.Event | None = None) -> Generation:
    """specdec.speculative_generate at fixed draft length g, each block stamped (the first includes the prefill)."""
    from specterm.engines.torch import specdec

    stamps: list[float] = []
    first_tokens: list[int] = []  # tokens out after the first block

    def on_block(res: SpecResult) -> None:
        stamps.append(time.perf_counter())
        if not first_tokens:
            first_tokens.append(len(res.tokens))
        on_step(tokens=len(res.tokens), bits=specdec.spec_bits(res, len(res.tokens)))

    if timer is not None:
        timer.take()
    t0, c0 = time.perf_counter(), time.process_time()
    res = specdec.speculative_generate(pair.target, pair.draft, item.ids, item.n, pair.eos, specdec.FixedGamma(g),
                                       on_block=on_block, cancel=cancel)
    dt, dc = time.perf_counter() - t0, time.process_time() - c0
    blocks = np.diff([t0] + stamps).tolist()
    fw = timer.take() if timer is not None else []
    return Generation(tokens=list(res.tokens), seconds=dt, fields={
        "s": dt, "cpu_s": dc, "first_block_s": blocks[0], "first_block_tokens": first_tokens[0],
        "block_s_median": statistics.median(blocks[1:]) if blocks[1:] else None,
        "verify_forward_s_median": _median_of(fw, "target", g + 1),
        "draft_forward_s_median": _median_of(fw, "draft", 1),
        "draft_2token_forwards": sum(1 for r in fw if r[0] == "draft" and r[1] == 2),
        "draft_2token_forward_s_median": _median_of(fw, "draft", 2),
        "forward_s_sum": sum(r[2] for r in fw),
        "target_calls": res.target_calls, "draft_calls": res.draft_calls,
        "blocks_walk": item.blocks[g], "refeeds_walk": item.refeeds[g],
    })


def block_timed(target: PreTrainedModel, draft: PreTrainedModel | None, eos: set[int], item: Item, g: int,
                cancel: threading.Event | None = None, drafter: Drafter | None = None) -> BlockTiming:
    """One short real speculative generation for the block overhead (SPEC 6 "The whole block's cost"):
    specdec.speculative_generate of item.n tokens at fixed draft length g (along the stored y, so its
    blocks are the walk's), every forward timed by a ForwardTimer; its blocks are its target calls.
    A drafter run (`drafter`, no draft model): the drafter proposes; its seconds and drafted tokens are reported."""
    from specterm.engines.torch import specdec

    timer = ForwardTimer(target, draft if draft is not None else target)
    try:
        t0, c0 = time.perf_counter(), time.process_time()
        res = specdec.speculative_generate(target, draft, item.ids, item.n, eos, specdec.FixedGamma(g), cancel=cancel,
                                           drafter=drafter)
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        fw_wall, fw_cpu = timer.forward_seconds()
    finally:
        timer.close()
    return BlockTiming(blocks=res.target_calls, wall_s=wall, cpu_s=cpu, forwards_wall_s=fw_wall, forwards_cpu_s=fw_cpu,
                       tokens=list(res.tokens), drafted=None if drafter is None else sum(res.drafts),
                       drafter_wall_s=res.drafter_s, drafter_cpu_s=res.drafter_cpu_s)


def result_extras(sp: list[dict[str, Any]]) -> dict[str, Any]:
    """A (corpus, g) row's torch columns: block_s_median, draft_2token_forward_s_median,
    draft_2token_forwards, python_overhead_s (speculative wall time outside forwards)."""
    return {"block_s_median": _median(x["block_s_median"] for x in sp),
            "draft_2token_forward_s_median": _median(x["draft_2token_forward_s_median"] for x in sp),
            "draft_2token_forwards": sum(x["draft_2token_forwards"] for x in sp),
            "python_overhead_s": sum(x["s"] - x["forward_s_sum"] for x in sp)}


def cross_check(prompt_rows: list[dict[str, Any]], cost: dict[str, Any]) -> dict[str, Any]:
    """The micro-benchmark against real decoding: greedy per-step time vs c_decode, prefill times."""
    steps = [p["greedy_step_s_median"] for p in prompt_rows if p.get("greedy_step_s_median") is not None]
    return {
        "greedy_step_s_median": statistics.median(steps) if steps else None,
        "c_decode_s": cost["c_decode_s"],
        "c_decode_robust_s": cost["c_decode_robust_s"],
        "greedy_prefill_s_median": statistics.median([p["greedy_prefill_s"] for p in prompt_rows]),
        "spec_first_block_s_median": statistics.median(
            [sp["first_block_s"] for p in prompt_rows for sp in p["spec"].values()]) if prompt_rows else None,
    }


class BatchGridJob:
    """The torch costs by batch of a confirm session (engines/torch/costs_torch.BatchGrid; B = 1 from the cost rounds
    just timed, same caches, context and clock): all at once, or in slices after every prompt: after
    prompt i of K the first ceil(i T / K) of its T forwards are timed (an unfinished grid is not stored)."""

    sliced = True

    def __init__(self, pair: LoadedPair, sampler: Sampler, ctx: Sequence[int], on_measure: MeasureCallback | None,
                 cancel: threading.Event | None, rounds_s: float) -> None:
        from specterm.engines.timing import reused_b1
        from specterm.engines.torch.costs_torch import BatchGrid

        rounds = cast("CostSampler", sampler)  # the torch pair's cost_sampler() is a costs_torch.CostSampler
        self.grid = BatchGrid(pair.target, pair.draft, ctx, on_measure=on_measure, cancel=cancel,
                              reuse=reused_b1(sampler.summary()),
                              prefilled={"target": rounds.quantities[0][2], "draft": rounds.quantities[1][2]})
        self.total = self.grid.total
        self.rounds_s = rounds_s  # the wall seconds of the g curve's rounds before the generations

    def run_all(self) -> dict[str, Any]:
        from specterm.engines.torch.costs_torch import grid_record

        return grid_record(self.grid.run_all(), self.rounds_s)

    def step(self, done: int, of: int) -> None:
        self.grid.step(-(-done * self.grid.total // of) - self.grid.done)

    def finish(self, of: int) -> dict[str, Any]:
        from specterm.engines.torch.costs_torch import grid_record

        out = grid_record(self.grid, self.rounds_s, upfront_s=self.rounds_s + self.grid.setup_s)
        out["interleaved"] = f"timed in {of} slices, one after every prompt's generations"
        return out


def time_batched(session: ConfirmSession, pair: LoadedPair, timer: ForwardTimer | None) -> dict[str, Any]:
    """A batched confirmation (SPEC 6 "Batch"): per corpus, its timed prompts in groups of B, batched plain
    greedy against lockstep batched speculative decoding (specdec.batched_speculative_generate) at the
    decision's g_hw(B), methods alternating group by group. Each group generates n = the shortest stored
    y of the group. Rows go to record["batched_results"] (never mixed with the batch-1 rows):

        realized  = sum greedy s / sum speculative s
        predicted = E_sync c_decode(B) / (c_verify(g, B) + g c_draft(B)), E_sync = n / blocks of the
                    lockstep walk of the group's stored streams (blockwalk.sync_walk), costs by batch of
                    this session when measured (--batch-costs), else the run's
        predicted_insitu = the same at the medians of the forwards these generations made (`timer`: a
                    B-row 1-token decode, (g+1)-token verify, 1-token draft step); ratio_insitu = realized / it
    """
    from specterm.core.streams.blockwalk import sync_walk
    from specterm.engines.torch import specdec

    B, record, cancel = session.config.batch, session.record, session.cancel
    pad = pair.tokenizer.pad_token_id if pair.tokenizer.pad_token_id is not None else 0
    batch_record = session.batch_record
    if batch_record is None:
        here = decision_profile(read_meta(session.run_dir), this_machine())
        batch_record = here.batch_cost if here is not None else None
    costs = batch_costs(batch_record)
    if costs is None:
        raise SpectermError("a batched confirmation needs the run's costs by batch; add --batch-costs.")
    i_b = int(np.flatnonzero(costs.batches == B)[0])
    record["batched_results"] = []
    record["batch_cost_source"] = "this session (--batch-costs)" if session.batch_record is not None else "the run's"
    groups = []
    for name in sorted(session.choices):
        mine = [it for it in session.items if it.stream.corpus == name]
        groups += [(name, mine[j:j + B]) for j in range(0, len(mine) - B + 1, B)]
    if not groups:
        raise SpectermError(f"a batched confirmation at B = {B} needs at least {B} prompts of a corpus; raise --per-corpus.")
    specdec.batched_greedy_steps(pair.target, [it.ids for it in groups[0][1]], 2, pad, cancel=cancel)  # warm-up
    for gi, (name, group) in enumerate(groups):
        g = int(session.choices[name]["gamma_decision"])
        n = min(it.n for it in group)
        prompts = [it.ids for it in group]
        timed: dict[str, Any] = {}
        fw: dict[str, list[tuple[str, int, float]]] = {}
        order = ["greedy", "spec"] if gi % 2 == 0 else ["spec", "greedy"]
        for m in order:
            check_cancel(cancel)
            session.report(Progress("generating", f"{name}: batch of {B}, {'greedy' if m == 'greedy' else f'g={g}'}, "
                                    f"{n} tokens", elapsed_s=time.perf_counter() - session.t_start))
            if timer is not None:
                timer.take()
            t0, c0 = time.perf_counter(), time.process_time()
            if m == "greedy":
                out = specdec.batched_greedy_steps(pair.target, prompts, n, pad, cancel=cancel)
                calls = n
            else:
                res = specdec.batched_speculative_generate(pair.target, pair.draft, prompts, n, g, pad, cancel=cancel)
                out, calls = res.tokens, res.target_calls
            timed[m] = (time.perf_counter() - t0, time.process_time() - c0, out, calls)
            fw[m] = timer.take() if timer is not None else []
        blocks = sync_walk([it.stream.bits for it in group], g, n)
        E_sync = n / blocks
        predicted = float(costmodel.speedup_hw(E_sync, costs.c_decode[i_b], costs.c_verify[i_b, g - 1], costs.c_draft[i_b], g))
        same = [timed[m][2][r][:n] == it.y[:n] for m in ("greedy", "spec") for r, it in enumerate(group)]
        row = {"corpus": name, "batch": B, "gamma": g, "ids": [it.stream.id for it in group], "tokens_per_row": n,
               "greedy_s": timed["greedy"][0], "spec_s": timed["spec"][0],
               "greedy_cpu_s": timed["greedy"][1], "spec_cpu_s": timed["spec"][1],
               "realized": timed["greedy"][0] / timed["spec"][0],
               "realized_cpu": timed["greedy"][1] / timed["spec"][1] if timed["spec"][1] > 0 else None,
               "E_sync": E_sync, "blocks_walk": blocks, "target_calls": timed["spec"][3], "predicted": predicted,
               "identical": all(same), "order": order}
        row["ratio"] = row["realized"] / predicted
        t1, tv, d1 = (_median_of(fw["greedy"], "target", 1), _median_of(fw["spec"], "target", g + 1),
                      _median_of(fw["spec"], "draft", 1))
        insitu = insitu_speedup(E_sync, t1, tv, d1, g)
        row.update(decode_forward_s_median=t1, verify_forward_s_median=tv, draft_forward_s_median=d1,
                   predicted_insitu=insitu, ratio_insitu=None if insitu is None else row["realized"] / insitu)
        record["batched_results"].append(row)
        assert session.sampler is not None  # the session's cost rounds (engines/confirm._measure)
        session.sampler.round()
        record["cost"] = session.session_cost()
        session.write()
    record["complete"] = True
    record["seconds"] = time.perf_counter() - session.t_start
    session.write(None, session.batch_record)
    session.report(Progress("done", f"batched confirmation appended to {session.run_dir / META_FILE}"))
    return record
