"""The repair loop of SPEC 1 step 3 for engines whose batched and serial evaluation differ.

An engine whose batched teacher-forced pass and serial decode round differently (llama.cpp's
quantized kernels; torch in any dtype but float32 or on any device but the CPU) flips near-ties: the teacher-forced target argmax at t differs from the serially
decoded y_t, and the gate falls below 1. The loop makes y the target's own greedy continuation as
its teacher-forced evaluation sees it:

    argmax = teacher_argmax(y)
    while some t has argmax_t != y_t and fewer than `bound` repairs were made:
        t = the first such position
        y = y[:t] + [argmax_t] + regenerate(y[:t] + [argmax_t])      (serial greedy, same stop rules)
        argmax = teacher_argmax(y)

The positions where the final y holds a teacher-forced token are its flips; a repair at t drops
the flips after t (their tokens were regenerated). Positions that still fail once the bound is
reached are excluded one by one by the caller (Stream.kept = gate == 1), never the tail.

Engine-neutral: the engine comes in as two callables, so this module imports no model library.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

REPAIR_BOUND = 16  # repairs per stream (README Choices: ~2 flips per 128 tokens measured; 16 bounds the cost at 16 tail regenerations)
REPAIR_RULE = {
    "bound": REPAIR_BOUND,
    "rule": "SPEC 1.3: at the first t where the teacher-forced target argmax differs from y_t, take the "
            "teacher-forced token, regenerate the rest serially, teacher-force again; at most `bound` repairs; "
            "positions that still fail are excluded one by one; each stream stores its flipped positions (repairs)",
}  # run.json generation.repair of a run whose engine repairs (the same words for every engine)


@dataclass(frozen=True)
class Repaired:
    """A stream's y after the repair loop.

    y: the final continuation; flips: sorted positions t of y where y_t is the teacher-forced token
    that replaced the serial one; rounds: repairs made (>= len(flips): a repair at t drops the
    flips after t); gate: uint8, 1 where the final teacher-forced argmax equals y_t.
    """

    y: list[int]
    flips: list[int]
    rounds: int
    gate: np.ndarray

    @property
    def bound_reached(self) -> bool:
        """The gate still fails somewhere (the loop stopped at its bound)."""
        return bool(self.gate.size) and not bool(self.gate.all())


def first_failure(argmax: np.ndarray, y: Sequence[int]) -> int | None:
    """The first t with argmax_t != y_t, or None when the gate holds everywhere."""
    bad = np.flatnonzero(np.asarray(argmax) != np.asarray(y, dtype=np.int64))
    return int(bad[0]) if bad.size else None


def repair_greedy(y: Sequence[int], teacher_argmax: Callable[[list[int]], np.ndarray],
                  regenerate: Callable[[list[int]], Sequence[int]], bound: int = REPAIR_BOUND,
                  on_repair: Callable[[int, int], None] | None = None) -> Repaired:
    """Run the repair loop (module docstring) on `y`.

    teacher_argmax(y): the target's argmax at every position t = 0..len(y)-1 of the batched
    teacher-forced pass over prompt + y (row t predicts y_t); regenerate(prefix): the serial greedy
    continuation after prompt + prefix, with the decode's own stop rules (nothing when prefix ends
    in an end-of-generation token or has max_new_tokens tokens). on_repair(round, t) is told of each
    repair before its regeneration. A y whose gate holds comes back unchanged, with no flips.
    """
    if bound < 0:
        raise ValueError("the repair bound must be >= 0")
    cur = [int(v) for v in y]
    flips: list[int] = []
    argmax = np.asarray(teacher_argmax(cur))
    rounds = 0
    while rounds < bound:
        t = first_failure(argmax, cur)
        if t is None:
            break
        prefix = cur[:t] + [int(argmax[t])]
        if on_repair is not None:
            on_repair(rounds + 1, t)
        cur = prefix + [int(v) for v in regenerate(prefix)]
        flips = [f for f in flips if f < t] + [t]
        rounds += 1
        argmax = np.asarray(teacher_argmax(cur))
    gate = (argmax == np.asarray(cur, dtype=np.int64)).astype(np.uint8)
    return Repaired(y=cur, flips=flips, rounds=rounds, gate=gate)
