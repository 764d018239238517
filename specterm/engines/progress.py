"""What a running oracle reports, and how it is told to stop. Plain data: the TUI and the headless
display both consume `Progress` through a callback."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Callable, Optional


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
