"""Cold start of the TUI: process start -> first paint of the Overview, on the shipped runs.

Each repeat starts a fresh Python process on a pseudo-terminal (120x36), as a person's terminal
would, and records two moments: the first frame on screen (Textual's Ready event: the Overview is
painted, its tables still loading) and the Overview with its tables filled (report analysed in the
worker, painted). The baseline is a bare `python -c "import textual"` process in the same run; the
ratio says how much of the start is ours. Target: first paint under 1.5 s.

    python benchmarks/bench_tui.py [RUN ...] [--repeat 5]

Without RUN it uses the runs in ./streams; when there are none it writes a synthetic run of
40 prompts x 256 tokens to a temporary directory (and says so).
"""

from __future__ import annotations

import argparse
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

TARGET_S = 1.5


def child(out_file: str, paths: list[str]) -> None:
    """Runs inside the measured process: start the app, note the two moments, quit."""
    t_start = float(os.environ["BENCH_T0"])
    from specterm.app import SpectermApp

    marks: dict[str, float] = {}

    class Instrumented(SpectermApp):
        def on_ready(self) -> None:
            marks["first_paint"] = time.time() - t_start
            self.watch(self, "report", self._report_set)
            self.watch(self, "error", self._failed)

        def _report_set(self, report) -> None:
            if report is not None and "tables" not in marks:
                self.call_after_refresh(self._painted)

        def _painted(self) -> None:
            marks["tables"] = time.time() - t_start
            Path(out_file).write_text(json.dumps(marks))
            self.exit()

        def _failed(self, error) -> None:
            if error:
                marks["error"] = error
                Path(out_file).write_text(json.dumps(marks))
                self.exit()

    Instrumented([Path(p) for p in paths]).run()


def run_on_pty(argv: list[str], env: dict[str, str], timeout: float = 60.0) -> None:
    """Run argv on a 120x36 pseudo-terminal, draining its output until it exits."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 36, 120, 0, 0))
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


def bare_textual_start() -> float:
    t0 = time.time()
    subprocess.run([sys.executable, "-c", "import textual.app"], check=True)
    return time.time() - t0


def synthetic_run(root: Path) -> Path:
    import numpy as np

    from specterm.core.streams import Stream, new_meta, write_run

    rng = np.random.default_rng(0)
    streams = []
    for i in range(40):
        bits = (rng.random(256) < 0.7).astype(np.uint8)
        streams.append(Stream(id=f"s{i}", corpus=("prose", "code")[i % 2], bits=bits, gate=np.ones(256, np.uint8),
                              draft_conf=rng.random(256).astype(np.float32)))
    return write_run(root / "synthetic", new_meta("synthetic"), streams)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="*")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.runs)
        return

    runs = args.runs
    tmp = tempfile.TemporaryDirectory()
    if not runs:
        from specterm.core.streams import find_runs

        runs = [str(p) for p in find_runs("streams")]
    if not runs:
        runs = [str(synthetic_run(Path(tmp.name)))]
        print(f"no runs in ./streams: using a synthetic run ({runs[0]})")
    n_pos = 0
    from specterm.core.streams import load_run

    for r in runs:
        n_pos += sum(s.n for s in load_run(r).streams)
    print(f"runs: {', '.join(runs)}  ({n_pos} positions)")

    firsts, tables, bares = [], [], []
    for _ in range(args.repeat):
        out = Path(tmp.name) / "marks.json"
        out.unlink(missing_ok=True)
        env = {**os.environ, "TERM": os.environ.get("TERM", "xterm-256color")}
        env["BENCH_T0"] = repr(time.time())
        run_on_pty([sys.executable, __file__, "--child", str(out), *runs], env)
        marks = json.loads(out.read_text())
        if "error" in marks:
            raise SystemExit(f"the app failed: {marks['error']}")
        firsts.append(marks["first_paint"])
        tables.append(marks["tables"])
        bares.append(bare_textual_start())

    first, table, bare = statistics.median(firsts), statistics.median(tables), statistics.median(bares)
    print(f"bare `import textual.app` process:   {bare:.3f} s (median of {args.repeat})")
    print(f"first paint of the Overview:        {first:.3f} s   ratio {first / bare:.2f}x   "
          f"{'OK' if first < TARGET_S else 'SLOWER THAN'} target {TARGET_S} s")
    print(f"Overview with its tables (report):  {table:.3f} s   ratio {table / bare:.2f}x")
    tmp.cleanup()


if __name__ == "__main__":
    main()
