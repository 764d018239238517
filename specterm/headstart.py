"""A head start for a cold open: the first analysis runs in a child process, started before Textual
is imported, on another core.

Why: without a cached report the app analysed its runs in a thread of its own process, once Textual
was imported and the app mounted, under one GIL with the UI thread. On the shipped runs (2-core
VM) the point estimates took 0.3 s of the thread's CPU but 0.45-0.65 s of wall time there, and
started 0.8-1.0 s after launch. The child starts at launch, before the 0.3-0.5 s import of Textual,
so the import and the analysis overlap; the app shows the child's reports as they come.

`specterm open` / `specterm` (startup.py) start it on a cold open (no alias for the runs' bytes:
startup.warm_read) with the paths and analysis parameters of the first load (`HeadStart.start`);
the app's first load of those paths (for `specterm`, the readable ones among them), parameters and
the first model pair reads it (specterm/loading.py `Load`), and every other load, or a load that finds a cached
report first, closes it.

The child (`CHILD`: `main` of this process's own specterm package) reads one JSON request on stdin
({"paths", "params", "lenient", "use_cache"}) and writes one JSON object per line on stdout
(`HeadStart.read` keeps the key message as `key` and reads past it; `read_key` reads up to it):

    {"fkey": ..., "groups": n, "first": i, "prompts": p, "positions": t}
        after the runs are parsed: cache.files_key of the bytes it parsed (group 0), the number of
        model pairs, the index of the first pair's first run, and that pair's prompts and positions
        (the loading line while the point estimates are computed)
    {"report": ..., "complete": false}   the point estimates (Report.to_dict), when boot > 0
    {"report": ..., "complete": false, "cis": true}
                                         every CI and verdict, before the borderline check (SPEC 4:
                                         the verdicts under seeds 1..4; analysis.analyse's on_cis)
    {"report": ..., "complete": true}    the full report
    {"key": ...}                         cache.cache_key of the first pair's runs (after the full
                                         report: not on its way, 0.2 s at 10M positions)
    {"stored": ...}                      then, with the cache on, per other model pair: its report is in
                                         the analysis cache under this key (`wait_stored`)
    {"error": "..."}                     a SpectermError: the app loads on its own and says it

After the full report, when the cache is on, the child analyses the runs' other model pairs and
stores their reports in the analysis cache, where `M` finds them (the app's load of a pair reads
the cache by the runs' whole key): a person reads the first table before pressing `M`, and the
second core is idle meanwhile. The app stops the child when it ends (`close`).

Never trusted further than the alias of a warm open (core/report/cache.py): a report is shown only when
the child's files key equals the app's, computed from the bytes the app read itself (same bytes,
same code and parameters: the same runs), the full report too, as soon as it comes (while the app
parses the runs itself: seconds at 10M positions), and it is kept only when the runs the app parsed
from those bytes have the child's cache key (else what was shown is withdrawn and the app analyses
on its own).
Anything else from the child (no output, a crash, garbage) and the app analyses on its own, as
before. Reports travel as JSON (nothing is unpickled); a float survives the round trip exactly.

SPECTERM_HEADSTART=0 turns it off. This module imports only the standard library until the child
runs; the child imports core only (no Textual, no torch).
"""

from __future__ import annotations

import json
import os
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

if TYPE_CHECKING:
    import subprocess  # the parent's: the child does not import it (its start is on the first table's way)


STOP_WAIT_S = 1.0
"""How long `close` waits for the child to exit after SIGTERM (then SIGKILL)."""


def enabled() -> bool:
    """False when SPECTERM_HEADSTART is 0, off, no or false."""
    return os.environ.get("SPECTERM_HEADSTART", "1").strip().lower() not in ("0", "off", "no", "false")


CHILD = """
import importlib.util, os, sys
package = sys.argv[1]
spec = importlib.util.spec_from_file_location("specterm", os.path.join(package, "__init__.py"),
                                              submodule_search_locations=[package])
sys.modules["specterm"] = module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
from specterm.headstart import main
main()
"""
"""The child's program (`python -P -c CHILD PACKAGE`): `main` of the specterm package at PACKAGE, this
process's own, whatever the child's path would find first: `python -m` looked in the current folder
first, where another checkout's specterm ran other code, whose files key never matched this app's
(so no head start). The path is left in its order (the package is loaded by its location)."""


class HeadStart:
    """The parent's side: the child process, the request it was started with, its messages."""

    def __init__(self, proc: subprocess.Popen[bytes], paths: Sequence[Path], params: dict[str, Any],
                 lenient: bool = False) -> None:
        self.proc = proc
        self.paths = tuple(Path(p) for p in paths)
        self.params = dict(params)
        self.lenient = lenient
        self.key: Any = None
        """The child's cache key of the first pair's runs, once read (`read`)."""
        self.delivered = False
        """Whether the child's full report has been read (`read`; then only "stored" messages follow)."""
        self.stored: list[Any] = []
        """The keys of the other pairs' reports the child stored, as far as read (`wait_stored`)."""
        self._lock = threading.Lock()

    @classmethod
    def start(cls, paths: Sequence[Path], params: dict[str, Any], lenient: bool = False,
              use_cache: bool = True) -> HeadStart | None:
        """Start the child on `paths` with the analysis `params` (gamma, boot, shuffles, seed);
        `lenient`: runs that cannot be read are left out (load_runs_lenient, as `specterm` does);
        `use_cache`: the child may read the analysis cache and store the other model pairs' reports
        in it (the first pair's the app stores).
        None when it is turned off or cannot start (then the app analyses on its own)."""
        if not enabled():
            return None
        import subprocess

        request = json.dumps({"paths": [str(p) for p in paths], "params": dict(params), "lenient": lenient,
                              "use_cache": use_cache})
        try:
            proc = subprocess.Popen([sys.executable, "-P", "-c", CHILD, str(Path(__file__).resolve().parent)],
                                    stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                    close_fds=True)
            assert proc.stdin is not None
            proc.stdin.write(request.encode("utf-8") + b"\n")
            proc.stdin.close()
        except (OSError, ValueError, TypeError):  # no fork/exec here, or no sys.executable (embedded)
            return None
        return cls(proc, paths, params, lenient)

    def serves(self, paths: Sequence[Path], params: dict[str, Any], group: int) -> bool:
        """Whether it was started for this load: these parameters, the first model pair, and these paths
        (lenient: the load's are those of them that could be read, which the files key then checks)."""
        mine = tuple(Path(p) for p in paths)
        ok_paths = set(mine) <= set(self.paths) if self.lenient else mine == self.paths
        return ok_paths and dict(params) == self.params and group == 0

    def _receive(self) -> Any:
        """The next line of the child's stdout as JSON; None at its end (it exited, crashed or was
        closed) or on a line that is not JSON."""
        out = self.proc.stdout
        if out is None:
            return None
        try:
            line = out.readline()
            return json.loads(line) if line else None
        except (OSError, ValueError):
            return None

    def _next(self) -> dict[str, Any] | None:
        """The child's next message as it came; None at its end or on a line that is not a JSON object.
        A key message is kept (`key`), a full report marks the child `delivered`."""
        message = self._receive()
        if not isinstance(message, dict):
            return None
        if "key" in message:
            self.key = message["key"]
        elif message.get("complete") is True:
            self.delivered = True
        return message

    def read(self) -> dict[str, Any] | None:
        """The child's next message other than the key (kept as `key` and read past); None at its end
        or on a line that is not a JSON object."""
        while (message := self._next()) is not None and "key" in message:
            pass
        return message

    def read_key(self) -> Any:
        """The child's cache key of the first pair's runs: `key` once read, else the child's next message,
        which is the key (it follows the full report); None when the child ends or says something else.
        Only after the full report has been read (`delivered`), so it never takes a report."""
        if not self.delivered:
            return self.key
        with self._lock:
            if self.key is None:
                self._next()
        return self.key

    def wait_stored(self, key: Any) -> bool:
        """Whether the child has stored the report of the runs with cache key `key` in the analysis
        cache: its messages are read until it says so or ends. False at once before its full report
        has been read (`delivered`: until then the first load reads the messages). `M` to a pair the
        child is analysing waits for it instead of analysing it a second time beside it on the two
        cores. Safe from several loads at once (one reads, the others wait)."""
        if not self.delivered:
            return False
        key = json.loads(json.dumps(key))  # as the child's message gives it back
        with self._lock:
            while key not in self.stored:
                said = self.read()
                if said is None:
                    return False
                if "stored" in said:
                    self.stored.append(said["stored"])
            return True

    def close(self) -> None:
        """Stop the child (if it still runs: SIGTERM, which it turns into an exit between two Python
        steps; SIGKILL after STOP_WAIT_S) and release its pipe; safe to call more than once."""
        import subprocess

        for stop in (self.proc.terminate, self.proc.kill):
            if self.proc.poll() is not None:
                break
            try:
                stop()
                self.proc.wait(timeout=STOP_WAIT_S)
            except (OSError, subprocess.TimeoutExpired):
                pass
        if self.proc.stdout is not None:
            try:
                self.proc.stdout.close()
            except OSError:
                pass


def _send(out: IO[str], message: dict[str, Any]) -> None:
    out.write(json.dumps(message, separators=(",", ":")) + "\n")
    out.flush()


def serve(request: dict[str, Any], out: IO[str]) -> None:
    """The child's work (see the module docstring): parse the runs from the bytes it reads, say which
    bytes and runs they were, then the point estimates and the full report of the first model pair.
    The pair's runs are those the app would analyse: the runs with prompts, grouped by measurement."""
    from specterm.core.report import cache
    from specterm.core.errors import SpectermError

    params = {k: int(request["params"][k]) for k in ("gamma", "boot", "shuffles", "seed")}
    use_cache = bool(request.get("use_cache", True)) and cache.enabled()
    try:
        paths = [Path(p) for p in request["paths"]]
        if request.get("lenient"):
            from specterm.core.store import load_runs_lenient

            runs, files, _ = load_runs_lenient(paths)
        else:
            from specterm.core.store import load_run, read_run_files

            files = [read_run_files(p) for p in paths]
            runs = [load_run(p, f) for p, f in zip(paths, files)]
        from specterm.core.report.analysis import analyse
        from specterm.core.store import drafter_of, group_runs, prompts_and_positions

        with_prompts = [r for r in runs if r.streams and drafter_of(r.meta) is None]  # as loading.Loader.parse
        if not with_prompts:
            raise SpectermError("no prompts")  # the app says it in its own words
        groups = group_runs(with_prompts)
        pair = groups[0]
        prompts, positions = prompts_and_positions(pair)
        _send(out, {"fkey": cache.files_key(files, params, 0), "groups": len(groups),
                    "first": next(i for i, r in enumerate(runs) if r.path == pair[0].path),
                    "prompts": prompts, "positions": positions})
        report = analyse(pair, **params, on_point=lambda point: _send(out, {"report": point.to_dict(), "complete": False}),
                         on_cis=lambda cis: _send(out, {"report": cis.to_dict(), "complete": False, "cis": True}))
        _send(out, {"report": report.to_dict(), "complete": True})
        _send(out, {"key": cache.cache_key(pair, params)})  # after the reports: not on their way
        if use_cache:  # the other pairs, for `M`: while a person reads the first table, on this core
            for other in groups[1:]:
                key = cache.cache_key(other, params)
                if cache.load(key) is None:
                    cache.store(key, analyse(other, **params))
                _send(out, {"stored": key})
    except SpectermError as exc:
        _send(out, {"error": str(exc)})


def _stop(signum: int, frame: Any) -> None:
    raise SystemExit(0)  # unwinds: a cache entry being written is removed (store.atomic), not left half


def main() -> None:
    """The child (CHILD, or `python -m specterm.headstart`): one request on stdin, the messages on stdout."""
    import signal

    signal.signal(signal.SIGTERM, _stop)
    try:
        serve(json.loads(sys.stdin.readline()), sys.stdout)
    except BrokenPipeError:  # the app closed it (it needs no more): nothing to say
        os._exit(0)


if __name__ == "__main__":
    main()
