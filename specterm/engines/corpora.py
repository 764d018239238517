"""Prompt corpora: the six built-in corpora (prose, code, json, math, multilingual; grounded: text and code
the prompt holds), user prompt files, and Hugging Face datasets.

A prompt is the raw start of a document; the oracle feeds its text to the models with no chat
template and lets them continue it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from specterm.core.errors import SpectermError
from specterm.core.store import check_corpus_name, check_unique

BUILTIN = ("prose", "code", "json", "math", "multilingual", "grounded")
# grounded: editing, summarising, converting or completing text and code that the prompt holds (what prompt
# lookup and n-gram drafters find: the continuation copies spans of its own prompt, SPEC 2b)


@dataclass(frozen=True)
class Prompt:
    id: str
    corpus: str
    text: str


def _parse_jsonl(lines: list[str], source: str, default_corpus: str) -> list[Prompt]:
    """One JSON object per line with "prompt" and optional "id" and "corpus"; blank lines skipped.

    Missing corpus -> default_corpus; missing id -> "<corpus>-<line number>" (1-based, physical line).
    """
    prompts = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise SpectermError(
                f"{source} line {number} is not valid JSON ({exc.msg}); fix or remove that line."
            ) from None
        except RecursionError:
            raise SpectermError(f"{source} line {number} is nested too deeply; put one flat JSON object per line.") from None
        except ValueError as exc:  # an integer beyond Python's digit limit
            raise SpectermError(f"{source} line {number} cannot be read ({str(exc)[:80]}); fix or remove that line.") from None
        if not isinstance(record, dict) or not isinstance(record.get("prompt"), str):
            raise SpectermError(
                f"{source} line {number} needs a JSON object with a string \"prompt\" field."
            )
        for key in ("id", "corpus"):
            if record.get(key) is not None and not isinstance(record[key], str):
                raise SpectermError(f"{source} line {number}: \"{key}\" must be a string; fix that line.")
        corpus = str(record.get("corpus") or default_corpus)
        prompt = Prompt(str(record.get("id") or f"{corpus}-{number}"), corpus, record["prompt"])
        for key, value in (("id", prompt.id), ("corpus", prompt.corpus), ("prompt", prompt.text)):
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                raise SpectermError(f"{source} line {number}: \"{key}\" holds a lone surrogate (an unpaired "
                                    "\\ud800-\\udfff escape), which is not text; fix that line.") from None
        prompts.append(prompt)
    return prompts


def _parse_text(lines: list[str], stem: str, corpus: str) -> list[Prompt]:
    """One prompt per line, id "<stem>-<line number>"; blank lines skipped, no escape decoding."""
    return [
        Prompt(f"{stem}-{number}", corpus, line)
        for number, line in enumerate(lines, start=1)
        if line.strip()
    ]


def _check_unique(prompts: list[Prompt], source: str) -> list[Prompt]:
    """The prompts of `source`, refused (one sentence) when an id repeats within a corpus or a
    corpus takes a name the report uses for itself ("pooled")."""
    for p in prompts:
        check_corpus_name(p.corpus, source, "rename the corpus in the prompts file.")
        if not p.corpus.isprintable():
            raise SpectermError(f"{source}: the corpus name {p.corpus!r} holds a line break or another control "
                                "character, which would split the rows of every table; rename the corpus.")
    check_unique(prompts, lambda i: source, "give every prompt a unique id within its corpus.")
    return prompts


def load_builtin(names: list[str] | None = None, limit: int | None = None) -> list[Prompt]:
    """Prompts of the named built-in corpora (all of them when names is None), in BUILTIN file order.

    limit caps the number of prompts taken from EACH corpus (the first `limit` of its file).
    """
    names = list(BUILTIN) if names is None else list(names)
    unknown = [n for n in names if n not in BUILTIN]
    if unknown:
        raise SpectermError(
            f"unknown built-in corpus {', '.join(unknown)}; choose from {', '.join(BUILTIN)}."
        )
    package = resources.files("specterm.engines.corpora_data")
    prompts: list[Prompt] = []
    for name in names:
        text = package.joinpath(f"{name}.jsonl").read_text(encoding="utf-8")
        corpus = _check_unique(_parse_jsonl(text.splitlines(), f"{name}.jsonl", name), f"{name}.jsonl")
        prompts.extend(corpus if limit is None else corpus[:limit])
    return prompts


def load_prompts_file(path: str | Path, default_corpus: str | None = None) -> list[Prompt]:
    """Prompts from a .jsonl file (id/corpus/prompt per line) or any other file (one prompt per line).

    The corpus defaults to default_corpus, else to the file stem. A file is read as jsonl when its
    suffix is .jsonl; every other suffix is plain text, where a literal backslash-n stays as two
    characters (prompts that need newlines belong in jsonl).
    """
    path = Path(path)
    from specterm.core.store.atomic import read_regular

    try:
        text = read_regular(path, "pass a UTF-8 text file").decode("utf-8")
    except FileNotFoundError:
        raise SpectermError(f"prompts file {path} does not exist; check the path.") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise SpectermError(f"could not read prompts file {path} ({exc}); pass a UTF-8 text file.") from None
    corpus = default_corpus or path.stem
    lines = text.splitlines()
    if path.suffix.lower() == ".jsonl":
        prompts = _parse_jsonl(lines, str(path), corpus)
    else:
        prompts = _parse_text(lines, path.stem, corpus)
    if not prompts:
        raise SpectermError(f"prompts file {path} has no prompts; add at least one non-blank line.")
    return _check_unique(prompts, str(path))


def load_dataset_prompts(spec: str, limit: int | None = None) -> list[Prompt]:
    """Prompts from a Hugging Face dataset, spec "NAME[:split[:field]]" (split "train", field "text").

    Corpus is the dataset name's last path part; ids are "<corpus>-<row index>". Rows whose field
    is blank are skipped; limit caps the number of prompts returned.
    """
    parts = spec.split(":")
    if not parts[0] or len(parts) > 3:
        raise SpectermError(f"dataset spec {spec!r} is not NAME[:split[:field]]; e.g. wikitext:train:text.")
    name = parts[0]
    split = parts[1] if len(parts) > 1 and parts[1] else "train"
    field = parts[2] if len(parts) > 2 and parts[2] else "text"
    try:
        import datasets
    except ImportError:
        raise SpectermError(
            f"the datasets package is not installed, so dataset {name} cannot be loaded; "
            "pip install datasets, or use --prompts FILE offline."
        ) from None
    try:
        rows = datasets.load_dataset(name, split=split, streaming=True)
        corpus = name.rstrip("/").split("/")[-1]
        prompts: list[Prompt] = []
        for index, row in enumerate(rows):
            if limit is not None and len(prompts) >= limit:
                break
            if field not in row:
                raise SpectermError(
                    f"dataset {name} split {split} has no field {field!r}; choose one of {', '.join(row)}."
                )
            value = row[field]
            if isinstance(value, str) and value.strip():
                prompts.append(Prompt(f"{corpus}-{index}", corpus, value))
    except SpectermError:
        raise
    except Exception:
        raise SpectermError(
            f"could not reach the Hugging Face hub for dataset {name} split {split} "
            "(offline, or no such dataset or split); use --prompts FILE offline."
        ) from None
    if not prompts:
        raise SpectermError(f"dataset {name} split {split} gave no non-empty {field!r} values; pick another field.")
    return _check_unique(prompts, f"dataset {name}")


def shard(prompts: list[Prompt], index: int, count: int) -> list[Prompt]:
    """Share `index` of `count`: the prompts at positions i with i % count == index, order kept.

    Round-robin rather than contiguous blocks so every shard gets a mix of corpora; the shares of
    index 0..count-1 are disjoint and together hold every prompt exactly once.
    """
    if count < 1 or not 0 <= index < count:
        raise SpectermError(f"shard {index} of {count} is invalid; need 0 <= index < count and count >= 1.")
    return list(prompts[index::count])
