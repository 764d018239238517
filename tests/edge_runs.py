"""Edge-case runs for the TUI robustness tests, written with the store API (`write_run`).

Each entry of EDGE_RUNS names a set of runs that stresses one corner the analytics and the screens
must survive: a stream accepted everywhere, one rejected everywhere, a single position, a corpus of
one prompt (beside an imported-style stream that kept only bits, no prompt text), and two model
pairs whose streams differ in length (so column widths must change with `M`), user strings
that are markup or control characters (`[/]`, ESC), a corpus name too long for 80 columns, and
prompt ids holding a tab and a newline.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

import numpy as np
from app_fixture import META, fixture_streams, make_stream

from specterm.core.store import Stream, write_run


def with_bits(stream: Stream, bits: np.ndarray) -> Stream:
    """The fixture stream with its accept bits replaced (draft guesses and confidences follow the bits)."""
    bits = np.asarray(bits, dtype=np.uint8)
    stream.bits = bits
    if stream.y is not None:
        vocab = int(stream.y.max()) + 2
        stream.draft_argmax = np.where(bits == 1, stream.y, (stream.y + 1) % vocab).astype(np.int32)
    if stream.draft_conf is not None:
        stream.draft_conf = np.where(bits == 1, 0.875, 0.375).astype(np.float32)
    return stream


def bits_only(sid: str, corpus: str, bits) -> Stream:
    """An imported-style stream: accept bits only (no prompt, tokens, gate or confidences)."""
    return Stream(id=sid, corpus=corpus, bits=np.asarray(bits, dtype=np.uint8))


def _write(root: Path, name: str, streams: list[Stream], **meta) -> Path:
    return write_run(root / name, {**META, "name": name, **meta}, streams)


def all_ones(root: Path) -> list[Path]:
    s = [with_bits(make_stream(f"ones-{i}", "prose", n, 10 + i), np.ones(n)) for i, n in enumerate((40, 24))]
    return [_write(root, "all-ones", s)]


def all_zeros(root: Path) -> list[Path]:
    s = [with_bits(make_stream(f"zeros-{i}", "code", n, 20 + i), np.zeros(n)) for i, n in enumerate((40, 24))]
    return [_write(root, "all-zeros", s)]


def one_token(root: Path) -> list[Path]:
    return [_write(root, "one-token", [with_bits(make_stream("t1", "math", 1, 30), [1])])]


def one_prompt_corpus(root: Path) -> list[Path]:
    streams = [make_stream(f"p{i}", "prose", 48 + 8 * i, 40 + i) for i in range(3)]
    streams.append(bits_only("j0", "json", [1, 1, 0, 1, 1, 1, 0, 0, 1, 1, 1, 1, 0, 1]))
    return [_write(root, "one-prompt-corpus", streams, cost={})]


def two_pairs(root: Path) -> list[Path]:
    a = _write(root, "pair-a", fixture_streams())
    long = [make_stream(f"L{i}", corpus, 128 + 64 * i, 50 + i) for i, corpus in enumerate(("code", "code", "math"))]
    b = _write(root, "pair-b", long, target={"spec": "other/target"}, cost={"r_measured": 0.6676984508157208})
    return [a, b]


def odd_names(root: Path) -> list[Path]:
    """User strings that are markup or terminal control: a corpus named `[/]`, one holding ESC and
    a carriage return, ids with brackets and a bell; the run name has markup too."""
    streams = [make_stream("[b]p0", "[/]", 48, 60), make_stream("p1\x07", "[/]", 40, 61),
               make_stream("c0[/red]", "co\x1b[31mde\r", 56, 62), make_stream("c1", "co\x1b[31mde\r", 44, 63)]
    streams[0].prompt = "[bold]not bold[/] \x1b[2J clear?"
    return [_write(root, "odd [names]", streams)]


LONG_CORPUS = "a-corpus-name-long-enough-to-push-every-number-off-an-80-column-screen"


def long_name(root: Path) -> list[Path]:
    """A corpus name of 70 characters beside a short one: at 80x24 the name must give way (an
    ellipsis), never the numbers."""
    streams = [make_stream(f"p{i}", LONG_CORPUS, 48 + 8 * i, 80 + i) for i in range(3)]
    streams += [make_stream(f"c{i}", "code", 40 + 8 * i, 85 + i) for i in range(2)]
    return [_write(root, "long-name", streams)]


def tab_id(root: Path) -> list[Path]:
    """Prompt ids holding a tab, a newline and a carriage return (JSON allows them): each is one row."""
    streams = [make_stream("tab\there", "prose", 48, 90), make_stream("new\nline", "prose", 40, 91),
               make_stream("cr\rid", "code", 44, 92), make_stream("plain", "code", 36, 93)]
    return [_write(root, "tab-id", streams)]


EDGE_RUNS: dict[str, Callable[[Path], list[Path]]] = {
    "all-ones": all_ones,
    "all-zeros": all_zeros,
    "one-token": one_token,
    "one-prompt-corpus": one_prompt_corpus,
    "two-pairs": two_pairs,
    "odd-names": odd_names,
    "long-name": long_name,
    "tab-id": tab_id,
}


# ----------------------------------------------------------- runs a person can get wrong ---
# Each makes the TUI's load fail with an error the person caused; test_tui_keys checks that the
# error is shown as one sentence (and that every key still works on the empty screens).


def corrupt_line(root: Path) -> list[Path]:
    """A run whose first record is not JSON (a hand edit gone wrong), opened alone: an error. (Beside an
    intact run it is skipped, named in a toast, and the intact run shown: test_hostile_pass3, issue 56.)"""
    bad = _write(root, "corrupt", fixture_streams())
    path = bad / "prompts.jsonl"
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b'{"id": "p0", "corpus": "prose", "bits": \n' + b"".join(lines[1:]))
    return [bad]


def no_prompts(root: Path) -> list[Path]:
    """A run that was created and stopped before its first prompt finished."""
    return [_write(root, "empty", [])]


ERROR_RUNS: dict[str, Callable[[Path], list[Path]]] = {
    "corrupt-line": corrupt_line,
    "no-prompts": no_prompts,
}
