"""What a running oracle reports (`Progress`, counted by `Tally`), how it is told to stop, and the
headless display of it. The TUI's Run screen and the headless display consume the same `Progress`
through a callback."""

from __future__ import annotations

import sys
import threading
import time
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Optional

if TYPE_CHECKING:
    from specterm.core.store import Stream


@dataclass(frozen=True)
class Progress:
    """One progress report from the oracle.

    phase: "loading" | "checking" | "cost" | "generating" | "teacher-forcing" | "repairing" | "repaired" | "warning" | "saved"
           | "done" | "cancelled"   ("repairing"/"repaired": SPEC 1.3's repair loop, llama.cpp)
    bits: the current prompt's stream so far as seen by the speculative decoder that builds y:
          '1' accepted, '0' rejected, '?' not yet known (bonus positions are filled in by the
          teacher-forced pass, after which the stream is final).
    """

    phase: str
    message: str = ""
    n_prompts: int = 0          # prompts this run will process (after --resume skips)
    prompts_done: int = 0       # prompts written to disk so far in this run
    prompt_index: int = 0       # 0-based index of the current prompt
    prompt_id: str = ""
    corpus: str = ""
    tokens: int = 0             # tokens of y generated so far for the current prompt
    max_new_tokens: int = 0
    tokens_per_s: float = 0.0   # y tokens per second over this run so far
    running_alpha: Optional[float] = None  # pooled alpha over the prompts saved so far
    gate_rate: Optional[float] = None      # pooled gate rate over the prompts saved so far
    bits: str = ""
    elapsed_s: float = 0.0
    eta_s: Optional[float] = None
    already: int = 0            # prompts the run held before this session (--resume), within prompts_done
    step: int = 0               # steps of the current phase done (e.g. cost measurements), of `steps`
    steps: int = 0              # 0: the phase has no counted steps

    @property
    def bits_alpha(self) -> float:
        """alpha of `bits` so far: accepted ('1') over all positions; NaN when there are none."""
        return self.bits.count("1") / len(self.bits) if self.bits else float("nan")


ProgressCallback = Callable[[Progress], None]


class Cancelled(Exception):
    """Raised inside the oracle when its cancel event is set; finished prompts are already on disk."""


def check_cancel(cancel: Optional[threading.Event]) -> None:
    if cancel is not None and cancel.is_set():
        raise Cancelled()


@dataclass
class Tally:
    """What a run has done so far, and its progress reports built from it: y tokens generated and
    the time spent generating them (tokens/s, ETA), prompts saved, and the saved streams' running
    alpha (SPEC 2's alpha: accepted / positions over the gate-valid positions, as the report counts it)
    and gate rate (over every position)."""

    report: ProgressCallback
    n_todo: int
    max_new_tokens: int
    t_start: float = field(default_factory=time.perf_counter)
    gen_tokens: int = 0
    gen_time: float = 0.0
    done: int = 0
    saved_bits: int = 0
    saved_n: int = 0
    saved_valid: int = 0
    saved_gate: int = 0
    before: int = 0
    """Prompts the run held already (--resume): counted in every report, so the Run screen shows the
    whole run (saved before + this session) and its running alpha over all of them."""
    t_prompts: float | None = None
    """When this session's first prompt started (after loading)."""
    t_last_save: float | None = None
    """When this session's last prompt was saved."""

    def eta(self, now: float, rate: float) -> float | None:
        """Seconds left: once a prompt is saved, the wall time per prompt so far (from the first
        prompt's start to the last save, everything a prompt costs: generation, teacher forcing,
        saving) times the prompts left, less the time already spent since the last save (never
        below 0); before that, the tokens left at the generation rate (`rate` tokens/s; optimistic,
        it leaves out teacher forcing), or None."""
        left_prompts = self.n_todo - self.done
        if self.done and self.t_prompts is not None and self.t_last_save is not None:
            per_prompt = (self.t_last_save - self.t_prompts) / self.done
            return max(per_prompt * left_prompts - (now - self.t_last_save), 0.0)
        return (left_prompts * self.max_new_tokens / rate) if rate > 0 else None

    def emit(self, phase: str, msg: str = "", gen_extra: float = 0.0, **kw: Any) -> None:
        """Report a Progress; `gen_extra`: seconds of generation under way, not yet in gen_time."""
        now = time.perf_counter()
        elapsed = now - self.t_start
        rate = self.gen_tokens / (self.gen_time + gen_extra) if self.gen_time + gen_extra > 0 else 0.0
        if "prompt_index" in kw:
            kw["prompt_index"] += self.before
        self.report(Progress(
            phase, msg, n_prompts=self.before + self.n_todo, prompts_done=self.before + self.done,
            max_new_tokens=self.max_new_tokens,
            tokens_per_s=rate, running_alpha=(self.saved_bits / self.saved_valid) if self.saved_valid else None,
            gate_rate=(self.saved_gate / self.saved_n) if self.saved_n else None, elapsed_s=elapsed,
            eta_s=self.eta(now, rate), already=self.before, **kw,
        ))

    def saved(self, stream: Stream, before: bool = False) -> None:
        """Count a saved stream (`before`: one the run held already, --resume)."""
        if before:
            self.before += 1
        else:
            self.done += 1
            self.t_last_save = time.perf_counter()
        self.saved_bits += int(stream.a.sum())  # a: the bits up to the first gate failure
        self.saved_valid += stream.valid_len
        self.saved_n += stream.n
        self.saved_gate += int(stream.gate.sum()) if stream.gate is not None else stream.n


def headless_progress() -> tuple[ProgressCallback, AbstractContextManager[Any], Callable[[str], None]]:
    """(on_progress, context manager, log) of the headless display: a rich progress bar on a terminal,
    one log line per message otherwise (nohup). Shared by `specterm run --headless` and `specterm confirm`."""
    def log(msg: str) -> None:
        print(time.strftime("%H:%M:%S"), msg, file=sys.stderr, flush=True)

    if sys.stderr.isatty():
        return _bar_progress() + (log,)

    def on_progress(p: Progress) -> None:
        if p.phase in ("loading", "checking", "cost", "saved", "done", "cancelled") or p.message:
            extra = ""
            if p.phase == "saved" and p.running_alpha is not None:
                extra = (f" [{p.prompts_done}/{p.n_prompts}] {p.tokens} tokens, {p.tokens_per_s:.1f} tok/s,"
                         f" alpha {p.running_alpha:.3f}, gate {p.gate_rate:.3f}"
                         + (f", ETA {p.eta_s / 60:.1f} min" if p.eta_s else ""))
            log(("warning: " if p.phase == "warning" else "") + p.message + extra)

    return on_progress, nullcontext(), log


def _bar_progress() -> tuple[ProgressCallback, AbstractContextManager[Any]]:
    """The rich progress bar of a terminal: (on_progress, the bar as a context manager)."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeRemainingColumn
    from rich.progress import Progress as RichProgress

    console = Console(stderr=True)
    bar = RichProgress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                       TextColumn("{task.fields[info]}"), TimeRemainingColumn(), console=console)
    task = bar.add_task("starting", total=None, info="")

    def on_progress(p: Progress) -> None:
        if p.phase == "warning":
            from rich.text import Text

            console.print(Text.assemble(("warning: ", "yellow"), p.message))
            return
        if p.phase in ("loading", "checking", "cost"):
            bar.update(task, description=p.message[:60])
            return
        alpha = f"alpha {p.running_alpha:.3f}" if p.running_alpha is not None else ""
        gate = f"gate {p.gate_rate:.3f}" if p.gate_rate is not None else ""
        bar.update(task, total=p.n_prompts, completed=p.prompts_done,
                   description=f"{p.corpus}/{p.prompt_id} {p.tokens}/{p.max_new_tokens}"[:40],
                   info=f"{p.tokens_per_s:5.1f} tok/s {alpha} {gate}")

    return on_progress, bar
