"""Every analysis parameter and preset, defined once and imported everywhere (core, screens, export).

    GAMMAS        draft lengths g = 1 .. GAMMA_MAX (32) of the curves, the optimum and fixed policies
    YIELD_GAMMAS  g = 2, 4, 8, 16: the yield ratios E_true/E_iid the report lists (SPEC 7)
    R_GRID        cost ratios r = 0.05, 0.10, ..., 0.60 of the optimum table (SPEC 2)
    R_DEFAULT     r = 0.2 when no run measured one (policies, decide, the screens' starting r)
    GAMMA_DEFAULT the deficit's draft length g = 8 (SPEC 3)
    BOOT          bootstrap resamples B = 2000 (SPEC 3)
    SHUFFLES      the shuffle control of the deficit split: EXACT (-1, the default) is the exact
                  expectation over in-place orderings (stats.expected_shuffled_blocks: no Monte-Carlo
                  noise, the same for every seed); S > 0 the mean over S random in-place shuffles
                  (`--shuffles S`, SPEC 3's estimator, kept for comparison); 0 no split
    MIN_PROMPTS   M = 10: the fewest prompts per set for any interval-based verdict (SPEC 6 "Too few
                  prompts"). Below it a row or decision reads "too few prompts (n = K in a corpus; needs M per corpus)".
                  Why 10: the percentile bootstrap's coverage of a known alpha and E_true(8) on
                  synthetic streams (128 positions, prompt acceptance ~ Beta(7, 3), 95% nominal) is
                  0.51 at n = 2, 0.72 at 3, 0.83 at 5, 0.88 at 8, 0.91 at 10 and 0.91-0.93 at 12-20
                  (tests/test_min_prompts.py): 10 is the smallest n where it is within 5 points of 95%
                  and no larger n gains more than Monte-Carlo noise.
    SEED          the default seed 0 of the bootstrap and the shuffles (`--seed`)
    STEADY_FROM   the steady state is positions t >= 32 (SPEC 4): past the warm-up
    WARMUP_EARLY, WARMUP_LATE  the warm-up gain alpha_s(t >= 32) - alpha_s(t < 16) (SPEC 3); they do not
                  move with the position bins' width
    ACCELERATORS  presets for the batch crossover B* = I*/(g+1) (SPEC 6); DEFAULT_ACCELERATOR "h100"
    COSTS_MAX_ROUNDS, COSTS_MAX_SECONDS  `specterm costs`' caps: 40 timed rounds, 120 s of timing (model
                  loading not counted). On a 2-core CPU the time binds first, after about 10 rounds of the
                  Qwen pair (3 of the whole g curve, then the focused g): the budget of issue 33, and more
                  samples per focused g than the 7 fixed rounds before it. A profile stopped by a cap says
                  which sets are open; `--max-seconds` buys more.
    DEFAULT_RIDGE the report's ridge, 295 FLOP/byte: the default preset's I* = 295.3, rounded (the
                  report's B* are computed with it)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

    GAMMAS: np.ndarray[Any, np.dtype[np.int_]]

GAMMA_MAX = 32
COSTS_MAX_ROUNDS = 40
COSTS_MAX_SECONDS = 120.0
YIELD_GAMMAS: tuple[int, ...] = (2, 4, 8, 16)
R_GRID: tuple[float, ...] = tuple(round(0.05 * i, 2) for i in range(1, 13))
R_DEFAULT = 0.2
GAMMA_DEFAULT = 8
BOOT = 2000
EXACT = -1
SHUFFLES = EXACT
SEED = 0
STEADY_FROM = 32
WARMUP_EARLY = 16  # alpha(t < WARMUP_EARLY)
WARMUP_LATE = 32  # alpha(t >= WARMUP_LATE)
MIN_PROMPTS = 10


@dataclass(frozen=True)
class Accelerator:
    """An accelerator preset: dense BF16 peak (TFLOP/s) and peak HBM bandwidth (TB/s)."""

    label: str
    tflops: float
    tbps: float

    @property
    def ridge(self) -> float:
        """I* = peak FLOP/s / peak bytes/s (FLOP per byte)."""
        return self.tflops / self.tbps


# Dense (no sparsity) BF16 tensor peak over peak memory bandwidth, from the vendors' datasheets.
# Approximations: achievable FLOP/s and bandwidth are lower, and not by the same factor.
ACCELERATORS: dict[str, Accelerator] = {
    "h100": Accelerator("NVIDIA H100 SXM, BF16", 989.4, 3.35),  # ~295
    "h200": Accelerator("NVIDIA H200 SXM, BF16", 989.4, 4.8),  # ~206
    "a100": Accelerator("NVIDIA A100 SXM 80GB, BF16", 312.0, 2.039),  # ~153
    "l4": Accelerator("NVIDIA L4, BF16", 121.0, 0.3),  # ~403
    "rtx4090": Accelerator("NVIDIA RTX 4090, BF16 (FP32 accumulate)", 165.2, 1.008),  # ~164
    "mi300x": Accelerator("AMD MI300X, BF16", 1307.4, 5.3),  # ~247
}
DEFAULT_ACCELERATOR = "h100"
DEFAULT_RIDGE = float(round(ACCELERATORS[DEFAULT_ACCELERATOR].ridge))


def __getattr__(name: str) -> Any:
    """GAMMAS = numpy.arange(1, GAMMA_MAX + 1), made on first use (PEP 562): the TUI imports this
    module before its first table, which needs no numpy (issue 21: a warm open imports numpy after it)."""
    if name == "GAMMAS":
        import numpy as np

        value = np.arange(1, GAMMA_MAX + 1)
        globals()["GAMMAS"] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
