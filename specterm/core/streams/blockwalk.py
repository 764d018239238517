"""The block walk: exact tokens, blocks and drafted tokens of greedy speculation at draft length gamma.

A stream a_0..a_{n-1} splits into closed runs (L ones then a zero) and at most one trailing run
of ones (censored). At draft length gamma:

    closed run of L ones:    blocks = ceil((L + 1) / (gamma + 1)),  tokens = L + 1
    trailing run of L ones:  blocks = ceil(L / (gamma + 1)),        tokens = L
    drafted = gamma * blocks

which equals the loop in `block_walk_loop` (SPEC section 2) and is vectorised over runs.
"""

from __future__ import annotations

import numpy as np


def block_walk_loop(bits: np.ndarray, gamma: int) -> tuple[int, int, int]:
    """Reference loop of SPEC section 2: (tokens, blocks, drafted). Slow; for tests only."""
    a = np.asarray(bits).astype(np.int64).tolist()
    n = len(a)
    s = tokens = blocks = drafted = 0
    while s < n:
        k = 0
        for t in range(s, min(s + gamma, n)):
            if a[t] != 1:
                break
            k += 1
        tokens += min(k + 1, n - s)
        blocks += 1
        drafted += gamma
        s += k + 1
    return tokens, blocks, drafted


def run_lengths(bits: np.ndarray) -> tuple[np.ndarray, int]:
    """(closed, trailing): L for each zero (ones immediately before it), and the censored trailing run.

    closed[i] = number of ones between zero i-1 and zero i; trailing = ones after the last zero.
    """
    a = np.asarray(bits)
    zeros = np.flatnonzero(a == 0)
    if zeros.size == 0:
        return np.zeros(0, dtype=np.int64), int(a.size)
    closed = np.diff(np.concatenate(([-1], zeros))) - 1
    trailing = int(a.size - 1 - zeros[-1])
    return closed.astype(np.int64), trailing


def block_counts(bits: np.ndarray, gamma: int | np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(tokens, blocks, drafted) of one stream at each draft length in `gamma` (closed form over runs).

    Scalars in, 0-d arrays out; an array of gammas gives arrays of the same shape.
    """
    closed, trailing = run_lengths(bits)
    return block_counts_from_runs(closed, trailing, gamma)


def block_counts_from_runs(closed: np.ndarray, trailing: int,
                           gamma: int | np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Closed form of the walk from run lengths; see the module docstring."""
    g = np.asarray(gamma, dtype=np.int64)
    gp1 = g[..., None] + 1
    closed = np.asarray(closed, dtype=np.int64)
    blocks = (-(-(closed + 1) // gp1)).sum(axis=-1) + (-(-trailing // (g + 1)))
    tokens = np.full(g.shape, int(closed.sum()) + closed.size + trailing, dtype=np.int64)
    return tokens, blocks, g * blocks


def block_accepts(bits: np.ndarray, gamma: int) -> np.ndarray:
    """Accepted draft tokens in each block, in order, as the walk counts them: k = leading ones in
    a_s..a_{min(s+gamma, n)-1}. What a real greedy speculative decoder reports (capped at the horizon)."""
    closed, trailing = run_lengths(bits)
    out: list[np.ndarray] = []
    gp1 = gamma + 1
    for L in closed.tolist():
        nb = -(-(L + 1) // gp1)
        ks = np.full(nb, gamma, dtype=np.int64)
        ks[-1] = L - gp1 * (nb - 1)
        out.append(ks)
    if trailing:
        nb = -(-trailing // gp1)
        ks = np.full(nb, gamma, dtype=np.int64)
        ks[-1] = min(gamma, trailing - gp1 * (nb - 1))
        out.append(ks)
    return np.concatenate(out) if out else np.zeros(0, dtype=np.int64)


def E_iid(alpha: float | np.ndarray, gamma: int | np.ndarray) -> np.ndarray:
    """Expected tokens per block under i.i.d. acceptance: (1 - alpha^(gamma+1)) / (1 - alpha); gamma+1 at alpha = 1."""
    alpha = np.asarray(alpha, dtype=np.float64)
    gamma = np.asarray(gamma, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        e = (1.0 - alpha ** (gamma + 1)) / (1.0 - alpha)
    return np.where(alpha >= 1.0, gamma + 1, e)


def expected_blocks_iid(alpha: float, gamma: int, n: int) -> float:
    """The expected number of blocks the walk makes over an i.i.d. Bernoulli(alpha) stream of n
    positions at draft length gamma (the stream's end cuts its last block, SPEC 2):

        B(0) = 0,   B(m) = 1 + sum_{j < k} alpha^j (1 - alpha) B(m - j - 1) + alpha^k B(m - k - 1)+
        with k = min(gamma, m) and (x)+ = max(x, 0).

    n / B(n) is the finite-stream counterpart of E_iid(alpha, gamma): their gap is what a stream's
    cut last block alone costs the yield (it lands in `hetero`, docs/method.md, Choices)."""
    B = np.zeros(n + 1)
    for m in range(1, n + 1):
        k = min(gamma, m)
        j = np.arange(k)
        p = alpha ** j * (1 - alpha)
        nxt = B[np.maximum(m - j - 1, 0)]
        B[m] = 1 + float(p @ nxt) + alpha ** k * B[max(m - k - 1, 0)]
    return float(B[n])


def walk_table(streams_bits: list[np.ndarray], gammas: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(tokens, blocks), each (N streams x G draft lengths): the walk of every stream at every g in `gammas`.

    A set's E_true(g) = tokens.sum(0) / blocks.sum(0) (ratio of sums, SPEC 2); a bootstrap replicate
    with prompt weights w takes (w @ tokens) / (w @ blocks).
    """
    g = np.asarray(gammas, dtype=np.int64)
    tokens = np.zeros((len(streams_bits), g.size), dtype=np.float64)
    blocks = np.zeros_like(tokens)
    for i, bits in enumerate(streams_bits):
        t, b, _ = block_counts(bits, g)
        tokens[i], blocks[i] = t, b
    return tokens, blocks


def set_yield(streams_bits: list[np.ndarray], gammas: np.ndarray) -> tuple[np.ndarray, float]:
    """(E_true over `gammas`, alpha) of a set of streams: sum tokens / sum blocks of the walk, and
    sum a / n (SPEC 2; NaN where the set has no positions)."""
    tokens, blocks = walk_table(streams_bits, gammas)
    n = sum(int(np.asarray(b).size) for b in streams_bits)
    ones = sum(int(np.asarray(b).sum()) for b in streams_bits)
    with np.errstate(invalid="ignore", divide="ignore"):
        E = tokens.sum(axis=0) / blocks.sum(axis=0)
    return E, (ones / n if n else float("nan"))


def sync_walk(rows: list[np.ndarray], gamma: int, n: int) -> int:
    """Blocks of lockstep batched speculation (engines/torch/specdec.batched_speculative_generate) over the first
    n positions of each row's stream a_i:

        s = 0; while s < n: k_i = leading ones of a_i[s : s + min(g, n - s)];
                            s += min(min_i k_i + 1, n - s); blocks += 1

    (every row commits the slowest row's accepted drafts plus one target token). With one row this is
    the walk of SPEC 2 with the draft length capped at the horizon."""
    a = np.stack([np.asarray(r[:n], dtype=np.int64) for r in rows])
    s = blocks = 0
    while s < n:
        g = min(gamma, n - s)
        window = a[:, s:s + g]
        k = int(np.cumprod(window, axis=1).sum(axis=1).min()) if g else 0
        s += min(k + 1, n - s)
        blocks += 1
    return blocks
