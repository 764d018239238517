"""Scale-out: --shard i/N + `specterm merge`, and torchrun ranks writing shards that rank 0 merges."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from specterm.cli import app
from specterm.core.store import load_run

ARGS = ["--draft", "layers:2", "--corpus", "code,math", "--limit", "3", "-n", "16", "--no-cost", "--headless"]


def free_port() -> int:
    """A TCP port no one listens on now (the OS picks it): two test sessions at once (pytest-xdist, or
    two checkouts on one machine) do not meet at one fixed rendezvous port."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _streams(run):
    return {(s.corpus, s.id): (s.bits.tolist(), s.y.tolist()) for s in run.streams}


@pytest.fixture(scope="module")
def whole(tiny_model_dir, tmp_path_factory):
    out = tmp_path_factory.mktemp("whole") / "run"
    res = CliRunner().invoke(app, ["run", "--target", str(tiny_model_dir), *ARGS, "--out", str(out)])
    assert res.exit_code == 0, res.output
    return load_run(out)


def test_shards_merge_to_the_unsharded_run(tiny_model_dir, whole, tmp_path):
    runner = CliRunner()
    for i in range(2):
        res = runner.invoke(app, ["run", "--target", str(tiny_model_dir), *ARGS, "--out", str(tmp_path / "r"), "--shard", f"{i}/2"])
        assert res.exit_code == 0, res.output
    shards = [tmp_path / f"r.shard-{i}-of-2" for i in range(2)]
    sizes = [len(load_run(p).streams) for p in shards]
    assert sizes == [3, 3]
    res = runner.invoke(app, ["merge", *map(str, shards), "--out", str(tmp_path / "merged")])
    assert res.exit_code == 0, res.output
    assert _streams(load_run(tmp_path / "merged")) == _streams(whole)
    # merging a shard twice would duplicate prompts: refused, nothing written
    res = runner.invoke(app, ["merge", str(shards[0]), str(shards[0]), "--out", str(tmp_path / "dup")])
    assert res.exit_code != 0 and "more than one shard" in str(res.exception or res.output)
    assert not (tmp_path / "dup").exists()


def test_bad_shard_argument_is_one_sentence(tiny_model_dir, tmp_path):
    res = CliRunner().invoke(app, ["run", "--target", str(tiny_model_dir), *ARGS, "--out", str(tmp_path / "x"), "--shard", "2/2"])
    assert res.exit_code != 0
    assert "i must be in 0..N-1" in str(res.exception)


@pytest.mark.skipif(shutil.which("torchrun") is None and not os.path.exists(os.path.join(os.path.dirname(sys.executable), "torchrun")),
                    reason="torchrun not installed")
def test_torchrun_ranks_write_shards_and_rank0_merges(tiny_model_dir, whole, tmp_path):
    torchrun = shutil.which("torchrun") or os.path.join(os.path.dirname(sys.executable), "torchrun")
    specterm = os.path.join(os.path.dirname(sys.executable), "specterm")
    out = tmp_path / "dist"
    cmd = [torchrun, "--nproc_per_node", "2", "--master_port", str(free_port()), "--no-python", specterm, "run",
           "--target", str(tiny_model_dir), *ARGS, "--out", str(out)]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=env)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert _streams(load_run(out)) == _streams(whole)
