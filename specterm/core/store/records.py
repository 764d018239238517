"""Records: the codec and validation of one line of `prompts.jsonl` (one prompt's stream).

Record fields (per prompt, n = number of positions of the continuation y_1..y_n):

    id, corpus, prompt        str (prompt may be null for imported runs)
    n                         int
    bits                      "0110..." a_t = 1 iff draft argmax at t == y_{t+1}, t = 0..n-1
    gate                      "1111..." target argmax at t == y_{t+1} (null: not checked, i.e. imported)
    y, draft_argmax           base64 of little-endian int32 arrays of length n (or null)
    text, piece_ends          decoded pieces of y concatenated, and base64 int32 end offsets (or null)
    draft_conf, target_conf   base64 float32: top-1 probability of draft / target at each t (or null)
    beta                      base64 float32: sum_v min(p_t(v), q_t(v)) (or null)
    stop                      "eos" | "length" | null
    repairs                   [t, ...] increasing in [0, n): where y holds the teacher-forced token (SPEC 1.3's
                              repair loop, llama.cpp); absent (None): never went through the loop (torch, older runs)
    runs, proposed            a drafter run's records (SPEC 2b, run.json draft.kind prompt-lookup|ngram) carry,
                              instead of bits / draft_argmax / draft_conf / beta, two JSON lists of n ints: L_s, the
                              drafter's accepted run at block start s, and m_s, its proposal's length:
                              0 <= L_s <= min(m_s, n - s), m_s <= the run's draft.max_tokens; and prompt_tokens,
                              the prompt's length in tokens (llama.cpp's ngram-simple's rule per g reads it)
    checksum                  16 hex digits (see below; absent in runs written before checksums)

Every record written since checksums exist carries `checksum`, the first 16 hex digits of the
sha256 of its canonical JSON (sorted keys, ASCII, no spaces) without that field, and run.json says
`"checksums": true`; such a run refuses a record without one.

Analysed positions (`Stream.kept`, a = bits[kept]): with `repairs`, every position whose gate holds
(excluded one by one); otherwise those before the first gate failure (SPEC 1, torch). The statistics
read a (an excluded mid-stream position is dropped); warm-up bins use absolute t (`Stream.kept_t`).

Probabilities (draft_conf, target_conf, beta) must be finite and within [0, 1] (up to float32
rounding, PROB_SLACK).

Arrays are base64 rather than JSON lists so that loading 1M positions stays well under a second.
Nothing is ever unpickled.

Length: one record format, its codec, canonical JSON and checksum, and the check of every field; a
run's load decodes its lines many at a time with the same checks (store/batch.py).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from json.encoder import encode_basestring_ascii
from typing import Any

import numpy as np

from specterm.core.errors import SpectermError
from specterm.core.report.types import POOLED

CHECKSUM_FIELD = "checksum"
BOM = b"\xef\xbb\xbf"
PROB_SLACK = 1e-5  # float32 rounding: a sum of min(p, q) over 150k entries may land a few ulps above 1

RESERVED_CORPUS_NAMES = (POOLED,)  # the report's own set names: a corpus may not take one

INT_FIELDS = ("y", "draft_argmax", "piece_ends")
FLOAT_FIELDS = ("draft_conf", "target_conf", "beta")
STR_FIELDS = ("id", "corpus", "prompt", "text", "stop")


def encode_array(values: np.ndarray, dtype: str) -> str:
    """Base64 of the little-endian bytes of `values` as `dtype` ('<i4' or '<f4')."""
    return base64.b64encode(np.ascontiguousarray(values, dtype=dtype).tobytes()).decode("ascii")


def decode_array(text: str, dtype: str) -> np.ndarray:
    """Inverse of `encode_array`; raises ValueError on bad base64 or a size that is not whole items."""
    raw = base64.b64decode(text.encode("ascii"), validate=True)
    item = np.dtype(dtype).itemsize
    if len(raw) % item:
        raise ValueError(f"{len(raw)} bytes is not a whole number of {dtype} items")
    return np.frombuffer(raw, dtype=dtype)


def bits_from_str(text: str) -> np.ndarray:
    """'0110' -> array([0, 1, 1, 0], uint8); raises ValueError on any other character."""
    arr = np.frombuffer(text.encode("ascii"), dtype=np.uint8) - ord("0")
    if arr.size and arr.max() > 1:
        raise ValueError("bits must contain only the characters 0 and 1")
    return arr


def bits_to_str(bits: np.ndarray) -> str:
    return (np.asarray(bits, dtype=np.uint8) + ord("0")).tobytes().decode("ascii")


@dataclass
class Stream:
    """One prompt's accept/reject stream and what the oracle kept per position."""

    id: str
    corpus: str
    bits: np.ndarray  # uint8, a_t for t = 0..n-1
    prompt: str | None = None
    gate: np.ndarray | None = None  # uint8, 1 where target argmax == y_{t+1}
    y: np.ndarray | None = None
    draft_argmax: np.ndarray | None = None
    draft_conf: np.ndarray | None = None
    target_conf: np.ndarray | None = None
    beta: np.ndarray | None = None
    text: str | None = None
    piece_ends: np.ndarray | None = None
    stop: str | None = None
    repairs: list[int] | None = None  # flipped positions of the repair loop; None: never repaired (torch float32 on the CPU, old runs)
    run: str = ""
    runs: np.ndarray | None = None      # a drafter run's L_s per block start s (int32; bits is then empty)
    proposed: np.ndarray | None = None  # a drafter run's m_s per block start s (int32)
    prompt_tokens: int | None = None    # a drafter run's prompt length in tokens (its rule per g may read it)

    @property
    def n(self) -> int:
        return int(self.runs.size) if self.runs is not None else int(self.bits.size)

    @property
    def drafted(self) -> bool:
        """True for a drafter run's stream (L_s and m_s instead of per-position bits, SPEC 2b)."""
        return self.runs is not None

    @property
    def first_failure(self) -> int:
        """The first t whose gate fails (n when the gate held everywhere or was not checked)."""
        if self.gate is None:
            return self.n
        bad = np.flatnonzero(self.gate == 0)
        return int(bad[0]) if bad.size else self.n

    @property
    def one_by_one(self) -> bool:
        """True when positions are excluded one by one (a stream with repair information and a gate)."""
        return self.repairs is not None and self.gate is not None

    @property
    def valid_len(self) -> int:
        """The number of analysed positions, kept.sum() (a count, never a boundary: slice by `kept`)."""
        return int(self.kept.sum()) if self.one_by_one else self.first_failure

    @property
    def kept(self) -> np.ndarray:
        """bool mask over t = 0..n-1 of the analysed positions (a = bits[kept]): gate == 1 one by one,
        else t < first_failure (SPEC 1: torch and streams stored without repair information)."""
        return np.asarray(self.gate == 1, dtype=bool) if self.one_by_one else np.arange(self.n) < self.first_failure

    @property
    def kept_t(self) -> np.ndarray:
        """The absolute positions t of the analysed stream a (int64): a[i] is a_t at t = kept_t[i]."""
        return np.flatnonzero(self.kept)

    @property
    def excluded(self) -> np.ndarray:  # the positions t left out of the analysis (int64, sorted)
        return np.flatnonzero(~self.kept)

    @property
    def a(self) -> np.ndarray:  # the analysed stream bits[kept]
        return self.analysed(self.bits)

    def analysed(self, values: np.ndarray) -> np.ndarray:
        """A per-position column (n values: bits, beta, draft_conf) on the analysed positions, values[kept]."""
        cut: np.ndarray = np.asarray(values)
        return cut[self.gate == 1] if self.one_by_one else cut[: self.first_failure]

    @property
    def analysed_span(self) -> int:
        """1 + the last analysed position t (0 when none): the positions a warm-up table must cover."""
        if not self.one_by_one:
            return self.first_failure
        kept_t = self.kept_t
        return int(kept_t[-1]) + 1 if kept_t.size else 0

    @property
    def contiguous(self) -> bool:
        """True when the analysed positions are t = 0 .. len(a)-1 (no position excluded before the last kept)."""
        return self.analysed_span == self.valid_len

    @property
    def gate_rate(self) -> float:
        if self.gate is None or self.gate.size == 0:
            return 1.0
        return float(self.gate.mean())

    @property
    def pieces(self) -> list[str] | None:
        """Decoded text of each token of y (None when the run did not keep tokens)."""
        if self.text is None or self.piece_ends is None:
            return None
        starts = np.concatenate([[0], self.piece_ends[:-1]])
        return [self.text[s:e] for s, e in zip(starts.tolist(), self.piece_ends.tolist())]

    def to_record(self) -> dict[str, Any]:
        rec: dict[str, Any] = {
            "id": self.id,
            "corpus": self.corpus,
            "prompt": self.prompt,
            "n": self.n,
            "gate": None if self.gate is None else bits_to_str(self.gate),
            "text": self.text,
            "stop": self.stop,
        }
        if self.runs is not None and self.proposed is not None:  # a drafter's stream: L_s and m_s, no bits
            rec["runs"] = [int(v) for v in self.runs.tolist()]
            rec["proposed"] = [int(v) for v in self.proposed.tolist()]
            if self.prompt_tokens is not None:
                rec["prompt_tokens"] = int(self.prompt_tokens)
        else:
            rec["bits"] = bits_to_str(self.bits)
        for name in INT_FIELDS:
            val = getattr(self, name)
            if val is not None or not self.drafted:
                rec[name] = None if val is None else encode_array(val, "<i4")
        for name in FLOAT_FIELDS:
            val = getattr(self, name)
            if val is not None or not self.drafted:
                rec[name] = None if val is None else encode_array(val, "<f4")
        if self.repairs is not None:  # absent otherwise: records of runs without repairs keep their bytes
            rec["repairs"] = [int(t) for t in self.repairs]
        return rec


_PRINTABLE_ASCII = bytes(range(0x20, 0x7F))  # the characters JSON with ensure_ascii writes as themselves (but quote and backslash)
_FIELDS = frozenset(["id", "corpus", "prompt", "n", "bits", "gate", "text", "stop", "y", "draft_argmax", "piece_ends",
                     "draft_conf", "target_conf", "beta", "repairs", "runs", "proposed", "prompt_tokens",
                     CHECKSUM_FIELD])  # keys written as they are
_TEXT_FIELDS = frozenset(["id", "corpus", "prompt", "text", "stop"])  # free text (newlines, quotes): always escaped


def _printable(data: bytes) -> bool:
    """Every byte printable ASCII (0x20-0x7E): one pass of translate (0.4 ns a byte; numpy's min and max
    took twice that on a record's 12 KB)."""
    return not data.translate(None, _PRINTABLE_ASCII)


# A record's keys in the order it holds them (and the key left out) -> its sorted keys, each with its
# JSON name and whether it is free text: runs hold one or two key sets, so this is sorted once a run.
_KEY_PLANS: dict[tuple[tuple[str, ...], str | None], list[tuple[str, str, bool]]] = {}
_KEY_PLANS_MAX = 64


def _key_plan(obj: dict[Any, Any], skip: str | None) -> list[tuple[str, str, bool]] | None:
    """[(key, its JSON name and colon, free text)] in sorted order, `skip` left out; None when a key is
    not a str."""
    keys = tuple(obj)
    plan = _KEY_PLANS.get((keys, skip))
    if plan is not None:  # only tuples of str are kept, and only a str (or a subclass: the same JSON) equals one
        return plan
    if not all(type(k) is str for k in keys):
        return None
    plan = [(k, (f'"{k}"' if k in _FIELDS else encode_basestring_ascii(k)) + ":", k in _TEXT_FIELDS)
            for k in sorted(keys) if k != skip]
    if len(_KEY_PLANS) < _KEY_PLANS_MAX:
        _KEY_PLANS[(keys, skip)] = plan
    return plan


def _plain_json(obj: dict[str, Any], skip: str | None = None) -> bytes | None:
    """`canonical_json` of obj without its key `skip` when every key is a str and every value a str,
    int, bool, None or list of ints; else None.

    A record's free text (_TEXT_FIELDS) and any string with a quote, a backslash or a character beyond
    ASCII is written by json's own C escaping (json.encoder.encode_basestring_ascii, what json.dumps
    writes a str with); any other string (base64, bits) as
    "..." unchanged, which is its JSON when it holds no control character or DEL: checked once on the
    whole text, and when it does hold one (a text with newlines), the text is built again with each
    such string escaped."""
    plan = _key_plan(obj, skip)
    if plan is None:
        return None
    for strict in (False, True):
        parts = []
        for key, name, text in plan:
            value = obj[key]
            kind = type(value)
            if kind is str:
                if text or '"' in value or "\\" in value or not value.isascii() or (strict and not value.isprintable()):
                    parts.append(name + encode_basestring_ascii(value))
                else:
                    parts.append(f'{name}"{value}"')
            elif value is None:
                parts.append(name + "null")
            elif kind is bool:
                parts.append(name + ("true" if value else "false"))
            elif kind is int:
                parts.append(name + int.__repr__(value))
            elif kind is list and all(type(v) is int for v in value):  # `repairs`, `runs`, `proposed`
                parts.append(f'{name}[{",".join(int.__repr__(v) for v in value)}]')
            else:
                return None
        data = ("{" + ",".join(parts) + "}").encode("ascii")
        if strict or _printable(data):
            return data
    return None  # not reached: the strict pass escapes every string that is not printable ASCII


def canonical_json(obj: dict[str, Any]) -> bytes:
    """json.dumps(obj, sort_keys=True, ensure_ascii=True, separators=(",", ":")) as ASCII bytes.

    A record's long base64 and bit strings need no escaping, so its canonical form is built directly
    (`_plain_json`), escaping only the strings that need it (prompt, text): json.dumps escapes every
    character of every string, the larger part of verifying a run's checksums (10M positions: 1.2 s
    of load_run's 2.3 s). Anything else is json.dumps itself.
    """
    plain = _plain_json(obj)
    return plain if plain is not None else json.dumps(obj, sort_keys=True, ensure_ascii=True, separators=(",", ":")).encode("ascii")


def record_checksum(rec: dict[str, Any]) -> str:
    """First 16 hex digits of sha256(canonical JSON of `rec` without its checksum field).

    Canonical = sorted keys, ASCII escapes, no spaces (`canonical_json`): the same payload always
    gives the same bytes, however the line itself was spaced or escaped.
    """
    plain = _plain_json(rec, skip=CHECKSUM_FIELD)
    if plain is None:
        plain = canonical_json({k: v for k, v in rec.items() if k != CHECKSUM_FIELD})
    return hashlib.sha256(plain).hexdigest()[:16]


def record_line(stream: Stream) -> bytes:
    """The stored line of `stream`: its record plus checksum, compact JSON, newline-terminated."""
    rec = stream.to_record()
    rec[CHECKSUM_FIELD] = record_checksum(rec)
    try:
        return (json.dumps(rec, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")
    except UnicodeEncodeError:
        raise SpectermError(
            f"prompt {stream.id!r} ({stream.corpus!r}) holds a lone surrogate, which is not text; fix its strings."
        ) from None


def check_text(value: Any, name: str, where: str) -> None:
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise SpectermError(f"{where}: '{name}' holds a lone surrogate, which is not text; the file is corrupt.") from None


def name_form(name: str) -> str:
    """The form two set names are compared in: NFKC (full-width and compatibility letters folded),
    Unicode format characters (category Cf: zero-width spaces and joiners, bidi controls) removed,
    spaces stripped, lower case. "poo\u200bled" and "ｐｏｏｌｅｄ" both read "pooled"."""
    import unicodedata

    folded = unicodedata.normalize("NFKC", name)
    return "".join(c for c in folded if unicodedata.category(c) != "Cf").strip().lower()


def check_corpus_name(corpus: str, where: str, advice: str) -> None:
    """Refuse a corpus named like one of the report's own sets (RESERVED_CORPUS_NAMES: "pooled"),
    which would collide with the set of every corpus together, also with spaces around it or in other
    letter case ("pooled " showed as a second "pooled" row) or after Unicode normalization (name_form:
    "poo\u200bled" showed as a second "pooled" row), and a name with leading or trailing spaces;
    control characters are escaped wherever a name is shown (core/report/text.py); `where` starts
    the sentence."""
    if corpus != corpus.strip(" "):  # control characters are escaped where shown, not refused
        raise SpectermError(f"{where}: the corpus name {corpus!r} has spaces around it (it would not read as one "
                            f"name in a table); {advice}")
    if name_form(corpus) in RESERVED_CORPUS_NAMES:
        raise SpectermError(f"{where}: the corpus name {corpus!r} is reserved for the set of all corpora together; {advice}")


@dataclass(frozen=True)
class RecordBounds:
    """What a run's metadata says every record of it must satisfy (None: not known, not checked).

    max_n: the run's max_new_tokens (a continuation is never longer);
    vocab: the target's vocabulary size (every y and draft_argmax id lies in [0, vocab));
    max_draft: a drafter run's draft.max_tokens (every m_s is at most that).
    """

    max_n: int | None = None
    vocab: int | None = None
    max_draft: int | None = None


def stream_from_record(rec: Any, where: str, run: str = "", require_checksum: bool = False,
                       bounds: RecordBounds | None = None) -> Stream:
    """Validate one record (a parsed JSON object) and build its Stream; `where` names it in errors.

    The checksum is verified when present and required when `require_checksum`. Beside each field's
    own type and length: the corpus is not a reserved name; n <= bounds.max_n; y and draft_argmax
    ids in [0, bounds.vocab) (ids are never negative); and where both are stored, bits agree with
    them: a_t = 1 iff draft_argmax_t == y_{t+1} (stored 0-based: bits[t] == (draft_argmax[t] == y[t])).
    """
    if not isinstance(rec, dict):
        raise SpectermError(f"{where}: expected a JSON object per line; this is not a specterm stream file.")
    check_checksum(rec, where, require_checksum)
    drafted = "runs" in rec or "proposed" in rec
    for key in ("id", "corpus") if drafted else ("id", "corpus", "bits"):
        if not isinstance(rec.get(key), str):
            raise SpectermError(f"{where}: field '{key}' must be a string; re-create or re-import the run.")
    for key in STR_FIELDS:
        check_text(rec.get(key), key, where)
    runs = proposed = None
    if drafted:
        runs, proposed = drafter_runs_of(rec, where, bounds)
        bits = np.zeros(0, dtype=np.uint8)
        n = runs.size
    else:
        bits = _bits(rec, where, bounds)
        n = bits.size
    check_corpus_name(rec["corpus"], where, "re-import the run with another corpus name.")
    kw: dict[str, Any] = {}
    if rec.get("gate") is not None:
        kw["gate"] = _gate(rec["gate"], n, where)
    for name, dtype in [(f, "<i4") for f in INT_FIELDS] + [(f, "<f4") for f in FLOAT_FIELDS]:
        val = rec.get(name)
        if val is not None:
            kw[name] = _array_field(name, val, dtype, n, where, None if bounds is None else bounds.vocab)
    if "y" in kw and "draft_argmax" in kw and not np.array_equal(bits, kw["draft_argmax"] == kw["y"]):
        t = int(np.flatnonzero(bits != (kw["draft_argmax"] == kw["y"]))[0])
        raise SpectermError(f"{where}: 'bits' disagrees with the stored argmaxes at t = {t} (a_t must be 1 exactly "
                            "when draft_argmax_t == y_t+1); the file is corrupt.")
    text = rec.get("text")
    if text is not None:
        check_text_ends(text, kw.get("piece_ends"), n, where)
    prompt, stop, prompt_tokens = _prompt_fields(rec, where, drafted)
    repairs = repairs_field(rec.get("repairs"), n, "gate" in kw, where)
    return Stream(id=rec["id"], corpus=rec["corpus"], bits=bits, prompt=prompt, text=text, stop=stop, run=run,
                  repairs=repairs, runs=runs, proposed=proposed, prompt_tokens=prompt_tokens, **kw)


def _prompt_fields(rec: dict[str, Any], where: str, drafted: bool) -> tuple[str | None, str | None, int | None]:
    """A record's prompt, stop reason and (a drafter's) prompt_tokens, each checked for its type."""
    prompt = rec.get("prompt")
    if prompt is not None and not isinstance(prompt, str):
        raise SpectermError(f"{where}: 'prompt' must be a string; the file is corrupt.")
    stop = rec.get("stop")
    if stop is not None and not isinstance(stop, str):
        raise SpectermError(f"{where}: 'stop' must be a string or null; the file is corrupt.")
    prompt_tokens = rec.get("prompt_tokens")
    if prompt_tokens is not None and not (type(prompt_tokens) is int and prompt_tokens >= 1 and drafted):
        raise SpectermError(f"{where}: 'prompt_tokens' must be a positive integer beside a drafter's runs; the file is corrupt.")
    return prompt, stop, prompt_tokens


def drafter_runs_of(rec: dict[str, Any], where: str, bounds: RecordBounds | None) -> tuple[np.ndarray, np.ndarray]:
    """A drafter record's L_s ('runs') and m_s ('proposed'): lists of n ints each with
    0 <= L_s <= min(m_s, n - s) and m_s <= the run's draft.max_tokens; no per-position bits beside them."""
    for key in ("bits", "draft_argmax", "draft_conf", "beta"):
        if rec.get(key) is not None:
            raise SpectermError(f"{where}: a drafter's record holds 'runs' and 'proposed', not '{key}'; the file is corrupt.")
    lists = []
    for key in ("runs", "proposed"):
        val = rec.get(key)
        if not (isinstance(val, list) and all(type(v) is int for v in val)):
            raise SpectermError(f"{where}: '{key}' must be a list of integers (one per block start); the file is corrupt.")
        lists.append(val)
    if len(lists[0]) != len(lists[1]):
        raise SpectermError(f"{where}: 'runs' has {len(lists[0])} values, 'proposed' {len(lists[1])}; the file is corrupt.")
    runs = np.asarray(lists[0], dtype=np.int64)
    proposed = np.asarray(lists[1], dtype=np.int64)
    n = runs.size
    if "n" in rec and (type(rec["n"]) is not int or rec["n"] != n):
        raise SpectermError(f"{where}: 'n' is {str(rec['n'])[:20]} but 'runs' has {n} block starts; the file is corrupt.")
    if bounds is not None and bounds.max_n is not None and n > bounds.max_n:
        raise SpectermError(f"{where}: the record has {n} positions but its run generated at most {bounds.max_n} "
                            "(max_new_tokens); it belongs to another run, drop it with `specterm repair`.")
    bad = np.flatnonzero((runs < 0) | (runs > proposed) | (runs > n - np.arange(n)) | (proposed < 0)
                         | (proposed > (bounds.max_draft if bounds is not None and bounds.max_draft is not None else 2**31 - 1)))
    if bad.size:
        s = int(bad[0])
        raise SpectermError(f"{where}: at block start s = {s}, L_s = {int(runs[s])} and m_s = {int(proposed[s])} break "
                            f"0 <= L_s <= min(m_s, n - s) <= the drafter's longest proposal; the file is corrupt.")
    return runs.astype(np.int32), proposed.astype(np.int32)


def repairs_field(val: Any, n: int, has_gate: bool, where: str) -> list[int] | None:
    """The record's flipped positions: null, or a strictly increasing list of ints in [0, n) beside a gate."""
    if val is None:
        return None
    if not (isinstance(val, list) and all(type(t) is int for t in val) and has_gate and all(0 <= t < n for t in val)
            and all(b > a for a, b in zip(val, val[1:]))):
        raise SpectermError(f"{where}: 'repairs' must be null or increasing positions in [0, {n}) beside a 'gate'; "
                            "the file is corrupt.")
    return list(val)


def check_checksum(rec: dict[str, Any], where: str, require_checksum: bool) -> None:
    """The record's checksum, verified when present; required when `require_checksum`."""
    if CHECKSUM_FIELD in rec:
        if rec[CHECKSUM_FIELD] != record_checksum(rec):
            raise SpectermError(f"{where}: the record does not match its checksum; the file is corrupt, restore it or drop the line with `specterm repair`.")
    elif require_checksum:
        raise SpectermError(f"{where}: the record has no checksum although its run stores them; the file is corrupt.")


def _bits(rec: dict[str, Any], where: str, bounds: RecordBounds | None) -> np.ndarray:
    """The record's accept bits, checked against its 'n' and the run's max_new_tokens."""
    try:
        bits = bits_from_str(rec["bits"])
    except (ValueError, UnicodeEncodeError):
        raise SpectermError(f"{where}: 'bits' must be a string of 0 and 1 only; fix or re-import the file.") from None
    n = bits.size
    if "n" in rec and (type(rec["n"]) is not int or rec["n"] != n):
        raise SpectermError(f"{where}: 'n' is {str(rec['n'])[:20]} but 'bits' has {n} positions; the file is corrupt.")
    if bounds is not None and bounds.max_n is not None and n > bounds.max_n:
        raise SpectermError(f"{where}: the record has {n} positions but its run generated at most {bounds.max_n} "
                            "(max_new_tokens); it belongs to another run, drop it with `specterm repair`.")
    return bits


def _gate(val: Any, n: int, where: str) -> np.ndarray:
    """The record's gate bits (n of them)."""
    try:
        gate = bits_from_str(val)
    except (ValueError, UnicodeEncodeError, AttributeError):
        raise SpectermError(f"{where}: 'gate' must be a string of 0 and 1 only; the file is corrupt.") from None
    if gate.size != n:
        raise SpectermError(f"{where}: 'gate' has {gate.size} positions, 'bits' has {n}; the file is corrupt.")
    return gate


def _array_field(name: str, val: Any, dtype: str, n: int, where: str, vocab: int | None) -> np.ndarray:
    """One base64 array field of n values: probabilities in [0, 1] for the float fields, token ids in
    [0, vocab) for y and draft_argmax."""
    try:
        arr = decode_array(val, dtype)
    except (ValueError, binascii.Error, AttributeError, UnicodeEncodeError):
        raise SpectermError(f"{where}: field '{name}' is not valid base64 {dtype}; the file is corrupt.") from None
    if arr.size != n:
        raise SpectermError(f"{where}: '{name}' has {arr.size} values, 'bits' has {n}; the file is corrupt.")
    if name in FLOAT_FIELDS and arr.size and not (arr.min() >= 0.0 and arr.max() <= 1.0 + PROB_SLACK):  # a NaN is both
        raise SpectermError(f"{where}: '{name}' holds values that are not probabilities (NaN, infinite or outside [0, 1]); the file is corrupt.")
    if name in ("y", "draft_argmax") and arr.size:
        lo, hi = int(arr.min()), int(arr.max())
        if lo < 0 or (vocab is not None and hi >= vocab):
            limit = f"[0, {vocab})" if vocab is not None else "[0, ...)"
            bad = lo if lo < 0 else hi
            raise SpectermError(f"{where}: '{name}' holds token id {bad}, outside the vocabulary {limit}; "
                                "the record belongs to another run or is corrupt.")
    return arr


def check_text_ends(text: Any, ends: np.ndarray | None, n: int, where: str) -> None:
    """'text' is a string with 'piece_ends' beside it, whose last end is its length (ends never decrease)."""
    if not isinstance(text, str) or ends is None:
        raise SpectermError(f"{where}: 'text' needs 'piece_ends' beside it; the file is corrupt.")
    if n and (ends[-1] != len(text) or np.any(np.diff(ends) < 0) or ends[0] < 0):
        raise SpectermError(f"{where}: 'piece_ends' does not match 'text'; the file is corrupt.")


def decode_line(raw: bytes, where: str, run: str = "", require_checksum: bool = False,
                bounds: RecordBounds | None = None) -> Stream:
    """Parse and validate one stored line. The one error path: whatever goes wrong (bad UTF-8, bad
    JSON, a 5000-digit integer, nesting too deep for the parser, a bad field) is a SpectermError
    that starts with `where` ("FILE:LINE")."""
    try:
        return stream_from_record(json.loads(raw.decode("utf-8")), where, run, require_checksum, bounds)
    except SpectermError:
        raise
    except RecursionError:
        raise SpectermError(f"{where}: the line is nested too deeply to be a record; the file is corrupt.") from None
    except UnicodeDecodeError:
        raise SpectermError(f"{where}: the line is not UTF-8 text; the file is corrupt, restore it or drop the line with `specterm repair`.") from None
    except json.JSONDecodeError as exc:
        raise SpectermError(f"{where}: not valid JSON ({exc.msg}); the file is corrupt, restore it or drop the line with `specterm repair`.") from None
    except Exception as exc:  # one sentence for anything else, e.g. ValueError for an integer beyond Python's digit limit
        detail = str(exc).splitlines()[0][:80] if str(exc) else ""
        raise SpectermError(f"{where}: the line cannot be read ({type(exc).__name__}: {detail}); the file is corrupt.") from None


def check_unique(items: Sequence[Any], where: Callable[[int], str], advice: str) -> None:
    """The one uniqueness rule of the store: (corpus, id) names a prompt once.

    `items` have `.corpus` and `.id` (streams or prompts); `where(i)` names item i in the message.
    """
    seen: dict[tuple[str, str], int] = {}
    for i, item in enumerate(items):
        key = (item.corpus, item.id)
        if key in seen:
            raise SpectermError(f"{where(i)}: prompt {item.id!r} ({item.corpus}) appears twice (first at {where(seen[key])}); {advice}")
        seen[key] = i
