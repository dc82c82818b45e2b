"""Throughput and latency of the hf engine on the tiny Qwen2-VL, in process and over HTTP.

For batch sizes 1, 4 and 16 (each request: one 200x120 screenshot + a short instruction, 32 new tokens,
temperature 1), time ``HFEngine.generate`` in process, then the same requests through ``serve-model``
(a subprocess on loopback) with the openai engine. Prints generated tokens/s, time to first token
(in process: the engine's; over HTTP: the client's latency minus the server's decode time, since the
server does not stream), latency per batch, and what the HTTP path adds. Also the cost of the aligned
logprob recompute (aligned on vs off).

    python benchmarks/inference.py [--repeats 3] [--batches 1 4 16] [--max-new-tokens 32]
"""

from __future__ import annotations

import argparse
import math
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time

import httpx
import numpy as np

from mintgym.inference import GenerationRequest, SamplingParams, make_engine
from mintgym.models.tiny import build_tiny_vlm


def requests_for(batch: int, max_new_tokens: int, round_: int) -> list[GenerationRequest]:
    rng = np.random.default_rng(round_)
    shot = rng.integers(0, 256, (120, 200, 3), dtype=np.uint8)
    return [GenerationRequest([{"role": "user", "content": [
        {"type": "image", "image": shot}, {"type": "text", "text": f"Task {i}: click the OK button."}]}],
        SamplingParams(max_new_tokens=max_new_tokens, temperature=1.0, seed=1000 * round_ + i))
        for i in range(batch)]


def measure(engine, batch: int, repeats: int, max_new_tokens: int, http: bool) -> dict[str, float]:
    engine.generate(requests_for(batch, max_new_tokens, 999))  # warm-up
    walls, rates, ttfts = [], [], []
    for r in range(repeats):
        reqs = requests_for(batch, max_new_tokens, r)
        t0 = time.perf_counter()
        gens = engine.generate(reqs)
        wall = time.perf_counter() - t0
        tokens = sum(len(g.response_token_ids or []) for g in gens)
        walls.append(wall)
        rates.append(tokens / wall)
        for g in gens:
            t = g.timings
            if http:  # no streaming: first token ~ client latency minus the server's decode after it
                ttfts.append(t["total"] - (t.get("server_total", 0) - t.get("server_ttft", 0)))
            else:
                ttfts.append(t["ttft"] + t.get("queue", 0))
    return {"tok_s": statistics.median(rates), "ttft_ms": 1000 * statistics.median(ttfts),
            "batch_ms": 1000 * statistics.median(walls)}


def min_latency_ms(engine, n: int = 20) -> float:
    """Fastest of n one-token requests (with the screenshot): the fixed cost of a call, least hit by load."""
    best = math.inf
    for i in range(n):
        reqs = requests_for(1, 1, i)
        t0 = time.perf_counter()
        engine.generate(reqs)
        best = min(best, time.perf_counter() - t0)
    return 1000 * best


def free_port() -> int:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    return port


def start_server(path: str, port: int) -> subprocess.Popen:
    code = ("import sys; from mintgym.inference.server import serve_model; "
            "serve_model(sys.argv[1], port=int(sys.argv[2]), log_level='warning')")
    proc = subprocess.Popen([sys.executable, "-c", code, path, str(port)])
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/health", timeout=2).status_code == 200:
                return proc
        except httpx.TransportError:
            time.sleep(0.2)
        if proc.poll() is not None:
            break
    proc.kill()
    raise RuntimeError("serve-model did not start")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--batches", type=int, nargs="+", default=[1, 4, 16])
    parser.add_argument("--max-new-tokens", type=int, default=32)
    parser.add_argument("--model", help="a checkpoint directory (default: build the tiny Qwen2-VL)")
    parser.add_argument("--threads", type=int, help="torch CPU threads, here and in the server")
    args = parser.parse_args()
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
        os.environ["OMP_NUM_THREADS"] = str(args.threads)  # inherited by the server subprocess

    with tempfile.TemporaryDirectory() as tmp:
        path = args.model or build_tiny_vlm(os.path.join(tmp, "tiny-vlm"))
        rows: dict[tuple[str, int], dict[str, float]] = {}
        fixed: dict[str, float] = {}
        for aligned in (True, False):
            engine = make_engine("hf", model_path=path, aligned_logprobs=aligned)
            if aligned:
                fixed["in process"] = min_latency_ms(engine)
            for b in args.batches:
                rows[("hf" if aligned else "hf (sampler logprobs)", b)] = measure(
                    engine, b, args.repeats, args.max_new_tokens, http=False)
        port = free_port()
        server = start_server(path, port)
        try:
            client = make_engine("openai", base_url=f"http://127.0.0.1:{port}", max_concurrency=64)
            fixed["http"] = min_latency_ms(client)
            for b in args.batches:
                before = httpx.get(f"http://127.0.0.1:{port}/health").json()
                rows[("http", b)] = measure(client, b, args.repeats, args.max_new_tokens, http=True)
                after = httpx.get(f"http://127.0.0.1:{port}/health").json()
                served = after["requests"] - before["requests"]
                rows[("http", b)]["mean_server_batch"] = served / max(1, after["batches"] - before["batches"])
            client.close()
        finally:
            server.terminate()
            server.wait(15)

    print(f"\nload average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs; torch threads "
          f"{__import__('torch').get_num_threads()}")
    print(f"hf engine on {'the tiny Qwen2-VL' if not args.model else args.model}, CPU, "
          f"{args.max_new_tokens} new tokens/request, median of {args.repeats}")
    print(f"{'batch':>5} | {'path':<22} | {'tok/s':>8} | {'TTFT ms':>8} | {'batch ms':>9} | {'HTTP adds ms':>12}"
          " | server batch")
    print("-" * 95)
    for b in args.batches:
        base = rows[("hf", b)]
        for name in ("hf", "hf (sampler logprobs)", "http"):
            r = rows[(name, b)]
            added = f"{r['batch_ms'] - base['batch_ms']:+.1f}" if name == "http" else ""
            mean_batch = f"{r['mean_server_batch']:.1f}" if name == "http" else ""
            print(f"{b:>5} | {name:<22} | {r['tok_s']:>8.0f} | {r['ttft_ms']:>8.1f} | {r['batch_ms']:>9.1f} | "
                  f"{added:>12} | {mean_batch:>12}")

    print(f"\none-token request, fastest of 20: in process {fixed['in process']:.1f} ms, over HTTP "
          f"{fixed['http']:.1f} ms, HTTP adds {fixed['http'] - fixed['in process']:.1f} ms")


if __name__ == "__main__":
    main()
