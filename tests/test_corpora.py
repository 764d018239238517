"""Built-in corpora, prompt files, dataset errors and sharding."""

import builtins
import json
import sys

import pytest

from specterm.engines.corpora import (
    BUILTIN,
    Prompt,
    load_builtin,
    load_dataset_prompts,
    load_prompts_file,
    shard,
)
from specterm.core.errors import SpectermError


@pytest.mark.parametrize("name", BUILTIN)
def test_builtin_corpus_shape(name):
    prompts = load_builtin([name])
    assert len(prompts) >= 16
    assert all(p.corpus == name for p in prompts)
    assert len({p.id for p in prompts}) == len(prompts)
    assert all(p.id.startswith(f"{name}-") for p in prompts)
    assert all(len(p.text) >= 150 for p in prompts)


def test_builtin_all_and_limit():
    everything = load_builtin()
    assert list(BUILTIN) == list(dict.fromkeys(p.corpus for p in everything))
    limited = load_builtin(limit=3)
    assert len(limited) == 3 * len(BUILTIN)
    assert limited[:3] == load_builtin(["prose"])[:3]


def test_multilingual_has_four_languages_with_three_each():
    codes = [p.id.split("-")[1] for p in load_builtin(["multilingual"])]
    counts = {c: codes.count(c) for c in set(codes)}
    assert sum(n >= 3 for n in counts.values()) >= 4


def test_unknown_builtin_names_valid_ones():
    with pytest.raises(SpectermError) as err:
        load_builtin(["poetry"])
    message = str(err.value)
    assert "poetry" in message and all(n in message for n in BUILTIN)


def test_jsonl_file_defaults(tmp_path):
    f = tmp_path / "mine.jsonl"
    f.write_text(
        json.dumps({"id": "a", "corpus": "c1", "prompt": "first"}) + "\n"
        + "\n"
        + json.dumps({"prompt": "line\nthree"}) + "\n"
        + json.dumps({"corpus": "c2", "prompt": "fourth"}) + "\n",
        encoding="utf-8",
    )
    assert load_prompts_file(f) == [
        Prompt("a", "c1", "first"),
        Prompt("mine-3", "mine", "line\nthree"),
        Prompt("c2-4", "c2", "fourth"),
    ]
    assert load_prompts_file(f, default_corpus="x")[1] == Prompt("x-3", "x", "line\nthree")


def test_text_file_one_prompt_per_line(tmp_path):
    f = tmp_path / "notes.txt"
    f.write_text("alpha beta\n\n   \ngamma\\ndelta\n", encoding="utf-8")
    assert load_prompts_file(f) == [
        Prompt("notes-1", "notes", "alpha beta"),
        Prompt("notes-4", "notes", "gamma\\ndelta"),
    ]


def test_bad_jsonl_line_names_line_number(tmp_path):
    f = tmp_path / "bad.jsonl"
    f.write_text('{"prompt": "ok"}\n{"prompt": "ok2"}\n{"prompt": broken\n', encoding="utf-8")
    with pytest.raises(SpectermError, match="line 3"):
        load_prompts_file(f)


def test_duplicate_id_in_corpus_rejected(tmp_path):
    f = tmp_path / "dup.jsonl"
    f.write_text(
        '{"id": "x", "prompt": "one"}\n{"id": "y", "prompt": "two"}\n{"id": "x", "prompt": "three"}\n',
        encoding="utf-8",
    )
    with pytest.raises(SpectermError, match="'x'"):
        load_prompts_file(f)


def test_same_id_in_different_corpora_allowed(tmp_path):
    f = tmp_path / "two.jsonl"
    f.write_text(
        '{"id": "x", "corpus": "a", "prompt": "one"}\n{"id": "x", "corpus": "b", "prompt": "two"}\n',
        encoding="utf-8",
    )
    assert len(load_prompts_file(f)) == 2


def test_missing_file(tmp_path):
    with pytest.raises(SpectermError, match="does not exist"):
        load_prompts_file(tmp_path / "nope.txt")


@pytest.mark.parametrize("n, count", [(0, 3), (1, 1), (7, 3), (10, 4), (90, 7), (3, 5)])
def test_shard_partitions_exactly(n, count):
    prompts = [Prompt(f"p-{i}", "c", str(i)) for i in range(n)]
    shares = [shard(prompts, k, count) for k in range(count)]
    ids = [p.id for share in shares for p in share]
    assert sorted(ids) == sorted(p.id for p in prompts)  # union is all, and no prompt twice
    assert len(ids) == len(set(ids))
    for k, share in enumerate(shares):
        assert [int(p.text) for p in share] == list(range(k, n, count))


def test_shard_rejects_bad_index():
    with pytest.raises(SpectermError):
        shard([], 3, 3)


def test_dataset_not_installed(monkeypatch):
    real_import = builtins.__import__

    def fake_import(name, *args, **kwargs):
        if name == "datasets":
            raise ImportError("No module named 'datasets'")
        return real_import(name, *args, **kwargs)

    monkeypatch.delitem(sys.modules, "datasets", raising=False)
    monkeypatch.setattr(builtins, "__import__", fake_import)
    with pytest.raises(SpectermError, match="--prompts FILE"):
        load_dataset_prompts("wikitext:train:text", limit=4)


def test_dataset_offline(monkeypatch):
    class FakeDatasets:
        @staticmethod
        def load_dataset(*args, **kwargs):
            raise ConnectionError("offline")

    monkeypatch.setitem(sys.modules, "datasets", FakeDatasets)
    with pytest.raises(SpectermError) as err:
        load_dataset_prompts("someone/corpus", limit=4)
    message = str(err.value)
    assert "could not reach the Hugging Face hub" in message and "someone/corpus" in message
    assert "--prompts FILE" in message


def test_dataset_spec_defaults_and_rows(monkeypatch):
    seen = {}

    class FakeDatasets:
        @staticmethod
        def load_dataset(name, split, streaming):
            seen.update(name=name, split=split)
            return iter([{"body": "one"}, {"body": "  "}, {"body": "three"}, {"body": "four"}])

    monkeypatch.setitem(sys.modules, "datasets", FakeDatasets)
    got = load_dataset_prompts("org/ds::body", limit=2)
    assert seen == {"name": "org/ds", "split": "train"}
    assert got == [Prompt("ds-0", "ds", "one"), Prompt("ds-2", "ds", "three")]
