"""The air-gapped GPU check (benchmarks/gpu/): its pieces on hand-made inputs, and (slow) the whole
check on the CPU in a box-like python with no network, from the carried folder alone."""

from __future__ import annotations

import base64
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import time
from importlib import metadata
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
GPU = ROOT / "benchmarks" / "gpu"


def _load(name: str):
    spec = importlib.util.spec_from_file_location(f"gpu_{name}", GPU / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


results = _load("results")
cut_gguf = _load("cut_gguf")


# ------------------------------------------------------------------------------ model size ---


def test_layers_that_fit_by_hand():
    # SmolLM2's GGUF: 31.869 MB outside the blocks, 2.216 MB a block, 30 blocks
    assert cut_gguf.layers_that_fit(40_000_000, 31_869_000, 2_216_448, 30) == 3  # 8.131 MB / 2.216 MB = 3.67
    assert cut_gguf.layers_that_fit(40_000_000, 31_869_000, 2_216_448 // 10, 30) == 29  # capped: a cut, never all 30
    assert cut_gguf.layers_that_fit(30_000_000, 31_869_000, 2_216_448, 30) == 0
    assert cut_gguf.layers_that_fit(100, 60, 20, 30) == 2  # exactly 100 bytes fits


def test_block_sizes_sums_outside_and_one_block():
    tensors = [("token_embd.weight", 1000), ("blk.0.a", 10), ("blk.0.b", 5), ("blk.1.a", 10), ("blk.1.b", 5), ("output_norm.weight", 7)]
    assert cut_gguf.block_sizes(tensors) == (1007, 15, 2)
    with pytest.raises(SystemExit, match="differ in size"):
        cut_gguf.block_sizes([("blk.0.a", 10), ("blk.1.a", 11)])
    with pytest.raises(SystemExit, match="numbered"):
        cut_gguf.block_sizes([("blk.0.a", 10), ("blk.2.a", 10)])


# ------------------------------------------------------------------------- bits compared ---


def _y(tokens: list[int]) -> str:
    return base64.b64encode(np.asarray(tokens, dtype="<i4").tobytes()).decode()


def _run(path: Path, records: list[dict]) -> Path:
    path.mkdir(parents=True)
    lines = [json.dumps({"corpus": "code", "n": len(r["bits"]), "gate": "1" * len(r["bits"]), **r}) for r in records]
    (path / "prompts.jsonl").write_text("\n".join(lines) + "\n{torn", encoding="utf-8")
    (path / "run.json").write_text(json.dumps({"device": "cpu", "dtype": "float32"}), encoding="utf-8")
    return path


def test_compare_runs_counts_flips_only_where_y_agrees(tmp_path):
    y = list(range(100, 110))
    a = _run(tmp_path / "a", [
        {"id": "same", "bits": "0110100111", "y": _y(y)},
        {"id": "flip", "bits": "0110100111", "y": _y(y)},
        {"id": "split", "bits": "1111111111", "y": _y(y)},
        {"id": "only-a", "bits": "1", "y": _y([1])},
    ])
    b = _run(tmp_path / "b", [
        {"id": "same", "bits": "0110100111", "y": _y(y)},
        {"id": "flip", "bits": "1110100110", "y": _y(y)},            # flips at t = 0 and t = 9, same y
        {"id": "split", "bits": "1011111000", "y": _y(y[:4] + [7] * 6)},  # y differs from t = 4: flips at 1 count, 7-9 do not
    ])
    c = results.compare_runs(a, b)
    by_id = {s["id"]: s for s in c["streams"]}
    assert (c["streams_compared"], c["identical"], c["y_diverged"]) == (3, 1, 1)
    assert c["only_in_a"] == ["only-a"] and c["only_in_b"] == []
    assert by_id["flip"]["flips"] == 2 and by_id["flip"]["first_bit_difference"] == 0 and not by_id["flip"]["identical"]
    assert by_id["split"]["aligned"] == 4 and by_id["split"]["flips"] == 1 and by_id["split"]["first_y_difference"] == 4
    assert c["aligned_positions"] == 10 + 10 + 4 and c["flips"] == 3
    assert c["gate_rate"] == [1.0, 1.0]
    assert results.compare_line(c) == "1 of 3 streams identical; 1 with y diverging; 3 bit flips in 24 aligned positions"


def test_first_difference_counts_a_shorter_y():
    assert results.first_difference(np.array([1, 2, 3]), np.array([1, 2, 3])) is None
    assert results.first_difference(np.array([1, 2, 3]), np.array([1, 2])) == 2
    assert results.first_difference(np.array([1, 9, 3]), np.array([1, 2, 3])) == 1


# ----------------------------------------------------------------------- result limits ---


def test_result_limits_count_files_and_bytes(tmp_path):
    for i in range(8):
        (tmp_path / f"f{i}").write_text("x")
    assert results.result_problems(tmp_path) == []
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "ninth").write_text("x")
    assert results.result_problems(tmp_path) == [f"9 files under {tmp_path}, more than 8"]
    (tmp_path / "sub" / "ninth").unlink()
    with open(tmp_path / "f0", "wb") as fh:  # sparse: 16 MiB + 1 byte without writing them
        fh.truncate(16 * 2**20 + 1)
    assert results.result_problems(tmp_path) == [f"f0 is {16 * 2**20 + 1} bytes, above {16 * 2**20}"]
    with open(tmp_path / "f0", "wb") as fh:
        fh.truncate(16 * 2**20)
    assert results.result_problems(tmp_path) == []


def test_carried_size_adds_the_tracked_files(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "a.txt").write_bytes(b"x" * 1000)
    (repo / "b.txt").write_bytes(b"y" * 24)
    (repo / "untracked.txt").write_bytes(b"z" * 5000)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run(["git", "-C", str(repo), "add", "a.txt", "b.txt"], check=True)
    assert results.tracked_bytes(repo) == 1024
    carry = tmp_path / "carry"
    (carry / "model").mkdir(parents=True)
    (carry / "model" / "m.gguf").write_bytes(b"m" * 2048)
    assert results.folder_bytes(carry) == 2048
    assert results.carry_line(59 * 2**20, 2**20) == "carried folder 59.00 MiB + repository 1.00 MiB = 60.00 MiB, within the 60 MiB limit"
    assert results.carry_line(59 * 2**20, 2**20 + 1).endswith("ABOVE the 60 MiB limit")
    proc = subprocess.run([sys.executable, str(GPU / "results.py"), "carry-size", str(carry), str(repo)], capture_output=True, text=True)
    assert proc.returncode == 0 and "= 0.00 MiB, within" in proc.stdout


# ---------------------------------------------------------------------------- summary ---


def _table_rows(text: str) -> list[list[str]]:
    """Cells of a markdown table (an escaped '\\|' stays inside its cell)."""
    return [[c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]] for line in text.strip().splitlines()]


def test_summary_is_one_markdown_row_per_step(tmp_path):
    work = tmp_path
    (work / "notes").mkdir()
    (work / "notes" / "env.txt").write_text("NVIDIA H200 (139.8 GiB, sm 9.0), TF32 off: True\n")
    (work / "notes" / "costs.txt").write_text("specterm costs")
    (work / "steps.tsv").write_text("env\tok\t3\t\n"
                                    "device_vs_cpu\tok\t1\t\n"
                                    "confirm\tstopped at the budget\t40\t\n"
                                    "report\tskipped\t0\tbudget: 5s left, needs ~10s\n"
                                    "results\tok\t0\t7 files | each <= 16 MiB\n")
    (work / "device_vs_cpu.json").write_text(json.dumps({"identical": 9, "streams_compared": 10, "y_diverged": 1,
                                                         "flips": 2, "aligned_positions": 600}))
    text = results.summary(work)
    rows = _table_rows(text)
    assert rows[0] == ["step", "status", "s", "result"] and set(rows[1]) == {"---"}
    assert [r[0] for r in rows[2:]] == ["env", "device_vs_cpu", "confirm", "report", "results"]
    assert all(len(r) == 4 for r in rows)
    assert rows[2][3] == "NVIDIA H200 (139.8 GiB, sm 9.0), TF32 off: True"
    assert rows[3][3] == "9 of 10 streams identical; 1 with y diverging; 2 bit flips in 600 aligned positions"
    assert rows[4][1:] == ["stopped at the budget", "40", ""]
    assert rows[5][3] == "budget: 5s left, needs ~10s"
    assert rows[6][3] == "7 files \\| each <= 16 MiB"


def test_cost_line_names_the_last_profiles_machine():
    assert results.cost_line({}) == "no cost profile stored"
    meta = {"profiles": [
        {"device": {"name": "AMD EPYC", "kind": "cpu"}, "engine": {"name": "torch", "version": "2.13"}, "dtype": "float32",
         "cost": {"c_decode_s": 0.05, "c_draft_s": 0.04}, "busy": True, "stop_reason": "cap", "batch_cost": None},
        {"device": {"name": "NVIDIA H200", "kind": "cuda"}, "engine": {"name": "torch", "version": "2.11"}, "dtype": "float32",
         "cost": {"c_decode_s": 0.0021, "c_draft_s": 0.0015}, "busy": False, "stop_reason": "settled", "batch_cost": {"1": {}}},
    ]}
    assert results.cost_line(meta) == ("2 profile(s); last: NVIDIA H200 (cuda), torch 2.11, float32: c_decode 2.1 ms, c_draft 1.5 ms, "
                                       "busy False, stopped: settled; by batch: yes")


# ------------------------------------------------------------------ check.sh, no model ---


def _fake_carry(tmp_path: Path) -> Path:
    carry = tmp_path / "carry"
    (carry / "wheels").mkdir(parents=True)
    (carry / "model").mkdir()
    (carry / "manifest.json").write_text(json.dumps({"target": "model/m.gguf", "draft": "layers:2", "layers": 3, "wheels": []}))
    return carry


def _check(args: list[str], env: dict | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", str(GPU / "check.sh"), *args], capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, "PYTHON": sys.executable, **(env or {})})


def test_check_refuses_without_a_carry_or_with_old_results(tmp_path):
    proc = _check([str(tmp_path / "out"), "--device", "cpu", "--carry", str(tmp_path / "nowhere")])
    assert proc.returncode == 2 and "run benchmarks/gpu/prepare.sh" in proc.stderr
    carry = _fake_carry(tmp_path)
    (tmp_path / "old").mkdir()
    (tmp_path / "old" / "summary.md").write_text("an earlier check")
    proc = _check([str(tmp_path / "old"), "--device", "cpu", "--carry", str(carry)])
    assert proc.returncode == 2 and "is not empty" in proc.stderr
    proc = _check([str(tmp_path / "out"), "--device", "tpu", "--carry", str(carry)])
    assert proc.returncode == 2 and "--device must be cuda or cpu" in proc.stderr


def test_check_with_no_budget_skips_every_step_and_keeps_a_summary(tmp_path):
    """Budget 0: nothing starts, every step is recorded as skipped, the log and the summary are kept."""
    dest = tmp_path / "out"
    proc = _check([str(dest), "--device", "cpu", "--budget-s", "0", "--carry", str(_fake_carry(tmp_path))])
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.name for p in dest.iterdir()) == ["check.log", "summary.md"]
    rows = _table_rows((dest / "summary.md").read_text())
    steps = {r[0]: r for r in rows[2:]}
    assert list(steps) == ["install", "env", "device-f32", "cpu-f32", "device_vs_cpu", "device-bf16", "bf16_vs_f32",
                           "costs", "confirm", "report", "results", "total"]
    for name in ("install", "env", "device-f32", "cpu-f32", "device-bf16", "costs", "confirm", "report"):
        assert steps[name][1] == "skipped", steps[name]
    assert steps["install"][3] == "budget: 0s left, needs ~10s"
    assert steps["device_vs_cpu"][3] == "needs device-f32/prompts.jsonl"
    assert proc.stdout.rstrip().splitlines()[-1].startswith("| total |")  # the summary table is printed last


def test_exact_float32_turns_tf32_off_on_cuda_only():
    torch = pytest.importorskip("torch")
    from specterm.engines.torch.models_torch import exact_float32

    saved = (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32)
    try:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = True, True
        exact_float32("cpu", torch.float32)
        exact_float32("cuda", torch.bfloat16)
        assert (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32) == (True, True)
        exact_float32("cuda:0", torch.float32)
        assert (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32) == (False, False)
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = saved


# ------------------------------------------------------------ the whole check, on the CPU ---

BOX_HAS = ("torch", "transformers", "numpy", "scipy", "rich", "typer", "accelerate", "safetensors", "tokenizers")


def _closure(names: tuple[str, ...]) -> set[str]:
    """The installed distributions `names` need (their requirements, recursively, markers evaluated)."""
    from packaging.requirements import Requirement

    seen: set[str] = set()
    todo = [metadata.distribution(n).metadata["Name"] for n in names]
    while todo:
        name = todo.pop()
        key = re.sub(r"[-_.]+", "-", name).lower()
        if key in seen:
            continue
        seen.add(key)
        for req in metadata.requires(name) or []:
            r = Requirement(req)
            if r.marker is not None and not r.marker.evaluate({"extra": ""}):
                continue
            try:
                todo.append(metadata.distribution(r.name).metadata["Name"])
            except metadata.PackageNotFoundError:
                pass
    return seen


def box_python(where: Path) -> Path:
    """A python like the GPU box's: a fresh venv that sees this environment's torch, transformers,
    numpy, scipy, rich, typer, accelerate, safetensors, tokenizers and what they need, and nothing
    else (no textual, textual-plotext, gguf or specterm): site-packages entries owned only by other
    distributions are left out of a folder of links the venv adds to its path."""
    keep = _closure(BOX_HAS)
    site = Path(sysconfig.get_paths()["purelib"])
    owners: dict[str, set[str]] = {}
    for dist in metadata.distributions(path=[str(site)]):
        key = re.sub(r"[-_.]+", "-", dist.metadata["Name"]).lower()
        for f in dist.files or []:
            top = f.parts[0]
            if top not in ("..", "bin"):
                owners.setdefault(top, set()).add(key)
    links = where / "box-site"
    links.mkdir(parents=True)
    for entry in site.iterdir():
        owned = owners.get(entry.name)
        if entry.suffix == ".pth" or (owned is not None and not owned & keep):
            continue
        (links / entry.name).symlink_to(entry)
    subprocess.run([sys.executable, "-m", "venv", str(where / "venv")], check=True)
    py = where / "venv" / "bin" / "python"
    venv_site = subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               check=True, capture_output=True, text=True).stdout.strip()
    (Path(venv_site) / "box.pth").write_text(f"{links}\n")
    return py


def _no_network_prefix() -> list[str]:
    """`unshare -rn` (a private network namespace with no interfaces up) where this kernel allows it."""
    if shutil.which("unshare") and subprocess.run(["unshare", "-rn", "true"], capture_output=True).returncode == 0:
        return ["unshare", "-rn"]
    return []


@pytest.mark.slow
def test_check_runs_on_the_cpu_offline_from_the_carry_alone(tmp_path):
    """prepare.sh's folder (made here when missing: needs the package index), then check.sh --device
    cpu in a python that lacks textual, textual-plotext, gguf and specterm, with no network: every
    step passes within the budget, the CPU oracle twice gives identical streams, the results keep
    the limits. Threads 1 and nice: this box is shared."""
    carry = GPU / "carry"
    if not (carry / "manifest.json").exists():
        carry = tmp_path / "carry"
        subprocess.run(["bash", str(GPU / "prepare.sh"), str(carry)], check=True, env={**os.environ, "PYTHON": sys.executable})
    py = box_python(tmp_path / "box")
    probe = "import importlib.util as u; print([m for m in ('textual', 'textual_plotext', 'gguf', 'specterm', 'torch', 'transformers') if u.find_spec(m)])"
    bare = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    seen = subprocess.run([str(py), "-P", "-c", probe], check=True, capture_output=True, text=True, cwd=tmp_path, env=bare).stdout
    assert seen.strip() == "['torch', 'transformers']", seen
    dest = tmp_path / "out"
    offline = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "PIP_NO_INDEX": "1", "http_proxy": "http://127.0.0.1:9",
               "https_proxy": "http://127.0.0.1:9", "HTTP_PROXY": "http://127.0.0.1:9", "HTTPS_PROXY": "http://127.0.0.1:9"}
    env = {**bare, "PYTHON": str(py), "OMP_NUM_THREADS": "1", **offline}
    start = time.monotonic()
    proc = subprocess.run([*_no_network_prefix(), "nice", "-n", "10", "bash", str(GPU / "check.sh"), str(dest), "--device", "cpu",
                           "--carry", str(carry)], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600)
    took = time.monotonic() - start
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = _table_rows((dest / "summary.md").read_text())
    steps = {r[0]: r for r in rows[2:]}
    failed = {k: v for k, v in steps.items() if k != "total" and v[1] != "ok"}
    assert not failed, (failed, (dest / "check.log").read_text()[-4000:])
    assert took < 480 + 30
    files = sorted(p.name for p in dest.iterdir())
    assert files == ["bf16_vs_f32.json", "check.log", "device_vs_cpu.json", "env.json", "report.json", "runs.tar.gz", "summary.md"]
    assert results.result_problems(dest) == []
    same = json.loads((dest / "device_vs_cpu.json").read_text())
    from specterm.engines.corpora import BUILTIN

    n = 2 * len(BUILTIN)  # check.sh runs --limit 2 over every built-in corpus
    assert (same["streams_compared"], same["identical"], same["flips"]) == (n, n, 0)  # the CPU twice: deterministic
    log = (dest / "check.log").read_text()
    installed = re.search(r"installing: (.*)", log)
    assert installed is not None and {"textual", "textual-plotext", "gguf", "specterm"} <= set(installed.group(1).split())
    where = re.search(r"imports ok; specterm from (\S+)", log)
    assert where is not None and "specterm-gpu-check" in where.group(1)  # the wheel in the check's temporary folder
    report = json.loads((dest / "report.json").read_text())
    assert report["sets"]["pooled"]["n_streams"] == n
    assert proc.stdout.rstrip().splitlines()[-1].startswith("| total |")


# ------------------------------------------------------------- --synthetic (issue 51) ---

synthetic = _load("synthetic")


def test_the_replay_plan_accepts_exactly_where_the_bits_say():
    y = np.array([5, 9, 0, 3, 9])
    bits = np.array([1, 0, 1, 0, 0])
    plan = synthetic.plan_tokens(y, bits, 10)
    assert plan == [5, 0, 0, 4, 0]  # y_t where 1, (y_t + 1) mod 10 where 0
    assert [int(p == t) for p, t in zip(plan, y)] == bits.tolist()


def test_the_replay_drafter_runs_the_real_forward_and_proposes_the_plan():
    import torch

    from specterm.engines.torch.models_torch import forward_logits, new_cache

    draft = synthetic.build("0.5B", 2, "cpu", shrink=True)
    replay = synthetic.make_replay(draft)
    prompt, plan = [3, 1, 4, 1], [7, 8, 9]
    replay.bind(len(prompt), plan)
    calls = []
    h = draft.register_forward_hook(lambda m, a, o: calls.append(1))
    cache = new_cache(replay)
    row = forward_logits(replay, torch.tensor([prompt]), cache)[0, -1]  # predicts y_0
    assert int(row.argmax()) == 7 and len(calls) == 1
    row = forward_logits(replay, torch.tensor([[7, 8]]), cache)[0, -1]  # a 2-token step: its last row predicts y_2
    assert int(row.argmax()) == 9 and len(calls) == 2
    h.remove()
    # nothing bound: the real draft's logits
    plain = synthetic.make_replay(draft)
    ref = forward_logits(draft, torch.tensor([prompt]), new_cache(draft))[0, -1]
    assert torch.equal(forward_logits(plain, torch.tensor([prompt]), new_cache(draft))[0, -1], ref)


@pytest.mark.slow
def test_synthetic_check_dry_run_on_the_cpu(tmp_path):
    """`check.sh DEST --synthetic --device cpu --shrink` within its budget: the oracle in float32 and bfloat16,
    costs with the block overhead, confirm through the replay drafter (its target calls are the walk's on the
    shipped Qwen bits: tokens per call = E of those prompts exactly, outputs = y), HF assisted beside greedy."""
    dest = tmp_path / "out"
    t0 = time.perf_counter()
    proc = subprocess.run(["bash", str(GPU / "check.sh"), str(dest), "--synthetic", "--device", "cpu", "--shrink",
                           "--sizes", "1.5B", "--budget-s", "300"], capture_output=True, text=True,
                          env={**os.environ, "PYTHON": sys.executable, "OMP_NUM_THREADS": "1"}, timeout=400)
    assert proc.returncode == 0, proc.stderr + (dest / "check.log").read_text()
    assert time.perf_counter() - t0 < 300
    (res,) = json.loads((dest / "synthetic.json").read_text())
    assert res["oracle_f32"]["positions"] > 0 and res["oracle_bf16"]["positions"] == res["oracle_f32"]["positions"]
    c = res["costs"]
    assert c["overhead_a_s"] is not None and c["overhead_b_s"] is not None and "o(g)" in c["verdict"]
    rows = res["confirm"]
    assert len({r["gamma"] for r in rows}) >= 3
    for r in rows:
        assert r["identical"] and r["tokens_per_call"] == pytest.approx(r["walk_E"])
    hf = res["hf"]
    assert hf["realized"] > 0 and hf["identical"] == hf["prompts"] and hf["predicted"] is not None
    assert (dest / "synthetic.md").read_text().startswith("| pair |")
