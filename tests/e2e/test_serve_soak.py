"""Memory soak: 10,000 short requests through the official openai client against a real `keel serve` on
SmolLM2. Resident memory stays flat (printed at the start and the end) and the KV pool never holds
more slots than configured (sampled from /metrics throughout)."""
import concurrent.futures as futures
import threading
import time

import openai
import pytest

from keel_serve_process import KeelServe

MODEL = "smollm2"
KV_TOKENS = 1024
N_WARMUP = 1000
N_SOAK = 10_000
WORDS = "river light garden music market winter paper school number family story window table".split()


def _prompt(i: int) -> str:
    # Unique prompts, so the radix cache keeps filling and evicting across the soak.
    return f"{i}: {WORDS[i % len(WORDS)]} {WORDS[(i // 13) % len(WORDS)]} {WORDS[(i // 169) % len(WORDS)]}"


def _run(client, start: int, n: int) -> list[int]:
    def one(i):
        r = client.completions.create(model=MODEL, prompt=_prompt(i), max_tokens=1 + i % 2, temperature=0)
        return r.usage.completion_tokens

    with futures.ThreadPoolExecutor(8) as pool:
        return list(pool.map(one, range(start, start + n)))


def test_rss_flat_and_kv_within_pool_over_10000_requests(keel_bin, model_path):
    s = KeelServe(keel_bin, model_path, "--kv-tokens", str(KV_TOKENS))
    try:
        client = openai.OpenAI(base_url=s.base + "/v1", api_key="unused", max_retries=0, timeout=600)
        samples = []
        done = threading.Event()

        def watch():
            while not done.is_set():
                m = s.metrics()
                samples.append((m["keel_kv_slots_used"], m["keel_kv_slots_total"]))
                time.sleep(0.1)

        watcher = threading.Thread(target=watch)
        watcher.start()
        try:
            # Warm-up fills the KV pool and the allocators' arenas, so the start figure is steady state.
            assert all(1 <= t <= 2 for t in _run(client, 0, N_WARMUP))
            rss_start = s.rss_kib()
            print(f"\nRSS at start: {rss_start / 1024:.1f} MiB (after {N_WARMUP} warm-up requests)")
            tokens = _run(client, N_WARMUP, N_SOAK)
            rss_end = s.rss_kib()
            print(f"RSS at end:   {rss_end / 1024:.1f} MiB (after {N_SOAK} more requests)")
        finally:
            done.set()
            watcher.join()
        assert tokens == [1 + i % 2 for i in range(N_WARMUP, N_WARMUP + N_SOAK)]
        m = s.metrics()
        assert m['keel_http_requests_total{path="/v1/completions",code="200"}'] == N_WARMUP + N_SOAK
        assert samples and all(total == KV_TOKENS for _, total in samples)
        assert all(0 <= used <= KV_TOKENS for used, _ in samples)
        assert max(used for used, _ in samples) > KV_TOKENS // 2, "the soak never filled the pool"
        # Flat: a leak of even 2 KiB per request would add 20 MiB over the soak.
        assert rss_end - rss_start < 16 * 1024, f"RSS grew {rss_start} -> {rss_end} KiB"
    finally:
        assert s.stop() == 0
