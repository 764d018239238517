"""The TUI's speed against a bare Textual app measured in the same run: cold start to first paint,
a screen switch, `M` (the next model pair), and stepping the token cursor on a 4096-token stream.

Every measurement runs in a fresh Python process on a pseudo-terminal (120x36), as in a person's
terminal, with Textual's real driver writing the frames. Times end when the frame after the action
is painted (`call_after_refresh`). The baseline, in the same run and the same way, is a bare
Textual app: a Header, a Static and a Footer on two screens (start-up, switching screens) whose
Static is rewritten per key (stepping). Targets: first paint under 1.5 s, a switch under 300 ms.

    python benchmarks/bench_tui.py [RUN ...] [--repeat 3] [--no-append]

Without RUN it uses the runs in ./streams (`M` is timed when they hold two model pairs); the
stepping uses a synthetic 4096-token run written to a temporary directory.
"""

from __future__ import annotations

import argparse
import asyncio
import fcntl
import json
import os
import pty
import select
import statistics
import struct
import subprocess
import sys
import tempfile
import termios
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from _common import md_table, record

FIRST_PAINT_TARGET_S = 1.5
SWITCH_TARGET_S = 0.3
STEPS = 60
SIZE = (120, 36)


# ------------------------------------------------------------------ inside the measured process ---

class Marks:
    """Collects named timings and writes them as JSON when the app is done."""

    def __init__(self, out_file: str) -> None:
        self.t0 = float(os.environ["BENCH_T0"])
        self.out = Path(out_file)
        self.data: dict[str, object] = {}

    def since_start(self, name: str) -> None:
        self.data[name] = time.time() - self.t0

    def save(self) -> None:
        self.out.write_text(json.dumps(self.data))


def painted(app) -> "asyncio.Future[float]":
    """A future set to time.perf_counter() once the next frame has been painted."""
    fut: asyncio.Future[float] = asyncio.get_running_loop().create_future()
    app.call_after_refresh(lambda: fut.done() or fut.set_result(time.perf_counter()))
    return fut


def child_specterm(out_file: str, paths: list[str], stepping: bool) -> None:
    from specterm.app import SCREENS, SpectermApp
    from specterm.widgets.tokens import TokenView

    marks = Marks(out_file)
    modes = [s.mode for s in SCREENS if s.mode != "run"]

    class Instrumented(SpectermApp):
        def on_ready(self) -> None:
            marks.since_start("first_paint")
            self._report_seen = 0
            self._report_event = asyncio.Event()
            self.watch(self, "report", self._report_set)
            self.watch(self, "error", self._failed)

        def _report_set(self, report) -> None:
            if report is not None:
                self._report_seen += 1
                self._report_event.set()
                if self._report_seen == 1:
                    self.run_worker(self._sequence(), exclusive=True, group="bench")

        def _failed(self, error) -> None:
            if error:
                marks.data["error"] = error
                marks.save()
                self.exit()

        async def _after_paint(self) -> float:
            return await painted(self)

        async def _sequence(self) -> None:
            await self._after_paint()
            marks.since_start("report_painted")
            if stepping:
                await self.switch_mode("streams")
                await self._after_paint()
                view = self.screen.query_one(TokenView)
                times = []
                for _ in range(STEPS):
                    t0 = time.perf_counter()
                    view.action_step(1)
                    times.append(await self._after_paint() - t0)
                marks.data["step"] = times
            else:
                for label in ("switch_first", "switch_again"):  # first visits mount the screens
                    times = []
                    for mode in modes[1:] + modes[:1]:
                        t0 = time.perf_counter()
                        await self.switch_mode(mode)
                        times.append(await self._after_paint() - t0)
                    marks.data[label] = times
                if self.n_model_groups > 1:
                    times = []
                    for _ in range(2):  # to the second pair and back to the first
                        self._report_event.clear()
                        t0 = time.perf_counter()
                        self.action_next_models()  # sets report to None, then a worker analyses the pair
                        await self._report_event.wait()
                        times.append(await self._after_paint() - t0)
                    marks.data["models"] = times
            marks.save()
            self.exit()

    Instrumented([Path(p) for p in paths], boot=2000).run()


def child_bare(out_file: str, stepping: bool) -> None:
    from textual.app import App, ComposeResult
    from textual.screen import Screen
    from textual.widgets import Footer, Header, Static

    marks = Marks(out_file)

    class Page(Screen):
        def __init__(self, text: str) -> None:
            super().__init__()
            self.text = text

        def compose(self) -> ComposeResult:
            yield Header()
            yield Static(self.text, id="text")
            yield Footer()

    class Bare(App):
        MODES = {"a": lambda: Page("a"), "b": lambda: Page("b")}

        def on_ready(self) -> None:
            marks.since_start("first_paint")
            self.run_worker(self._sequence(), exclusive=True)

        async def _sequence(self) -> None:
            await self.switch_mode("a")
            await painted(self)
            if stepping:
                text = self.screen.query_one("#text", Static)
                times = []
                for i in range(STEPS):
                    t0 = time.perf_counter()
                    text.update(f"t {i}")
                    times.append(await painted(self) - t0)
                marks.data["step"] = times
            else:
                for label in ("switch_first", "switch_again"):
                    times = []
                    for mode in ("b", "a"):
                        t0 = time.perf_counter()
                        await self.switch_mode(mode)
                        times.append(await painted(self) - t0)
                    marks.data[label] = times
            marks.save()
            self.exit()

    Bare().run()


# ------------------------------------------------------------------ the parent ---

def run_on_pty(argv: list[str], env: dict[str, str], timeout: float = 120.0) -> None:
    """Run argv on a pseudo-terminal of SIZE, draining its output until it exits."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", SIZE[1], SIZE[0], 0, 0))
    proc = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, env=env, close_fds=True)
    os.close(slave)
    deadline = time.time() + timeout
    tail = b""
    try:
        while proc.poll() is None and time.time() < deadline:
            ready, _, _ = select.select([master], [], [], 0.05)
            if ready:
                try:
                    tail = (tail + os.read(master, 65536))[-4000:]
                except OSError:
                    break
        try:  # the pty closes a moment before the process is reaped
            proc.wait(timeout=max(deadline - time.time(), 1.0))
        except subprocess.TimeoutExpired:
            proc.kill()
            raise SystemExit(f"the app did not quit within {timeout:.0f} s") from None
        if proc.returncode:
            raise SystemExit(f"the app exited with {proc.returncode}:\n{tail.decode(errors='replace')[-1500:]}")
    finally:
        os.close(master)
        proc.wait()


def measure(kind: str, runs: list[str], tmp: Path, stepping: bool = False) -> dict:
    out = tmp / "marks.json"
    out.unlink(missing_ok=True)
    env = {**os.environ, "TERM": os.environ.get("TERM", "xterm-256color"), "BENCH_T0": repr(time.time())}
    argv = [sys.executable, __file__, "--child", kind, "--out", str(out), *runs]
    if stepping:
        argv.append("--stepping")
    run_on_pty(argv, env)
    marks = json.loads(out.read_text())
    if "error" in marks:
        raise SystemExit(f"the app failed: {marks['error']}")
    return marks


def long_run(root: Path, n: int = 4096) -> Path:
    from app_fixture import META, make_stream

    from specterm.core.store import write_run

    return write_run(root / f"long-{n}", {**META, "name": f"long-{n}"}, [make_stream("long", "code", n, 7)])


def ms(x: float) -> str:
    return f"{x * 1000:.0f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="*")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--no-append", action="store_true")
    parser.add_argument("--child", choices=("specterm", "bare"), help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    parser.add_argument("--stepping", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child == "specterm":
        return child_specterm(args.out, args.runs, args.stepping)
    if args.child == "bare":
        return child_bare(args.out, args.stepping)

    from specterm.core.store import find_runs, group_by_models, load_run

    runs = args.runs or [str(p) for p in find_runs("streams")]
    if not runs:
        raise SystemExit("no runs in ./streams: pass run directories.")
    loaded = [load_run(r) for r in runs]
    n_pos = sum(s.n for r in loaded for s in r.streams)
    pairs = len(group_by_models(loaded))
    print(f"runs: {', '.join(runs)}  ({n_pos} positions, {pairs} model pair(s))")

    med = statistics.median
    cols: dict[str, list[float]] = {k: [] for k in (
        "first", "bare_first", "report", "switch_first", "switch_again", "bare_switch_first",
        "bare_switch_again", "models", "step", "bare_step")}
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        long = str(long_run(tmp))
        for _ in range(args.repeat):  # interleaved, so drift in the machine's load hits both alike
            ours = measure("specterm", runs, tmp)
            bare = measure("bare", [], tmp)
            cols["first"].append(ours["first_paint"])
            cols["report"].append(ours["report_painted"])
            cols["bare_first"].append(bare["first_paint"])
            cols["switch_first"].append(med(ours["switch_first"]))
            cols["switch_again"].append(med(ours["switch_again"]))
            cols["bare_switch_first"].append(med(bare["switch_first"]))
            cols["bare_switch_again"].append(med(bare["switch_again"]))
            if "models" in ours:
                cols["models"].append(med(ours["models"]))
            cols["step"].append(med(measure("specterm", [long], tmp, stepping=True)["step"]))
            cols["bare_step"].append(med(measure("bare", [], tmp, stepping=True)["step"]))
    m = {k: med(v) for k, v in cols.items() if v}
    rows = [
        ["start-up: first paint", ms(m["first"]), ms(m["bare_first"]), f"{m['first'] / m['bare_first']:.2f}",
         f"< {FIRST_PAINT_TARGET_S} s: {'yes' if m['first'] < FIRST_PAINT_TARGET_S else 'no'}"],
        ["start-up: report painted", ms(m["report"]), ms(m["bare_first"]), f"{m['report'] / m['bare_first']:.2f}", ""],
        ["screen switch, first visit", ms(m["switch_first"]), ms(m["bare_switch_first"]),
         f"{m['switch_first'] / m['bare_switch_first']:.2f}",
         f"< {SWITCH_TARGET_S * 1000:.0f} ms: {'yes' if m['switch_first'] < SWITCH_TARGET_S else 'no'}"],
        ["screen switch, again", ms(m["switch_again"]), ms(m["bare_switch_again"]),
         f"{m['switch_again'] / m['bare_switch_again']:.2f}",
         f"< {SWITCH_TARGET_S * 1000:.0f} ms: {'yes' if m['switch_again'] < SWITCH_TARGET_S else 'no'}"],
    ]
    if "models" in m:
        rows.append(["M: next model pair, report painted", ms(m["models"]), ms(m["bare_switch_first"]),
                     f"{m['models'] / m['bare_switch_first']:.2f}", "baseline: bare screen switch"])
    rows.append([f"cursor step, 4096-token stream ({STEPS} steps)", f"{m['step'] * 1000:.1f}",
                 f"{m['bare_step'] * 1000:.1f}", f"{m['step'] / m['bare_step']:.2f}", "baseline: bare Static update"])
    table = md_table(["what", "specterm ms", "bare Textual ms", "ratio", "target"], rows)
    record("TUI: start-up, screen switch, M, cursor stepping", table,
           [f"each figure: median over {args.repeat} fresh processes on a {SIZE[0]}x{SIZE[1]} pseudo-terminal "
            "(real driver), specterm and the bare app interleaved; switches: median over the 7 report screens",
            "a time ends when the frame after the action is painted (call_after_refresh)",
            f"runs: {', '.join(Path(r).name for r in runs)} ({n_pos} positions, {pairs} model pair(s)); "
            "report with B = 2000, 20 shuffles"],
           append=not args.no_append)


if __name__ == "__main__":
    main()
