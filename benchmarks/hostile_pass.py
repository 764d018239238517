"""A hostile user's pass over specterm (issue 56's "fresh hostile pass"): scripted cases in twelve
categories (run folders, cache, profiles, outputs, concurrency, imports, escapes, arguments,
cross-run, disk full, read-only, TUI). A case *holds* when specterm does the right thing: refuses in
one sentence (exit 2, no traceback, nothing written), loads what is sound and names what is not,
never blocks, never writes over what is not its own. It *fails* otherwise (including a hang past
CASE_TIMEOUT_S or an exception).

Not a timing and not part of the test run (tests/test_hostile_pass3.py holds one test per finding);
this is the broad sweep whose counts go into the issue's closing note. Needs no root: FIFOs are made
with os.mkfifo, devices are /dev/null and /dev/zero through symlinks in the temporary folder (no case
ever writes to a real /dev path: code without the fix, run as root, would replace it), a full or
read-only disk is an OSError injected at the write. Everything happens under a temporary folder with
its own cache. On code without the fix, run it under `ulimit -v` (a prompts.jsonl linked to /dev/zero
is read until memory runs out).

    python benchmarks/hostile_pass.py [--only CATEGORY] [--verbose] [--timeout S]

Prints one line per failed case and a table of cases, held and failed per category; exit status 1
when any case failed.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

CASE_TIMEOUT_S = 60
CASES: list[tuple[str, str, Callable[[Path], None]]] = []


def case(category: str, name: str) -> Callable[[Callable[[Path], None]], Callable[[Path], None]]:
    def add(fn: Callable[[Path], None]) -> Callable[[Path], None]:
        CASES.append((category, name, fn))
        return fn
    return add


# ------------------------------------------------------------------------------------ helpers ---


def cli(*args: object, env: dict[str, str] | None = None) -> tuple[int, str]:
    """The command line in this process (typer's CliRunner): (exit code, stdout + stderr + any
    exception's text, with a traceback marked)."""
    from typer.testing import CliRunner

    from specterm.cli import app

    from specterm.core.errors import SpectermError
    from specterm.core.report.text import printable
    from specterm.startup import os_error_sentence

    res = CliRunner().invoke(app, [str(a) for a in args], env=env)
    text = res.output
    exc = res.exception
    if isinstance(exc, SpectermError):  # what startup.run (the real entry point) prints for it
        text += f"error: {printable(str(exc))}\n"
    elif isinstance(exc, OSError):
        text += f"error: {printable(os_error_sentence(exc))}\n"
    elif exc is not None and not isinstance(exc, SystemExit):
        text += "\nTraceback (exception): " + "".join(traceback.format_exception(exc))[-800:]
    return res.exit_code, text


def refused(result: tuple[int, str], *words: str) -> None:
    """A refusal: exit 2 (or 1), one error sentence, no traceback, each of `words` in it."""
    code, out = result
    assert code != 0, f"accepted (exit 0): {out[-300:]!r}"
    assert "Traceback" not in out, out[-800:]
    errors = [line for line in out.splitlines() if line.startswith("error:") or "Error" in line or "Invalid" in line]
    assert errors or "Usage:" in out, f"no error line: {out[-300:]!r}"
    for w in words:
        assert w in out, f"{w!r} not in {out[-400:]!r}"


def ok(result: tuple[int, str], *words: str) -> str:
    code, out = result
    assert code == 0, f"exit {code}: {out[-600:]!r}"
    for w in words:
        assert w in out, f"{w!r} not in {out[-400:]!r}"
    return out


def fixture_run(root: Path, name: str = "run", **extra: object) -> Path:
    from app_fixture import META, fixture_streams

    from specterm.core.store import write_run

    return write_run(root / name, {**META, "name": name, **extra}, fixture_streams())


def import_run(root: Path, name: str = "imp", n: int = 12) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    src = root / f"{name}.jsonl"
    src.write_text("".join(json.dumps({"id": f"p{i}", "corpus": "code" if i % 2 else "prose",
                                       "bits": "0110111011"[: 4 + i % 6]}) + "\n" for i in range(n)))
    ok(cli("import", src, "--out", root / name))
    return root / name


def edit_meta(run: Path, change: Callable[[dict], None], reseal: bool = True) -> None:
    """run.json with `change` applied, its checksum written again (`reseal`): a valid checksum."""
    from specterm.core.store.meta import META_CHECKSUM_FIELD, meta_checksum

    meta = json.loads((run / "run.json").read_text())
    change(meta)
    if reseal and META_CHECKSUM_FIELD in meta:
        meta[META_CHECKSUM_FIELD] = meta_checksum(meta)
    (run / "run.json").write_text(json.dumps(meta, indent=2))


def records(run: Path) -> list[bytes]:
    return (run / "prompts.jsonl").read_bytes().splitlines(keepends=True)


def load_refused(run: Path, *words: str) -> None:
    from specterm.core.errors import SpectermError
    from specterm.core.store import load_run

    try:
        load_run(run)
    except SpectermError as exc:
        text = str(exc)
        assert "\n" not in text.strip(), text
        for w in words:
            assert w in text, f"{w!r} not in {text!r}"
        return
    raise AssertionError("loaded")


def fifo(path: Path) -> Path:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    elif os.path.lexists(path):
        path.unlink()
    os.mkfifo(path)
    return path


def relink(path: Path, to: str) -> Path:
    if os.path.lexists(path):
        path.unlink()
    path.symlink_to(to)
    return path


@contextlib.contextmanager
def failing_writes(err: int) -> Iterator[None]:
    """Every fsync of a file raises OSError(err): a full disk (ENOSPC) or a file system that turned
    read-only (EROFS) at the moment data would reach it; nothing else is patched."""
    real = os.fsync

    def fsync(fd: int) -> None:
        import stat

        if stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(err, os.strerror(err))
        real(fd)

    os.fsync = fsync  # type: ignore[assignment]
    try:
        yield
    finally:
        os.fsync = real  # type: ignore[assignment]


def no_temp_left(folder: Path) -> None:
    left = [p.name for p in folder.iterdir() if p.name.startswith(".") and p.name.endswith((".tmp", ".partial"))]
    assert not left, f"left behind: {left}"


# ------------------------------------------------------------------------------ run folders ---


@case("run folders", "a new run is sealed (schema 2, records, meta_checksum, checksums)")
def _(tmp: Path) -> None:
    from specterm.core.store import load_run, read_meta

    run = fixture_run(tmp)
    meta = read_meta(run)
    assert meta["schema_version"] == 2 and meta["records"] == len(records(run)) and meta["meta_checksum"]
    assert load_run(run).warnings == []


for _key in ("meta_checksum", "records", "checksums"):
    @case("run folders", f"a sealed run without {_key} is refused")
    def _(tmp: Path, key: str = _key) -> None:
        run = fixture_run(tmp)
        edit_meta(run, lambda m: m.pop(key), reseal=key != "meta_checksum")
        load_refused(run, "sealed format", "specterm repair")


for _cut in ("last record", "last three", "last mid-line", "a middle line", "all lines"):
    @case("run folders", f"a sealed run with {_cut} cut is refused")
    def _(tmp: Path, cut: str = _cut) -> None:
        run = fixture_run(tmp)
        lines = records(run)
        new = {"last record": lines[:-1], "last three": lines[:-3], "last mid-line": lines[:-1] + [lines[-1][:40]],
               "a middle line": lines[:2] + lines[3:], "all lines": []}[cut]
        (run / "prompts.jsonl").write_bytes(b"".join(new))
        load_refused(run, "run.json says")


@case("run folders", "a sealed run stripped of meta_checksum and records, then cut, is refused")
def _(tmp: Path) -> None:
    run = fixture_run(tmp)
    edit_meta(run, lambda m: [m.pop("meta_checksum"), m.pop("records")], reseal=False)
    (run / "prompts.jsonl").write_bytes(b"".join(records(run)[:-2]))
    load_refused(run, "sealed format")


@case("run folders", "a truly old run loads with one warning naming repair")
def _(tmp: Path) -> None:
    from specterm.core.store import load_run

    run = fixture_run(tmp)
    edit_meta(run, lambda m: [m.__setitem__("schema_version", 1), m.pop("records"), m.pop("meta_checksum")], reseal=False)
    warnings = load_run(run).warnings
    assert len(warnings) == 1 and "specterm repair" in warnings[0] and "record count" in warnings[0], warnings


@case("run folders", "an old run sealed by repair refuses a later cut")
def _(tmp: Path) -> None:
    from specterm.core.store import repair_run

    run = fixture_run(tmp)
    edit_meta(run, lambda m: [m.__setitem__("schema_version", 1), m.pop("records"), m.pop("meta_checksum")], reseal=False)
    repair_run(run)
    (run / "prompts.jsonl").write_bytes(b"".join(records(run)[:-1]))
    load_refused(run, "run.json says")


@case("run folders", "the shipped runs are sealed and load without a warning")
def _(tmp: Path) -> None:
    from specterm.core.store import load_run

    for run in sorted((ROOT / "streams").iterdir()):
        loaded = load_run(run)
        assert loaded.meta["schema_version"] == 2 and loaded.warnings == [], (run, loaded.warnings)


for _version in (0, -1, 3, "2", True, 2.0):
    @case("run folders", f"schema_version {_version!r} is refused")
    def _(tmp: Path, version: object = _version) -> None:
        run = fixture_run(tmp)
        edit_meta(run, lambda m: m.__setitem__("schema_version", version))
        load_refused(run)


TYPED = [
    ("confirmations", [1, "x"]), ("sessions", [42]), ("hardware", {"cpu": [1]}), ("batch_cost", []),
    ("tokenizer_vocab", 5), ("tokenizer_vocab", 0), ("records", -1), ("records", "5"), ("shard", [3, 2]),
    ("shard", [0, 10**9]), ("merged_from", [1]), ("profiles", "x"), ("profiles", [{}]), ("checksums", "yes"),
    ("name", 5), ("target", {"vocab_size": 0}), ("target", {"layers": -2}),
    ("generation", {"max_new_tokens": 10**12}), ("generation", {"batch_size": 0}), ("generation", {"eos_token_ids": [-1]}),
    ("hardware", {"cpu_count": 0}), ("sessions", [{"torch_threads": -1}]), ("confirmations", [{"threads": 0}]),
    ("confirmations", [{"hardware": {"cpu": 7}}]), ("backend", {"threads": 10**9}), ("backend", "llama.cpp"),
    ("cost", {"c_decode_s": -1}), ("cost", {"threads": 0}),
    ("profiles", [{"id": "p", "cost": {"c_decode_s": 0.1}, "device": {"threads": 0}}]),
    ("profiles", [{"id": "p", "cost": {"c_decode_s": 0.1}, "engine": "torch"}]),
    ("profiles", [{"id": 5, "cost": {"c_decode_s": 0.1}}]),
    ("profiles", [{"id": "p", "cost": {"c_decode_s": 1e9}}]),
]
for _field, _value in TYPED:
    @case("run folders", f"{_field}={json.dumps(_value)[:40]} is refused by load and repair (valid checksum)")
    def _(tmp: Path, field: str = _field, value: object = _value) -> None:
        from specterm.core.errors import SpectermError
        from specterm.core.store import repair_run

        run = fixture_run(tmp)
        edit_meta(run, lambda m: m.__setitem__(field, value))
        load_refused(run)
        try:
            repair_run(run)
        except SpectermError:
            return
        raise AssertionError("repair accepted it")


@case("run folders", "record ids at or above tokenizer_vocab are refused")
def _(tmp: Path) -> None:
    run = fixture_run(tmp)
    edit_meta(run, lambda m: m.__setitem__("tokenizer_vocab", 3))
    load_refused(run)


for _kind in ("fifo prompts.jsonl", "fifo run.json", "dir prompts.jsonl", "/dev/zero prompts.jsonl",
              "/dev/null run.json", "socket prompts.jsonl", "fifo run.lock on repair"):
    @case("run folders", f"{_kind}: refused at once, never blocks")
    def _(tmp: Path, kind: str = _kind) -> None:
        run = fixture_run(tmp / "streams")
        what, name = kind.split(" ")[0], kind.split(" ")[1]
        target = run / name
        if what == "fifo":
            fifo(target)
        elif what == "dir":
            target.unlink()
            target.mkdir()
        elif what == "socket":
            target.unlink()
            s = socket.socket(socket.AF_UNIX)
            s.bind(str(target))
            s.close()
        else:
            relink(target, what)
        if kind.endswith("on repair"):
            refused(cli("repair", run), "FIFO")
            return
        load_refused(run)
        out = ok(cli("list", "--root", tmp / "streams"), "skipped")
        assert "Traceback" not in out


# ------------------------------------------------------------------------------------ cache ---


def _cached(tmp: Path) -> tuple[Path, str]:
    run = fixture_run(tmp)
    out = ok(cli("report", run, "--boot", "20", "--shuffles", "0", "--format", "json"))
    return run, out


def _entries() -> list[Path]:
    from specterm.core.report import cache

    return sorted(cache.cache_dir().glob("*.json"))


for _damage in ("fifo", "directory", "truncated", "flipped byte", "/dev/zero link", "empty", "another entry"):
    @case("cache", f"an entry made {_damage} is a miss, the report unchanged")
    def _(tmp: Path, damage: str = _damage) -> None:
        run, first = _cached(tmp)
        entries = _entries()
        assert entries
        for p in entries:
            raw = p.read_bytes()
            if damage == "fifo":
                fifo(p)
            elif damage == "directory":
                p.unlink()
                p.mkdir()
            elif damage == "truncated":
                p.write_bytes(raw[: len(raw) // 2])
            elif damage == "flipped byte":
                i = len(raw) // 2
                p.write_bytes(raw[:i] + bytes([raw[i] ^ 1]) + raw[i + 1:])
            elif damage == "/dev/zero link":
                relink(p, "/dev/zero")
            elif damage == "empty":
                p.write_bytes(b"")
            else:
                p.write_bytes(entries[0].read_bytes() if p != entries[0] else b"{}")
        again = ok(cli("report", run, "--boot", "20", "--shuffles", "0", "--format", "json"))
        assert json.loads(again[again.index("{"):])["sets"] == json.loads(first[first.index("{"):])["sets"]


@case("cache", "a report served from the cache says so on stderr, a fresh one does not")
def _(tmp: Path) -> None:
    run, first = _cached(tmp)
    assert "analysis cache" not in first
    ok(cli("report", run, "--boot", "20", "--shuffles", "0"), "served from the analysis cache", "--no-cache")
    out = ok(cli("report", run, "--boot", "20", "--shuffles", "0", "--no-cache"))
    assert "served from" not in out


@case("cache", "SPECTERM_CACHE=0 neither reads nor says the cache")
def _(tmp: Path) -> None:
    run, _ = _cached(tmp)
    out = ok(cli("report", run, "--boot", "20", "--shuffles", "0", env={"SPECTERM_CACHE": "0"}))
    assert "served from" not in out


# --------------------------------------------------------------------------------- profiles ---


def _profile(cpu: str, threads: int, pid: str, c_decode: float = 0.5, **cost_extra: object) -> dict:
    from test_profiles import cost

    c = {**cost(c_decode, 0.5, 0.05, "2026-12-01T10:00:00+00:00", threads=threads), **cost_extra}
    return {"id": pid, "engine": {"name": "torch"}, "dtype": "float32", "measured_at": c["measured_at"],
            "device": {"kind": "cpu", "name": cpu, "threads": threads}, "cost": c}


def _analysed(run: Path, cpu: str, threads: int):
    from specterm.core.report import analysis
    from specterm.core.decide.machine import Machine
    from specterm.core.store import load_run

    real = analysis.this_machine
    analysis.this_machine = lambda: Machine(cpu=cpu, cores=2, threads=threads)  # type: ignore[assignment]
    try:
        return analysis.analyse([load_run(run)], boot=0, shuffles=0)
    finally:
        analysis.this_machine = real  # type: ignore[assignment]


@case("profiles", "a profile without c_decode_s is named as skipped")
def _(tmp: Path) -> None:
    prof = _profile("AMD EPYC", 1, "pnodecode")
    del prof["cost"]["c_decode_s"]
    run = fixture_run(tmp, profiles=[prof])
    ok(cli("report", run, "--boot", "0", "--shuffles", "0"), "pnodecode", "skipped")


@case("profiles", "this machine's profile at other threads is used and says which threads and the command")
def _(tmp: Path) -> None:
    run = fixture_run(tmp, profiles=[_profile("AMD EPYC", 2, "ptwo")])
    rep = _analysed(run, "AMD EPYC", 1)
    d = rep.sets["pooled"].decision_hw
    assert d is not None and d.profile == "ptwo" and d.matches_this_machine and "2 threads" in (d.machine or "")
    assert rep.profile_note and "--threads 1" in rep.profile_note and "2 threads" in rep.profile_note


@case("profiles", "the profile at this machine's threads wins over a newer one at other threads")
def _(tmp: Path) -> None:
    run = fixture_run(tmp, profiles=[_profile("AMD EPYC", 1, "pone", 0.4), _profile("AMD EPYC", 4, "pfour")])
    rep = _analysed(run, "AMD EPYC", 1)
    assert rep.sets["pooled"].decision_hw.profile == "pone" and rep.profile_note is None


@case("profiles", "another machine's profile is never this machine's")
def _(tmp: Path) -> None:
    run = fixture_run(tmp, profiles=[_profile("Intel Xeon", 1, "pxeon")])
    rep = _analysed(run, "AMD EPYC", 1)
    assert not rep.sets["pooled"].decision_hw.matches_this_machine and "no cost profile" in (rep.profile_note or "")


@case("profiles", "confirm does not take another thread count's profile as this machine's decision")
def _(tmp: Path) -> None:
    from specterm.core.decide.hardware.profiles import decision_profile
    from specterm.core.decide.machine import Machine
    from specterm.core.store import read_meta

    run = fixture_run(tmp, profiles=[_profile("AMD EPYC", 2, "ptwo")])
    assert decision_profile(read_meta(run), Machine(cpu="AMD EPYC", cores=2, threads=1)) is None
    assert decision_profile(read_meta(run), Machine(cpu="AMD EPYC", cores=2, threads=2)) is not None


for _bad in ({"c_decode_s": -1.0}, {"c_decode_s": 1e9}, {"threads": 0}, {"context": 0}):
    @case("profiles", f"a profile cost {_bad} is refused")
    def _(tmp: Path, bad: dict = _bad) -> None:
        prof = _profile("AMD EPYC", 1, "pbad")
        prof["cost"].update(bad)
        run = fixture_run(tmp)
        edit_meta(run, lambda m: m.__setitem__("profiles", [prof]))
        load_refused(run, "profiles[0]")


# ---------------------------------------------------------------------------------- outputs ---


def _report_o(tmp: Path, target: object, *extra: object) -> tuple[int, str]:
    run = tmp / "in" / "run" if (tmp / "in" / "run").exists() else fixture_run(tmp / "in")
    return cli("report", run, "--boot", "0", "--shuffles", "0", "-o", target, *extra)


@case("outputs", "-o onto a FIFO is refused, the FIFO kept")
def _(tmp: Path) -> None:
    target = fifo(tmp / "p")
    refused(_report_o(tmp, target), "FIFO")
    assert target.is_fifo()


@case("outputs", "a device as -o is refused where it stands (checked, never written)")
def _(tmp: Path) -> None:
    # never `report -o /dev/null` itself: the code before the fix, run as root, replaced /dev/null
    from specterm.core.errors import SpectermError
    from specterm.core.store.atomic import check_output_target

    try:
        check_output_target(Path("/dev/null"))
    except SpectermError as exc:
        assert "character device" in str(exc)
    else:
        raise AssertionError("accepted")
    link = relink(tmp / "null", "/dev/null")
    refused(_report_o(tmp, link), "symbolic link")
    assert link.is_symlink()


@case("outputs", "-o a link to /proc/self/fd/1 (what /dev/stdout is) is refused")
def _(tmp: Path) -> None:
    link = relink(tmp / "stdout", "/proc/self/fd/1")
    refused(_report_o(tmp, link), "symbolic link")
    assert link.is_symlink()


@case("outputs", "-o onto a symlink to a regular file is refused, the file untouched")
def _(tmp: Path) -> None:
    (tmp / "real.md").write_text("keep\n")
    link = relink(tmp / "l.md", str(tmp / "real.md"))
    refused(_report_o(tmp, link), "symbolic link")
    assert (tmp / "real.md").read_text() == "keep\n" and link.is_symlink()


@case("outputs", "-o onto a dangling symlink is refused")
def _(tmp: Path) -> None:
    link = relink(tmp / "l.md", str(tmp / "nowhere.md"))
    refused(_report_o(tmp, link), "symbolic link")
    assert not (tmp / "nowhere.md").exists()


@case("outputs", "-o a directory is refused")
def _(tmp: Path) -> None:
    refused(_report_o(tmp, tmp), "directory")


@case("outputs", "-o into a missing folder is refused")
def _(tmp: Path) -> None:
    refused(_report_o(tmp, tmp / "no" / "r.md"), "does not exist")


@case("outputs", "-o inside a run (and deeper) is refused")
def _(tmp: Path) -> None:
    run = fixture_run(tmp)
    (run / "sub").mkdir()
    for target in (run / "r.md", run / "sub" / "r.md", run / "run.json"):
        refused(_report_o(tmp, target))
    assert not (run / "r.md").exists()


@case("outputs", "-o - writes to stdout and creates no file")
def _(tmp: Path) -> None:
    cwd = os.getcwd()
    os.chdir(tmp)
    try:
        out = ok(_report_o(tmp, "-"))
        assert out.lstrip().startswith("#") and not (tmp / "-").exists()
    finally:
        os.chdir(cwd)


@case("outputs", "-o over a regular file replaces it atomically; a new name is created")
def _(tmp: Path) -> None:
    (tmp / "old.md").write_text("old\n")
    ok(_report_o(tmp, tmp / "old.md"), "wrote")
    ok(_report_o(tmp, tmp / "new.md"), "wrote")
    assert (tmp / "old.md").read_text().startswith("#") and (tmp / "new.md").read_text().startswith("#")
    no_temp_left(tmp)


def _two_engines(tmp: Path) -> tuple[Path, Path]:
    """The same pair and prompts in torch and in llama.cpp (what crossstack compares)."""
    return fixture_run(tmp, "a"), fixture_run(tmp, "b", backend={"name": "llama.cpp"})


@case("outputs", "crossstack -o onto a FIFO is refused")
def _(tmp: Path) -> None:
    a, b = _two_engines(tmp)
    refused(cli("crossstack", a, b, "-o", fifo(tmp / "p")), "FIFO")


@case("outputs", "the TUI's export onto a FIFO is refused (write_output)")
def _(tmp: Path) -> None:
    from specterm.core.errors import SpectermError
    from specterm.core.store.atomic import write_output

    try:
        write_output(fifo(tmp / "p"), b"x")
    except SpectermError as exc:
        assert "FIFO" in str(exc)
        return
    raise AssertionError("written")


# ------------------------------------------------------------------------------ concurrency ---


HOLD = ("import sys, time; sys.path.insert(0, {root!r}); from specterm.core.store import RunLock; "
        "l = RunLock({run!r}).acquire(); print('held', flush=True); time.sleep(30)")


@contextlib.contextmanager
def held(run: Path) -> Iterator[None]:
    proc = subprocess.Popen([sys.executable, "-c", HOLD.format(root=str(ROOT), run=str(run))], stdout=subprocess.PIPE)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == b"held"
        yield
    finally:
        proc.kill()
        proc.wait()


@case("concurrency", "a second writer is refused while a session holds the lock")
def _(tmp: Path) -> None:
    from specterm.core.errors import SpectermError
    from specterm.core.store import RunWriter, read_meta

    run = fixture_run(tmp)
    with held(run):
        try:
            RunWriter(run, read_meta(run), resume=True)
        except SpectermError as exc:
            assert "another specterm session" in str(exc)
            return
    raise AssertionError("opened")


@case("concurrency", "repair of a locked run is refused")
def _(tmp: Path) -> None:
    run = fixture_run(tmp)
    with held(run):
        refused(cli("repair", run), "another specterm session")


@case("concurrency", "merge of a live shard is refused")
def _(tmp: Path) -> None:
    s0, s1 = _shards(tmp)
    with held(s1):
        refused(cli("merge", s0, s1, "--out", tmp / "m"), "another specterm session")
    assert not (tmp / "m").exists()


@case("concurrency", "a killed writer's lock does not block (the kernel drops it)")
def _(tmp: Path) -> None:
    run = fixture_run(tmp)
    with held(run):
        pass
    ok(cli("repair", run))


# ---------------------------------------------------------------------------------- imports ---


def _import(tmp: Path, recs: list[dict], out: Path | None = None) -> tuple[int, str]:
    src = tmp / "in.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in recs))
    return cli("import", src, "--out", out or tmp / "streams" / "imp")


for _corpus in ("poo\u200bled", "\uff50\uff4f\uff4f\uff4c\uff45\uff44", "poo\u2060led", "\u200bpooled", "POOLED",
                "pooled\u200d", "co\u0007de", "code\u00a0", "co\u202ede", " code", "pooled "):
    @case("imports", f"corpus {_corpus!r} is refused")
    def _(tmp: Path, corpus: str = _corpus) -> None:
        refused(_import(tmp, [{"id": "a", "corpus": corpus, "bits": "01"}]))
        assert not (tmp / "streams" / "imp").exists()


for _bits in ("", "012", " ", 5):
    @case("imports", f"bits {_bits!r} are refused")
    def _(tmp: Path, bits: object = _bits) -> None:
        refused(_import(tmp, [{"id": "a", "corpus": "code", "bits": bits}]), "in.jsonl:1")


@case("imports", "--out inside a run, or deeper, is refused")
def _(tmp: Path) -> None:
    run = fixture_run(tmp)
    for out in (run / "x", run / "a" / "b"):
        refused(_import(tmp, [{"id": "a", "corpus": "code", "bits": "01"}], out), "inside the run")
        assert not out.exists()


@case("imports", "--out an existing path or a symlink is refused")
def _(tmp: Path) -> None:
    (tmp / "there").mkdir()
    refused(_import(tmp, [{"id": "a", "corpus": "code", "bits": "01"}], tmp / "there"), "already exists")
    relink(tmp / "link", str(tmp / "elsewhere"))
    refused(_import(tmp, [{"id": "a", "corpus": "code", "bits": "01"}], tmp / "link"), "already exists")
    assert not (tmp / "elsewhere").exists()


@case("imports", "an import source that is a FIFO is refused at once")
def _(tmp: Path) -> None:
    refused(cli("import", fifo(tmp / "src.jsonl"), "--out", tmp / "imp"), "is not a file")


@case("imports", "an import is listed as one with gate n/a")
def _(tmp: Path) -> None:
    import_run(tmp / "streams")
    out = ok(cli("list", "--root", tmp / "streams"), "(import)")
    row = next(line for line in out.splitlines() if line.startswith("imp"))
    assert row.split()[-1] == "n/a", row


for _fmt in ("md", "text", "json"):
    @case("imports", f"the {_fmt} report labels an import an import with gate n/a, never torch")
    def _(tmp: Path, fmt: str = _fmt) -> None:
        run = import_run(tmp)
        out = ok(cli("report", run, "--boot", "0", "--shuffles", "0", "--format", fmt))
        if fmt == "json":
            data = json.loads(out[out.index("{"):])
            assert data["runs"][0]["engine"] == "import" and data["sets"]["pooled"]["gate_rate"] is None
        else:
            assert "import" in out and "torch" not in out


@case("imports", "an import of only blank lines is refused")
def _(tmp: Path) -> None:
    (tmp / "in.jsonl").write_text("\n\n")
    refused(cli("import", tmp / "in.jsonl", "--out", tmp / "imp"), "no prompts")


# ---------------------------------------------------------------------------------- escapes ---

ESC = "a\x1b[2Jb\x07c"


@case("escapes", "report -o PATH with ESC/BEL: the wrote line is escaped")
def _(tmp: Path) -> None:
    out = ok(_report_o(tmp, tmp / f"{ESC}.md"), "wrote")
    assert "\x1b" not in out and "\x07" not in out and "\\x1b" in out


@case("escapes", "merge --out PATH with ESC/BEL: the merged line is escaped")
def _(tmp: Path) -> None:
    s0, s1 = _shards(tmp)
    out = ok(cli("merge", s0, s1, "--out", tmp / ESC), "merged")
    assert "\x1b" not in out and "\x07" not in out


@case("escapes", "import --out PATH with ESC/BEL: the imported line is escaped")
def _(tmp: Path) -> None:
    code, out = _import(tmp, [{"id": "a", "corpus": "code", "bits": "01"}], tmp / ESC)
    assert code == 0 and "\x1b" not in out and "\x07" not in out


@case("escapes", "an error naming a path with ESC/BEL is escaped")
def _(tmp: Path) -> None:
    code, out = cli("report", tmp / ESC)
    assert code != 0 and "\x1b" not in out and "\x07" not in out


@case("escapes", "list --root PATH with ESC/BEL is escaped")
def _(tmp: Path) -> None:
    code, out = cli("list", "--root", tmp / ESC)
    assert "\x1b" not in out and "\x07" not in out


@case("escapes", "crossstack -o PATH with ESC/BEL: the wrote line is escaped")
def _(tmp: Path) -> None:
    a, b = _two_engines(tmp)
    out = ok(cli("crossstack", a, b, "-o", tmp / f"{ESC}.md"), "wrote")
    assert "\x1b" not in out and "\x07" not in out


# -------------------------------------------------------------------------------- arguments ---


def _fake_costs(*args: object, **kw: object) -> None:
    raise AssertionError("reached the measurement")


ARGS = [
    ("report", ["--boot", "99999999999999999999"]), ("report", ["--boot", "2147483648"]), ("report", ["--boot", "-1"]),
    ("report", ["--shuffles", "100000000000"]), ("report", ["--shuffles", "-2"]), ("report", ["--seed", "-1"]),
    ("report", ["--seed", "99999999999999999999999"]), ("report", ["--gamma", "0"]), ("report", ["--gamma", "33"]),
    ("report", ["--format", "xml"]), ("open", ["--boot", "99999999999999999999"]), ("open", ["--shuffles", "100000000000"]),
    ("costs", ["--max-seconds", "-1"]), ("costs", ["--max-seconds", "nan"]), ("costs", ["--max-seconds", "inf"]),
    ("costs", ["--max-seconds", "0"]), ("costs", ["--quiet-wait", "-5"]), ("costs", ["--quiet-wait", "nan"]),
    ("costs", ["--quiet-wait", "inf"]), ("costs", ["--threads", "0"]), ("costs", ["--threads", "100000"]),
    ("costs", ["--max-rounds", "1"]), ("costs", ["--max-rounds", "10000000"]),
    ("confirm", ["--repeats", "0"]), ("confirm", ["--per-corpus", "0"]), ("confirm", ["--gamma", "99"]),
    ("confirm", ["--threads", "0"]), ("confirm", ["--batch", "0"]), ("confirm", ["--max-new-tokens", "0"]),
    ("crossstack", ["--hist-gamma", "99"]),
]
for _cmd, _args in ARGS:
    @case("arguments", f"{_cmd} {' '.join(_args)} is refused in one line")
    def _(tmp: Path, cmd: str = _cmd, args: list[str] = _args) -> None:
        import specterm.engines.confirm as confirm_mod
        import specterm.engines.costs as costs_mod

        run = fixture_run(tmp)
        real = costs_mod.costs_command, confirm_mod.confirm_command
        costs_mod.costs_command, confirm_mod.confirm_command = _fake_costs, _fake_costs  # type: ignore[assignment]
        try:
            start = time.monotonic()
            extra = [run] if cmd != "crossstack" else [run, run]
            refused(cli(cmd, *extra, *args), args[0])
            assert time.monotonic() - start < 20
        finally:
            costs_mod.costs_command, confirm_mod.confirm_command = real  # type: ignore[assignment]


RUN_ARGS = [["-n", "0"], ["-n", "99999999999"], ["--batch-size", "0"], ["--batch-size", "100000"], ["--limit", "0"],
            ["--spec-gamma", "99"], ["--threads", "0"]]
for _args in RUN_ARGS:
    @case("arguments", f"run {' '.join(_args)} is refused before any model")
    def _(tmp: Path, args: list[str] = _args) -> None:
        refused(cli("run", "--target", "t", "--draft", "d", "--out", tmp / "o", *args), args[0])


@case("arguments", "run --target on a file that is not a model says so (not 'does not exist')")
def _(tmp: Path) -> None:
    from specterm.core.errors import SpectermError
    from specterm.engines.torch.models_torch import resolve_spec

    (tmp / "passwd").write_text("root:x:0:0\n")
    try:
        resolve_spec(str(tmp / "passwd"))
    except SpectermError as exc:
        assert "not a .gguf model" in str(exc)
        return
    raise AssertionError("accepted")


for _cmd, _bound in (("report", "100000"), ("open", "100000"), ("costs", "86400"), ("run", "1000000"),
                     ("confirm", "1024"), ("crossstack", "32")):
    @case("arguments", f"{_cmd} --help shows its bounds")
    def _(tmp: Path, cmd: str = _cmd, bound: str = _bound) -> None:
        ok(cli(cmd, "--help", env={"COLUMNS": "300"}), bound)


@case("arguments", "a bootstrap too large for memory is refused before it allocates")
def _(tmp: Path) -> None:
    from specterm.core.streams.bootstrap import check_bootstrap_memory
    from specterm.core.errors import SpectermError

    try:
        check_bootstrap_memory(100_000, 50_000_000, 6, 16 << 30)
    except SpectermError as exc:
        assert "lower --boot" in str(exc)
        return
    raise AssertionError("accepted")


# -------------------------------------------------------------------------------- cross-run ---


def _shards(tmp: Path, parts: int = 2) -> tuple[Path, ...]:
    from app_fixture import META, fixture_streams

    from specterm.core.store import write_run

    streams = fixture_streams()
    share = len(streams) // parts
    return tuple(write_run(tmp / f"r.shard-{i}-of-{parts}", {**META, "name": "r", "shard": [i, parts]},
                           streams[i * share: (i + 1) * share if i < parts - 1 else None]) for i in range(parts))


@case("cross-run", "merge of shard 0/2 alone is refused, naming 1/2")
def _(tmp: Path) -> None:
    s0, _ = _shards(tmp)
    refused(cli("merge", s0, "--out", tmp / "m"), "1/2", "--allow-partial")
    assert not (tmp / "m").exists()


@case("cross-run", "merge --allow-partial warns naming the missing shards")
def _(tmp: Path) -> None:
    s = _shards(tmp, 3)
    ok(cli("merge", s[0], s[2], "--out", tmp / "m", "--allow-partial"), "warning", "1/3")


@case("cross-run", "merge of shards of different splits is refused")
def _(tmp: Path) -> None:
    a = _shards(tmp / "a")
    b = _shards(tmp / "b", 3)
    refused(cli("merge", a[0], b[1], "--out", tmp / "m"), "parts")


@case("cross-run", "merge of a shard and a run that is none is refused")
def _(tmp: Path) -> None:
    s0, _ = _shards(tmp)
    refused(cli("merge", s0, fixture_run(tmp, "plain"), "--out", tmp / "m"), "not a shard")


@case("cross-run", "merge of every shard succeeds, each prompt once")
def _(tmp: Path) -> None:
    from app_fixture import fixture_streams

    s = _shards(tmp, 3)
    ok(cli("merge", *s, "--out", tmp / "m"), f"merged {len(fixture_streams())} prompts")


@case("cross-run", "merge --out inside a run is refused")
def _(tmp: Path) -> None:
    s0, s1 = _shards(tmp)
    refused(cli("merge", s0, s1, "--out", s0 / "m"), "inside the run")


@case("cross-run", "run --resume on a new path or an empty folder says so and stops")
def _(tmp: Path) -> None:
    from specterm.core.errors import SpectermError
    from specterm.core.store import check_new_run_dir

    (tmp / "empty").mkdir()
    for out in (tmp / "new", tmp / "empty"):
        try:
            check_new_run_dir(out, resume=True)
        except SpectermError as exc:
            assert "no run to resume" in str(exc)
            continue
        raise AssertionError(f"{out} accepted")


@case("cross-run", "run --out inside a run is refused")
def _(tmp: Path) -> None:
    from specterm.core.errors import SpectermError
    from specterm.core.store import check_new_run_dir

    run = fixture_run(tmp)
    try:
        check_new_run_dir(run / "inner", resume=False)
    except SpectermError as exc:
        assert "inside the run" in str(exc)
        return
    raise AssertionError("accepted")


def _opened(monkeypatch_target: dict) -> Callable[..., None]:
    def opener(paths: list[Path], **kw: object) -> None:
        monkeypatch_target["paths"] = list(paths)
    return opener


@case("cross-run", "open CORRUPT GOOD (a bad record line): the app's load shows GOOD and names CORRUPT")
def _(tmp: Path) -> None:
    from specterm.loading import Loader, Parsed

    good, bad = fixture_run(tmp, "good"), fixture_run(tmp, "bad")
    (bad / "prompts.jsonl").write_bytes(b"{x\n" + (bad / "prompts.jsonl").read_bytes())
    events: list = []
    Loader({"gamma": 8, "boot": 0, "shuffles": 0, "seed": 0}, use_cache=False).load([bad, good], 1, 0, events.append,
                                                                                     lambda: False)
    (parsed,) = [e for e in events if isinstance(e, Parsed)]
    assert [r.path for r in parsed.runs] == [good] and len(parsed.skipped) == 1 and str(bad) in parsed.skipped[0]


for _damage in ("fifo records", "missing run.json", "stripped seal", "typed field"):
    @case("cross-run", f"open CORRUPT GOOD ({_damage}) opens GOOD and names CORRUPT")
    def _(tmp: Path, damage: str = _damage) -> None:
        from specterm import cli as cli_mod

        good, bad = fixture_run(tmp, "good"), fixture_run(tmp, "bad")
        if damage == "typed field":
            edit_meta(bad, lambda m: m.__setitem__("sessions", [42]))
        elif damage == "fifo records":
            fifo(bad / "prompts.jsonl")
        elif damage == "missing run.json":
            (bad / "run.json").unlink()
        else:
            edit_meta(bad, lambda m: m.pop("meta_checksum"), reseal=False)
        seen: dict = {}
        real = cli_mod.open_tui
        cli_mod.open_tui = _opened(seen)  # type: ignore[assignment]
        try:
            out = ok(cli("open", bad, good), "skipped")
        finally:
            cli_mod.open_tui = real  # type: ignore[assignment]
        assert seen["paths"] == [good] and "bad" in out


@case("cross-run", "report of two runs of different pairs is refused in one sentence")
def _(tmp: Path) -> None:
    a = fixture_run(tmp, "a")
    b = fixture_run(tmp, "b", target={"spec": "another/target"})
    refused(cli("report", a, b, "--boot", "0"))


# -------------------------------------------------------------------------------- disk full ---


for _errno, _cat in ((errno.ENOSPC, "disk full"), (errno.EROFS, "read-only"), (errno.EACCES, "read-only")):
    _label = errno.errorcode[_errno]

    @case(_cat, f"report -o with {_label}: one sentence, the old file intact, no temp left")
    def _(tmp: Path, err: int = _errno) -> None:
        run = fixture_run(tmp / "in")
        (tmp / "r.md").write_text("old\n")
        with failing_writes(err):
            code, out = cli("report", run, "--boot", "0", "--shuffles", "0", "-o", tmp / "r.md")
        refused((code, out), "cannot write")
        assert (tmp / "r.md").read_text() == "old\n"
        no_temp_left(tmp)

    @case(_cat, f"import with {_label}: one sentence, nothing left")
    def _(tmp: Path, err: int = _errno) -> None:
        src = tmp / "in.jsonl"
        src.write_text(json.dumps({"id": "a", "corpus": "code", "bits": "0110"}) + "\n")
        (tmp / "streams").mkdir()
        with failing_writes(err):
            refused(cli("import", src, "--out", tmp / "streams" / "imp"), "cannot write")
        assert list((tmp / "streams").iterdir()) == []

    @case(_cat, f"repair with {_label}: one sentence, the run unchanged")
    def _(tmp: Path, err: int = _errno) -> None:
        run = fixture_run(tmp)
        edit_meta(run, lambda m: [m.__setitem__("schema_version", 1), m.pop("records"), m.pop("meta_checksum")], reseal=False)
        before = (run / "run.json").read_bytes(), (run / "prompts.jsonl").read_bytes()
        with failing_writes(err):
            refused(cli("repair", run), "cannot write")
        assert ((run / "run.json").read_bytes(), (run / "prompts.jsonl").read_bytes()) == before
        no_temp_left(run)

    @case(_cat, f"merge with {_label}: one sentence, no merged run")
    def _(tmp: Path, err: int = _errno) -> None:
        s0, s1 = _shards(tmp)
        with failing_writes(err):
            refused(cli("merge", s0, s1, "--out", tmp / "m"), "cannot write")
        assert not (tmp / "m").exists()
        no_temp_left(tmp)

    @case(_cat, f"a writer's append with {_label}: one sentence, the run loads as before")
    def _(tmp: Path, err: int = _errno) -> None:
        from app_fixture import fixture_streams

        from specterm.core.errors import SpectermError
        from specterm.core.store import RunWriter, load_run, read_meta

        streams = fixture_streams()
        run = tmp / "w"
        from app_fixture import META

        with RunWriter(run, {**META, "name": "w"}) as w:
            w.append(streams[0])
            with failing_writes(err):
                try:
                    w.append(streams[1])
                except SpectermError as exc:
                    assert "cannot write" in str(exc)
                else:
                    raise AssertionError("appended")
        # the record whose fsync failed may or may not be on disk; the run loads, whole, its count a lower bound
        loaded = [s.id for s in load_run(run).streams]
        assert loaded in ([streams[0].id], [streams[0].id, streams[1].id]) and read_meta(run)["records"] == 1


# -------------------------------------------------------------------------------------- TUI ---


async def _tui(paths: list[Path], keys: list[str]) -> list[str]:
    """The app on `paths` (80x24, boot 20): after each key, the head line; raises what the app raised."""
    from specterm.app import make_app
    from specterm.screens.base import head_line

    app = make_app(paths, boot=20, shuffles=0, use_cache=False)
    heads = []
    async with app.run_test(size=(80, 24)) as pilot:
        for _ in range(200):
            await pilot.pause(0.05)
            if app.report is not None:
                break
        for key in keys:
            await pilot.press(key)
            await pilot.pause(0.05)
            heads.append(head_line(app, "x", "y", 200))
    assert not app.return_code, "the app failed"
    return heads


def tui_case(name: str, make: Callable[[Path], list[Path]], keys: list[str], check: Callable[[list[str]], None]) -> None:
    @case("TUI", name)
    def _(tmp: Path) -> None:
        import asyncio

        check(asyncio.run(_tui(make(tmp), keys)))


tui_case("an import's head line says import, never torch, through every screen",
         lambda t: [import_run(t)], ["1", "2", "3", "4", "5", "6", "7", "c", "question_mark", "escape"],
         lambda heads: all("import" in h and "torch" not in h for h in heads) or (_ for _ in ()).throw(AssertionError(heads)))
tui_case("an old run opens and keys raise nothing",
         lambda t: [_old(fixture_run(t))], ["1", "2", "j", "k", "3", "4", "5", "6", "7", "c", "M"], lambda heads: None)
tui_case("a run with a profile at other threads opens and keys raise nothing",
         lambda t: [fixture_run(t, profiles=[_profile("AMD EPYC", 2, "ptwo")])], ["6", "r", "R", "p", "7", "1"], lambda heads: None)
tui_case("an import beside a run (two pairs) switches with M and raises nothing",
         lambda t: [import_run(t), fixture_run(t)], ["M", "1", "6", "M", "2", "7"], lambda heads: None)


def _old(run: Path) -> Path:
    edit_meta(run, lambda m: [m.__setitem__("schema_version", 1), m.pop("records"), m.pop("meta_checksum")], reseal=False)
    return run


@case("TUI", "open_runs on CORRUPT GOOD hands the app only GOOD, loaded")
def _(tmp: Path) -> None:
    from specterm.startup import open_runs

    good, bad = fixture_run(tmp, "good"), fixture_run(tmp, "bad")
    fifo(bad / "prompts.jsonl")
    seen: dict = {}

    def opener(paths: list[Path], **kw: object) -> None:
        seen.update(paths=list(paths), loaded=kw.get("loaded"))

    open_runs([bad, good], opener, use_cache=False)
    assert seen["paths"] == [good]
    seen.clear()
    open_runs([bad, good], opener, use_cache=False, where="./streams")  # `specterm`: loaded here
    assert seen["paths"] == [good] and seen["loaded"] and len(seen["loaded"][0].streams) > 0


@case("TUI", "the app on CORRUPT (a bad record) GOOD shows GOOD and names CORRUPT in a toast")
def _(tmp: Path) -> None:
    import asyncio

    from specterm.app import make_app

    good, bad = fixture_run(tmp, "good"), fixture_run(tmp, "bad")
    (bad / "prompts.jsonl").write_bytes(b"{x\n" + (bad / "prompts.jsonl").read_bytes())

    async def go() -> tuple[list[Path], list[str]]:
        app = make_app([bad, good], boot=20, shuffles=0, use_cache=False)
        toasts: list[str] = []
        real = app.notify

        def notify(message: str, **kw: object) -> None:
            toasts.append(message)
            real(message, **kw)  # type: ignore[arg-type]

        app.notify = notify  # type: ignore[method-assign]
        async with app.run_test(size=(80, 24)) as pilot:
            for _ in range(200):
                await pilot.pause(0.05)
                if app.runs is not None and app.report is not None:
                    break
            await pilot.press("2")
            await pilot.pause(0.1)
        return [r.path for r in app.runs or []], toasts

    paths, toasts = asyncio.run(go())
    assert paths == [good] and any("bad" in t and "not valid JSON" in t for t in toasts), (paths, toasts)


# ------------------------------------------------------------------------------------- main ---


def set_timeout(seconds: int) -> None:
    global CASE_TIMEOUT_S
    CASE_TIMEOUT_S = seconds


class Timeout(Exception):
    pass


def _alarm(signum: int, frame: object) -> None:
    raise Timeout(f"no answer in {CASE_TIMEOUT_S} s")


def run_case(fn: Callable[[Path], None]) -> str | None:
    """None when the case holds, else why it failed."""
    tmp = Path(tempfile.mkdtemp(prefix="specterm-hostile-"))
    os.environ["XDG_CACHE_HOME"] = str(tmp / ".xdg-cache")
    os.environ.pop("SPECTERM_CACHE", None)
    signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(CASE_TIMEOUT_S)
    try:
        fn(tmp)
        return None
    except AssertionError as exc:
        return f"AssertionError: {str(exc)[:400]}"
    except BaseException as exc:
        return f"{type(exc).__name__}: {str(exc)[:300]} {traceback.format_exc()[-600:]}"
    finally:
        signal.alarm(0)
        shutil.rmtree(tmp, ignore_errors=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", help="run only this category")
    ap.add_argument("--verbose", action="store_true", help="a line per case, held or not")
    ap.add_argument("--timeout", type=int, default=CASE_TIMEOUT_S, help="seconds a case may take before it counts as a hang")
    args = ap.parse_args()
    set_timeout(args.timeout)
    os.environ.setdefault("SPECTERM_HEADSTART", "0")
    counts: dict[str, list[int]] = {}
    failures = []
    t0 = time.monotonic()
    for category, name, fn in CASES:
        if args.only and category != args.only:
            continue
        why = run_case(fn)
        held_fail = counts.setdefault(category, [0, 0])
        held_fail[0 if why is None else 1] += 1
        if why is not None:
            failures.append((category, name, why))
            print(f"FAILED [{category}] {name}: {why}", flush=True)
        elif args.verbose:
            print(f"held   [{category}] {name}", flush=True)
    print()
    print("| category | cases | held | failed |")
    print("|---|---:|---:|---:|")
    for category, (h, f) in counts.items():
        print(f"| {category} | {h + f} | {h} | {f} |")
    total_h = sum(h for h, _ in counts.values())
    total_f = sum(f for _, f in counts.values())
    print(f"| all | {total_h + total_f} | {total_h} | {total_f} |")
    print(f"\n{time.monotonic() - t0:.0f} s")
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
