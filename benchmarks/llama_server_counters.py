"""Real llama-server counters for `specterm compare-counters` (issue 55): start llama-server (built from the
llama.cpp sources vendored in llama-cpp-python, as llama-speculative-simple is) with the run's GGUF pair and
the settings specterm emits for fixed g, send K prompts per corpus of the run greedily to /completion, and
save the responses (JSON lines, each with `timings`, `prompt` and `tokens`) for

    specterm compare-counters RUN responses.jsonl --gamma G

    python benchmarks/llama_server_counters.py streams/qwen2.5-coder-0.5b-1.5b-llamacpp \\
        --bin /tmp/i55/llama-build/bin --models /work/models --gamma 4 --per-corpus 2 --n-predict 64 \\
        --threads 1 --out /tmp/i55/server-responses.jsonl

Wrap it in `flock /tmp/specterm-model.lock` on a shared machine.
"""

from __future__ import annotations

import argparse
import json
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from specterm.core.settings import names as nm
from specterm.core.settings.engine_policies import llama_settings
from specterm.core.settings.speedup import FIXED, STOP, Policy
from specterm.core.store import load_run


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def post(url: str, body: dict, timeout: float = 900.0) -> dict:
    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return json.loads(r.read())


def wait_ready(url: str, proc: subprocess.Popen, limit: float = 600.0) -> None:
    t0 = time.time()
    while time.time() - t0 < limit:
        if proc.poll() is not None:
            raise SystemExit(f"llama-server exited with {proc.returncode}")
        try:
            with urllib.request.urlopen(url + "/health", timeout=5) as r:
                if r.status == 200:
                    return
        except OSError:
            pass
        time.sleep(2)
    raise SystemExit("llama-server did not become ready")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("run", type=Path)
    ap.add_argument("--bin", type=Path, required=True)
    ap.add_argument("--models", type=Path, required=True, help="the folder the run's model specs are relative to")
    ap.add_argument("--gamma", type=int, default=4)
    ap.add_argument("--p-min", type=float, default=0.0, help="a confidence stop (the emitted --spec-draft-p-min)")
    ap.add_argument("--per-corpus", type=int, default=2)
    ap.add_argument("--n-predict", type=int, default=64)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--metrics-out", type=Path, default=None)
    ap.add_argument("--log-out", type=Path, default=None)
    a = ap.parse_args()

    run = load_run(a.run)
    target = a.models / run.meta["target"]["spec"]
    draft = a.models / run.meta["draft"]["spec"]
    policy = Policy(FIXED, a.gamma) if a.p_min == 0 else Policy(STOP, a.gamma, a.p_min)
    flags = [str(x) for kv in llama_settings(policy).items() for x in kv]
    port = free_port()
    cmd = [str(a.bin / nm.LLAMA_SERVER), nm.LLAMA_MODEL, str(target), nm.LLAMA_DRAFT_MODEL, str(draft), *flags,
           "-t", str(a.threads), "-tb", str(a.threads), "--spec-draft-threads", str(a.threads),
           "--spec-draft-threads-batch", str(a.threads), "-c", "2048", "-np", "1", "--metrics",
           "--host", "127.0.0.1", "--port", str(port)]
    print(" ".join(cmd), flush=True)
    log = open(a.log_out or a.out.with_suffix(".server.log"), "w")
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_ready(url, proc)
        chosen: dict[str, int] = {}
        with open(a.out, "w") as out:
            for s in run.streams:
                if chosen.get(s.corpus, 0) >= a.per_corpus or s.prompt is None or s.n < a.n_predict:
                    continue
                chosen[s.corpus] = chosen.get(s.corpus, 0) + 1
                t0 = time.time()
                res = post(url + "/completion", {"prompt": s.prompt, "n_predict": a.n_predict, "temperature": 0.0,
                                                 "top_k": 1, "cache_prompt": False, "return_tokens": True})
                out.write(json.dumps(res) + "\n")
                out.flush()
                t = res.get("timings", {})
                print(f"{s.id}: {time.time() - t0:.1f} s, predicted {t.get('predicted_n')}, drafted {t.get('draft_n')}, "
                      f"accepted {t.get('draft_n_accepted')}", flush=True)
        if a.metrics_out is not None:
            with urllib.request.urlopen(url + "/metrics", timeout=30) as r:
                a.metrics_out.write_bytes(r.read())
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


if __name__ == "__main__":
    main()
