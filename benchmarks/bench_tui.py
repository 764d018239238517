"""The TUI's speed in one run, as ratios against a bare Textual app and against the commit before
issue 21 (950a878, checked out as a git worktree): first table with a cold and a warm analysis
cache, all CIs painted, every screen's first visit, revisits, `M` to a new and to a cached pair,
and (with --stepping) the token cursor on a 4096-token stream.

Every measurement runs in a fresh Python process on a pseudo-terminal (120x36), as in a person's
terminal, with Textual's real driver writing the frames, started the way a person starts it:
`specterm open RUN...` (the script's entry point: specterm.launch.main, or specterm.cli.main in a
tree without launch.py, such as the baseline; only make_app is swapped for an instrumented subclass). Times end when the frame after the action is painted
(`call_after_refresh`; a warm open's tables are in its first frame, so they are timed at that
frame, the app's Ready); beside the wall times the processes' CPU times are kept (less sensitive to
a loaded machine). The bare app is a Header, a Static and a Footer on two screens.

Bytecode: the children run with Python's bytecode cache (in a temporary PYTHONPYCACHEPREFIX, after
one untimed warm-up start per tree), as an installed specterm runs; this machine's environment sets
PYTHONDONTWRITEBYTECODE=1, which compiles every specterm module from source at each start (about
0.1 s) and was in force for the figures recorded before 2026-12-01 01:30. `--compile-each-run`
keeps the environment's setting.
Targets (issue 21): first table <= 1.0 s without a cache, every table with CIs <= 0.5 s with one,
every screen <= 200 ms, `M` to a cached pair <= 300 ms.

    python benchmarks/bench_tui.py [RUN ...] [--repeat 3] [--stepping] [--start-only] [--no-append]

Without RUN it uses the runs in ./streams (`M` is timed when they hold two model pairs).
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

FIRST_PAINT_TARGET_S = 1.5
SWITCH_TARGET_S = 0.3
STEPS = 60
SIZE = (120, 36)
IDLE_S = 2.0
"""Idle time after the full report (and after M) before the next key: a person reads first."""
ROOT = Path(__file__).resolve().parents[1]
BASELINE = "950a878"
"""The commit before issue 21 (cache, point-first paint, idle mounting)."""


# ------------------------------------------------------------------ inside the measured process ---

class Marks:
    """Collects named timings and writes them as JSON when the app is done."""

    def __init__(self, out_file: str) -> None:
        self.t0 = float(os.environ["BENCH_T0"])
        self.out = Path(out_file)
        self.data: dict[str, object] = {}

    def since_start(self, name: str) -> None:
        self.data[name] = time.time() - self.t0
        self.data[f"{name}_cpu"] = time.process_time()  # the process's CPU time (every thread), less load-dependent

    def save(self) -> None:
        self.out.write_text(json.dumps(self.data))


def painted(app) -> asyncio.Future[float]:
    """A future set to time.perf_counter() once the next frame has been painted."""
    fut: asyncio.Future[float] = asyncio.get_running_loop().create_future()
    app.call_after_refresh(lambda: fut.done() or fut.set_result(time.perf_counter()))
    return fut


def child_specterm(out_file: str, paths: list[str], stepping: bool, start_only: bool = False) -> None:
    """`specterm open PATHS` with an instrumented app; works on this tree and on the baseline tree
    (no point-first paint there: its first report is full)."""
    import importlib.abc
    import importlib.util

    import specterm

    # the script's main; looked up in the tree under test (find_spec would also see the editable install's)
    entry = "specterm.launch" if (Path(specterm.__file__).parent / "launch.py").exists() else "specterm.cli"
    marks = Marks(out_file)

    class Instrument(importlib.abc.MetaPathFinder):
        """Swaps make_app when the entry point first imports specterm.app, not before: importing it
        here would import Textual before the entry point starts anything (the analysis's child
        process of specterm/headstart.py starts before Textual is imported)."""

        def find_spec(self, name, path, target=None):
            if name != "specterm.app":
                return None
            sys.meta_path.remove(self)
            spec = importlib.util.find_spec(name)
            run_module = spec.loader.exec_module

            def exec_module(module):
                run_module(module)
                instrument(module)

            spec.loader.exec_module = exec_module
            return spec

    def instrument(app_module) -> None:
        cls = instrumented(app_module, marks, stepping, start_only)
        app_module.make_app = lambda paths, **kw: cls(paths, **kw)

    sys.meta_path.insert(0, Instrument())
    sys.argv = ["specterm", "open", *paths]  # B = 2000, the default
    importlib.import_module(entry).main()


async def step_tokens(app, marks: Marks) -> None:
    """STEPS token steps on Streams, each timed to its frame."""
    from specterm.widgets.tokens import TokenView

    await app.switch_mode("streams")
    await painted(app)
    view = app.screen.query_one(TokenView)
    times = []
    for _ in range(STEPS):
        t0 = time.perf_counter()
        view.action_step(1)
        times.append(await painted(app) - t0)
    marks.data["step"] = times


async def visit_screens(app, marks: Marks, modes: list[str]) -> None:
    """Every screen twice (first visits mount them), then `M` to the second pair and back, each timed to its frame."""
    for label in ("switch_first", "switch_again"):  # first visits mount the screens
        times = {}
        for mode in modes[1:] + modes[:1]:
            t0 = time.perf_counter()
            await app.switch_mode(mode)
            times[mode] = await painted(app) - t0
        marks.data[label] = times
    await app.switch_mode(modes[0])
    await painted(app)
    if app.n_model_groups > 1:
        for label in ("models_new", "models_cached"):  # to the second pair (analysed), back (cached)
            app._complete.clear()
            t0 = time.perf_counter()
            app.action_next_models()
            await app._complete.wait()
            marks.data[label] = await painted(app) - t0
            await asyncio.sleep(IDLE_S)


def mark_after_refresh(app, marks: Marks, names: tuple[str, ...]) -> None:
    """Mark each of `names` not marked yet once the next frame is painted."""
    for name in names:
        if name not in marks.data:
            app.call_after_refresh(marks.since_start, name)


def instrumented(app_module, marks: Marks, stepping: bool, start_only: bool):
    """The app class of `specterm open`, with the bench's marks and key sequence."""
    SpectermApp, SCREENS = app_module.SpectermApp, app_module.SCREENS
    modes = [s.mode for s in SCREENS if s.mode != "run"]

    class Instrumented(SpectermApp):
        def on_ready(self) -> None:
            marks.since_start("first_paint")
            self._complete = asyncio.Event()
            self._started = False
            if self.report is not None and not getattr(self, "ci_pending", False):
                # A warm open composes its report into the first screen (app._show_warm), so the frame
                # just painted shows every table with its CIs: that is when they were painted (the
                # watcher below would mark the frame after it, 20-30 ms later).
                for name in ("table", "cis"):
                    marks.data[name], marks.data[f"{name}_cpu"] = marks.data["first_paint"], marks.data["first_paint_cpu"]
            self.watch(self, "report", self._report_set)
            self.watch(self, "error", self._failed)

        def _report_set(self, report) -> None:
            if report is None:
                return
            complete = not getattr(self, "ci_pending", False)
            mark_after_refresh(self, marks, ("table", "cis") if complete else ("table",))
            if complete:
                self._complete.set()
                if not self._started:
                    self._started = True
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
            if start_only:
                marks.save()
                self.exit()
                return
            await asyncio.sleep(IDLE_S)  # a person reads the first table before pressing a key
            if stepping:
                await step_tokens(self, marks)
            else:
                await visit_screens(self, marks, modes)
            marks.save()
            self.exit()

    return Instrumented


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


BYTECODE_CACHE = True
"""Children keep compiled modules (PYTHONPYCACHEPREFIX under the temporary folder), as an installed
specterm does; False (--compile-each-run) leaves the environment's PYTHONDONTWRITEBYTECODE."""


def measure(kind: str, runs: list[str], tmp: Path, stepping: bool = False, tree: Path = ROOT,
            cache: Path | None = None, start_only: bool = False) -> dict:
    """One fresh process of `kind` ("specterm" from `tree`, or "bare") on the pty; its marks."""
    out = tmp / "marks.json"
    out.unlink(missing_ok=True)
    env = {**os.environ, "TERM": os.environ.get("TERM", "xterm-256color"), "BENCH_T0": repr(time.time()),
           "PYTHONPATH": str(tree), "XDG_CACHE_HOME": str(cache or tmp / "no-cache")}
    if BYTECODE_CACHE:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(tmp / "pycache")
    if start_only:
        env["BENCH_START_ONLY"] = "1"
    argv = [sys.executable, __file__, "--child", kind, "--out", str(out), *runs]
    if stepping:
        argv.append("--stepping")
    run_on_pty(argv, env)
    marks = json.loads(out.read_text())
    if "error" in marks:
        raise SystemExit(f"the app failed: {marks['error']}")
    return marks


def baseline_tree(rev: str, where: Path) -> Path:
    """A detached `git worktree` of `rev` at `where` (made once, kept for later runs)."""
    if not (where / "specterm").is_dir():
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(where), rev],
                       check=True, capture_output=True)
    return where


def long_run(root: Path, n: int = 4096) -> Path:
    from app_fixture import META, make_stream

    from specterm.core.store import write_run

    return write_run(root / f"long-{n}", {**META, "name": f"long-{n}"}, [make_stream("long", "code", n, 7)])


def ms(x: float) -> str:
    return f"{x * 1000:.0f}"


def measure_rounds(args, runs: list[str], base_tree) -> tuple[dict[str, list], dict[str, list[float]]]:
    """args.repeat interleaved rounds of cold, warm, baseline and bare starts (and steps with --stepping)."""
    med = statistics.median
    short = args.start_only
    ours: dict[str, list] = {"cold": [], "warm": [], "base": [], "bare": []}
    steps: dict[str, list[float]] = {"ours": [], "base": [], "bare": []}
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        long = str(long_run(tmp)) if args.stepping else ""
        if BYTECODE_CACHE:  # one untimed start per tree fills the bytecode cache
            for tree in (ROOT,) if args.no_baseline else (ROOT, base_tree):
                measure("specterm", runs, tmp, tree=tree, cache=tmp / "warm-up", start_only=True)
            measure("bare", [], tmp)
        for i in range(args.repeat):  # interleaved, so drift in the machine's load hits all alike
            cache = tmp / f"cache-{i}"
            ours["cold"].append(measure("specterm", runs, tmp, cache=cache, start_only=short))  # fills the cache
            ours["warm"].append(measure("specterm", runs, tmp, cache=cache, start_only=short))
            if not args.no_baseline:
                ours["base"].append(measure("specterm", runs, tmp, tree=base_tree, start_only=short))
            ours["bare"].append(measure("bare", [], tmp))
            base_s = f"{ours['base'][-1]['table']:.2f}" if ours["base"] else "-"
            print(f"round {i + 1}: first table cold {ours['cold'][-1]['table']:.2f} s, warm {ours['warm'][-1]['table']:.2f} s, "
                  f"baseline {base_s} s, bare first paint {ours['bare'][-1]['first_paint']:.2f} s; "
                  f"load avg {os.getloadavg()[0]:.2f}", flush=True)
            if args.stepping:
                steps["ours"].append(med(measure("specterm", [long], tmp, stepping=True)["step"]))
                steps["base"].append(med(measure("specterm", [long], tmp, stepping=True, tree=base_tree)["step"]))
                steps["bare"].append(med(measure("bare", [], tmp, stepping=True)["step"]))

    return ours, steps


def main() -> None:
    global BYTECODE_CACHE
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="*")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--baseline", default=BASELINE, help="git revision timed as the baseline tree")
    parser.add_argument("--baseline-tree", type=Path, default=Path(tempfile.gettempdir()) / f"specterm-{BASELINE}",
                        help="where its worktree is (made when missing)")
    parser.add_argument("--no-baseline", action="store_true",
                        help="skip the baseline tree (its columns read nan): quicker rounds while working on this tree")
    parser.add_argument("--stepping", action="store_true", help="also time the cursor on a 4096-token stream")
    parser.add_argument("--start-only", action="store_true",
                        help="time the start only (first paint, first table, every table with CIs): no screen switches, no M")
    parser.add_argument("--compile-each-run", action="store_true",
                        help="no bytecode cache for the children (this environment's PYTHONDONTWRITEBYTECODE, if set)")
    parser.add_argument("--no-append", action="store_true")
    parser.add_argument("--child", choices=("specterm", "bare"), help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child == "specterm":
        return child_specterm(args.out, args.runs, args.stepping, start_only=os.environ.get("BENCH_START_ONLY") == "1")
    if args.child == "bare":
        return child_bare(args.out, args.stepping)

    from _common import md_table, record

    from specterm.core.store import find_runs, group_runs, load_run

    BYTECODE_CACHE = not args.compile_each_run
    runs = args.runs or [str(p.resolve()) for p in find_runs("streams")]
    if not runs:
        raise SystemExit("no runs in ./streams: pass run directories.")
    loaded = [load_run(r) for r in runs]
    n_pos = sum(s.n for r in loaded for s in r.streams)
    pairs = len(group_runs(loaded))
    base_tree = ROOT if args.no_baseline else baseline_tree(args.baseline, args.baseline_tree)
    print(f"runs: {', '.join(runs)}  ({n_pos} positions, {pairs} model pair(s)); baseline {args.baseline} at {base_tree}")

    med = statistics.median
    short = args.start_only
    ours, steps = measure_rounds(args, runs, base_tree)

    def m(kind: str, key: str, sub: str | None = None) -> float:
        vals = [r[key][sub] if sub else r[key] for r in ours[kind] if key in r]
        return med(vals) if vals else float("nan")

    bare_first = m("bare", "first_paint")
    bare_first_cpu = m("bare", "first_paint_cpu")
    bare_switch = med([med(list(r["switch_first"])) for r in ours["bare"]])
    bare_again = med([med(list(r["switch_again"])) for r in ours["bare"]])

    def row(what: str, cold: float, warm: float | None, base: float, bare: float, target: str) -> list[str]:
        return [what, ms(cold), "" if warm is None else ms(warm), ms(base), ms(bare), f"{cold / bare:.2f}",
                "" if warm is None else f"{warm / bare:.2f}", f"{cold / base:.2f}", "" if warm is None else f"{warm / base:.2f}", target]

    def met(x: float, limit: float) -> str:
        return f"<= {limit * 1000:.0f} ms: {'yes' if x <= limit else 'no'}"

    rows = [
        row("first paint (this tree: blank until the report or 0.25 s, loading at once with a head start; baseline: Loading...)", m("cold", "first_paint"),
            m("warm", "first_paint"), m("base", "first_paint"), bare_first, ""),
        row("first table (cold: point estimates; warm: with CIs)", m("cold", "table"), m("warm", "table"), m("base", "table"),
            bare_first, f"cold {met(m('cold', 'table'), 1.0)}"),
        row("every table with CIs", m("cold", "cis"), m("warm", "cis"), m("base", "cis"), bare_first,
            f"warm {met(m('warm', 'cis'), 0.5)}"),
        row("CPU time of the process at the first table", m("cold", "table_cpu"), m("warm", "table_cpu"), m("base", "table_cpu"),
            bare_first_cpu, "bare: at its first paint"),
        row("CPU time of the process at every table with CIs", m("cold", "cis_cpu"), m("warm", "cis_cpu"), m("base", "cis_cpu"),
            bare_first_cpu, ""),
    ]
    if not short:
        modes = list(ours["cold"][0]["switch_first"])
        for mode in modes:
            cold, warm = m("cold", "switch_first", mode), m("warm", "switch_first", mode)
            rows.append(row(f"first visit: {mode}", cold, warm, m("base", "switch_first", mode), bare_switch, met(max(cold, warm), 0.2)))
        again = [m(k, "switch_again", mode) for k in ("cold", "warm") for mode in modes]
        base_again = med([m("base", "switch_again", mode) for mode in modes])
        rows.append(row("revisit (median over screens)", med(again[: len(modes)]), med(again[len(modes):]), base_again, bare_again,
                        met(max(again), 0.2)))
        if pairs > 1:
            rows.append(row("M: to the other pair, first time (CIs painted)", m("cold", "models_new"), m("warm", "models_new"),
                            m("base", "models_new"), bare_switch, ""))
            rows.append(row("M: back to a pair already shown", m("cold", "models_cached"), m("warm", "models_cached"),
                            m("base", "models_cached"), bare_switch,
                            met(max(m("cold", "models_cached"), m("warm", "models_cached")), 0.3)))
    if args.stepping:
        o, b, bb = med(steps["ours"]), med(steps["base"]), med(steps["bare"])
        rows.append([f"cursor step, 4096-token stream ({STEPS} steps)", f"{o * 1000:.1f}", "", f"{b * 1000:.1f}", f"{bb * 1000:.1f}",
                     f"{o / bb:.2f}", "", f"{o / b:.2f}", "", "baseline: bare Static update"])
    table = md_table(["what", "cold cache ms", "warm cache ms", f"baseline {args.baseline} ms", "bare Textual ms",
                      "cold / bare", "warm / bare", f"cold / {args.baseline}", f"warm / {args.baseline}", "target"], rows)
    bytecode = ("children with Python's bytecode cache (PYTHONPYCACHEPREFIX in the temporary folder, one untimed warm-up "
                "start per tree), as an installed specterm runs" if BYTECODE_CACHE else
                "children compile every module without a bytecode cache (--compile-each-run; PYTHONDONTWRITEBYTECODE="
                f"{os.environ.get('PYTHONDONTWRITEBYTECODE', '')!r})")
    record("TUI: first table (cold and warm cache), every screen's first visit, M" + (" (start only)" if short else ""), table,
           [(f"each figure: median over {args.repeat} fresh processes on a {SIZE[0]}x{SIZE[1]} pseudo-terminal (real driver), "
             f"started as `specterm open RUN...` (the script's main; B = 2000, the default); "
             f"per round: this tree with an empty analysis cache (cold), again with the cache it filled (warm), the baseline "
             f"tree {args.baseline} (the commit before issue 21, a git worktree; no cache there), then a bare Textual app"),
            ("times from process start (first paint, tables) or from the key (switches, M) to the frame painted after it "
             "(call_after_refresh); the bare app's first visit of a screen is the switch baseline; CPU rows: the process's "
             "CPU time (all threads) at that frame"),
            bytecode,
            f"after the full report (and after each M) the script waits {IDLE_S:.0f} s before the next key, as a person reading would",
            f"runs: {', '.join(Path(r).name for r in runs)} ({n_pos} positions, {pairs} model pair(s)); report with B = 2000, 20 shuffles",
            f"load average at the end: {os.getloadavg()[0]:.2f}; the machine is shared with other jobs: compare the ratios, "
            "not the absolute times"],
           append=not args.no_append)


if __name__ == "__main__":
    main()
