"""`specterm compare-counters RUN FILE...`: production counters beside the oracle (core/settings/counters.py,
compare.py). Reading files and printing live here; the numbers are core's.

Per request that names its prompt (a llama-server response carries `prompt`, and `tokens` when asked
with "return_tokens": true), the request is replayed exactly on that prompt's stored stream
(compare.server_walk): its accepted and drafted tokens must equal the server's, unless the server's
tokens left the stored continuation y (llama.cpp's batched and serial kernels flip near-ties: SPEC 1.3),
which is counted as a flip and kept out of the agreement.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from specterm.core.errors import SpectermError
from specterm.core.report.types import POOLED
from specterm.core.settings import names as nm
from specterm.core.settings.oracle_counts import OracleSummary, oracle_counts, oracle_summary, read_production, server_walk
from specterm.core.settings.counters import Counters, Reading, parse_counters, total
from specterm.core.store import Run, Stream


@dataclass(frozen=True)
class RequestCheck:
    """One llama-server request replayed on its stored stream."""

    where: str
    stream: str
    tokens: int
    accepted: int
    drafted: int
    oracle_accepted: int
    oracle_drafted: int
    oracle_steps: int
    flip_at: int | None  # the first emitted position where the server left y (None: identical or unknown)

    @property
    def agrees(self) -> bool:
        return self.accepted == self.oracle_accepted and self.drafted == self.oracle_drafted


def read_files(paths: Sequence[Path]) -> list[Counters]:
    out: list[Counters] = []
    for p in paths:
        try:
            text = Path(p).read_text(encoding="utf-8")
        except UnicodeDecodeError:
            raise SpectermError(f"{p}: not a text file; give the engine's JSON responses, log or /metrics output.") from None
        except OSError as e:
            raise SpectermError(f"{p}: cannot be read ({e.strerror}); check the path.") from None
        out += parse_counters(text, str(p))
    return out


def _gamma(items: Sequence[Counters], given: int | None) -> int:
    shown = {c.gamma for c in items if c.gamma is not None}
    if len(shown) > 1:
        raise SpectermError(f"the files show several draft lengths ({sorted(shown)}); compare one configuration at a time.")
    if given is not None:
        if shown and given not in shown:
            raise SpectermError(f"--gamma {given} but the files show draft length {shown.pop()}; give the g the engine ran.")
        return given
    if not shown:
        raise SpectermError("the files do not say the draft length (llama-server responses do not); give it with --gamma "
                            "(the --spec-draft-n-max the server ran).")
    return shown.pop()


def _by_prompt(run: Run) -> dict[str, Stream]:
    return {s.prompt: s for s in run.streams if s.prompt}


def request_checks(items: Sequence[Counters], run: Run, gamma: int) -> list[RequestCheck]:
    """The exact per-request replay (module docstring) of every llama.cpp record naming a stored prompt."""
    prompts = _by_prompt(run)
    out = []
    for c in items:
        if c.engine != nm.LLAMA_CPP or c.prompt is None or c.tokens is None or c.draft_tokens is None:
            continue
        s = prompts.get(c.prompt)
        if s is None:
            continue
        flip = None
        if c.output is not None and s.y is not None:
            y = np.asarray(s.y)[: len(c.output)]
            diff = np.flatnonzero(np.asarray(c.output[: y.size]) != y)
            flip = int(diff[0]) if diff.size else (None if len(c.output) <= np.asarray(s.y).size else int(np.asarray(s.y).size))
        try:
            k, d = server_walk(s.bits, gamma, c.tokens)
        except ValueError:
            continue  # a request longer than the stored stream cannot be replayed
        out.append(RequestCheck(where=c.where, stream=s.id, tokens=c.tokens, accepted=c.accepted, drafted=c.draft_tokens,
                                oracle_accepted=int(k.sum()), oracle_drafted=int(d.sum()), oracle_steps=int(k.size),
                                flip_at=flip))
    return out


def compare(run: Run, items: Sequence[Counters], gamma: int | None, set_name: str | None,
            boot: int, seed: int) -> tuple[Reading, list[RequestCheck]]:
    """The reading of the files' counters (summed) against the run's set at g, and the per-request checks."""
    engines = sorted({c.engine for c in items})
    if len(engines) != 1:
        raise SpectermError(f"the files hold {', '.join(engines)} counters; compare one engine at a time.")
    g = _gamma(items, gamma)
    checks = request_checks(items, run, g)
    if set_name is None:
        matched = {c.stream for c in checks}
        streams = [s for s in run.streams if s.id in matched] if matched else list(run.streams)
        name = f"the {len(streams)} requested prompts" if matched else POOLED
    else:
        streams = [s for s in run.streams if set_name in (POOLED, s.corpus)]
        if not streams:
            raise SpectermError(f"the run has no set '{set_name}'; use one of {', '.join(sorted({s.corpus for s in run.streams}))} "
                                f"or {POOLED}.")
        name = set_name
    if checks:
        # the requests themselves: each replayed on its own first tokens (server_walk), not the whole stream
        oracle = walk_summary(checks, g, boot, seed)
    else:
        oracle = oracle_summary(oracle_counts([s.a for s in streams], g), boot=boot, seed=seed)
    prod = total(list(items), ", ".join(sorted({c.where.split(' line ')[0] for c in items})))
    return read_production(prod, oracle, g, name), checks


def walk_summary(checks: Sequence[RequestCheck], gamma: int, boot: int, seed: int) -> OracleSummary:
    """The oracle on the requests as served: L = 1 + sum k / steps and A = sum k / sum d of their replayed
    walks, with percentile-bootstrap intervals over the requests."""
    from specterm.core.streams.bootstrap import multinomial_weights, percentile_ci

    k = np.array([c.oracle_accepted for c in checks], dtype=np.float64)
    d = np.array([c.oracle_drafted for c in checks], dtype=np.float64)
    st = np.array([c.oracle_steps for c in checks], dtype=np.float64)

    def ci(x: np.ndarray) -> tuple[float | None, float | None]:
        lo, hi = percentile_ci(x)
        return (float(lo), float(hi)) if np.isfinite(lo) and np.isfinite(hi) else (None, None)

    lci: tuple[float | None, float | None] = (None, None)
    aci: tuple[float | None, float | None] = (None, None)
    if boot > 0:
        W = multinomial_weights(len(checks), boot, seed)
        with np.errstate(divide="ignore", invalid="ignore"):
            lci, aci = ci(1.0 + (W @ k) / (W @ st)), ci((W @ k) / (W @ d))
    return OracleSummary(length=float(1.0 + k.sum() / st.sum()) if st.sum() else None, length_ci=lci,
                         rate=float(k.sum() / d.sum()) if d.sum() else None, rate_ci=aci, per_pos=[])


def render(reading: Reading, checks: Sequence[RequestCheck]) -> str:
    p = reading.production
    lines = [reading.text, ""]
    rows = [("acceptance length (1 + accepted / steps)", p.acceptance_length, reading.oracle_length, reading.oracle_length_ci),
            ("acceptance rate (accepted / drafted)", p.acceptance_rate, reading.oracle_rate, reading.oracle_rate_ci)]
    lines.append(f"{'':44}{'production':>12}  oracle [95% CI]")
    for label, got, want, ci in rows:
        g_txt = f"{got:.3f}" if got is not None else "-"
        w_txt = f"{want:.3f}" if want is not None else "-"
        c_txt = f" [{ci[0]:.3f}, {ci[1]:.3f}]" if ci[0] is not None and ci[1] is not None else ""
        lines.append(f"{label:44}{g_txt:>12}  {w_txt}{c_txt}")
    if p.per_pos and p.drafts:
        lines.append("")
        lines.append("P(accepted >= j) per draft position: production / oracle")
        for j, x in enumerate(p.per_pos, 1):
            o = reading.oracle_per_pos[j - 1] if j - 1 < len(reading.oracle_per_pos) else None
            lines.append(f"  j = {j:2d}: {x / p.drafts:.3f} / " + (f"{o:.3f}" if o is not None else "-"))
    if checks:
        same = [c for c in checks if c.flip_at is None]
        agree = [c for c in same if c.agrees]
        lines += ["", f"Per request, replayed on its stored stream at g = {reading.gamma}: {len(agree)} of {len(same)} "
                  f"requests on the stored continuation agree exactly; {len(checks) - len(same)} left it (llama.cpp flips, "
                  "counted, not compared)."]
        if same:
            ka, ko = sum(c.accepted for c in same), sum(c.oracle_accepted for c in same)
            da, do = sum(c.drafted for c in same), sum(c.oracle_drafted for c in same)
            lines.append(f"  over those {len(same)}: accepted {ka} (oracle {ko}), drafted {da} (oracle {do}); accepted per "
                         f"drafted token {ka / da if da else float('nan'):.3f} (oracle {ko / do if do else float('nan'):.3f})")
        lines.append(f"  {'stream':14}{'tokens':>7}{'accepted':>10}{'oracle':>8}{'drafted':>9}{'oracle':>8}  flip at")
        for c in checks:
            lines.append(f"  {c.stream:14}{c.tokens:>7}{c.accepted:>10}{c.oracle_accepted:>8}{c.drafted:>9}"
                         f"{c.oracle_drafted:>8}  {'-' if c.flip_at is None else c.flip_at}")
    return "\n".join(lines) + "\n"
