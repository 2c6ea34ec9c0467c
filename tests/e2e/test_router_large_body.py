"""keel router with request bodies over its io-thread bound (64 KiB): prepared on a body thread, routed by
their prompt's prefix like small ones, refused with 429 past --body-queue. Two replicas of their own, so
that these requests leave the shared replicas' caches as test_router.py's other tests expect them."""
import json

import pytest

from test_router import SYSTEMS, chat, client_for, http, start_router, started_replicas, stop


@pytest.fixture(scope="module")
def two_replicas(keel_bin, model_path):
    for urls, _ in started_replicas(keel_bin, model_path, 2):
        yield urls


def padded_chat(base: str, system: str, user: str, pad_bytes: int) -> tuple[int, dict, str]:
    """A chat whose body is padded with JSON whitespace past the router's io-thread bound (64 KiB): the
    same prompt in a large body."""
    body = json.dumps({"model": "smollm2", "messages": [{"role": "system", "content": system},
                                                        {"role": "user", "content": user}],
                       "max_tokens": 4, "temperature": 0})
    return http("POST", base + "/v1/chat/completions", (body[:-1] + " " * pad_bytes + "}").encode())


def metric_line(base: str, series: str) -> float:
    _, _, text = http("GET", base + "/metrics")
    return float(next(line.split()[-1] for line in text.splitlines() if line.startswith(series + " ")))


def test_large_bodies_are_prepared_off_the_io_thread_and_routed_by_prefix(keel_bin, model_path, two_replicas):
    base, proc = start_router(keel_bin, two_replicas, model_path=model_path)
    try:
        c = client_for(base)
        first = {i: chat(c, system, "Hello?")[0] for i, system in enumerate(SYSTEMS)}
        assert len(set(first.values())) == 2, first  # both replicas hold prefixes: the choice matters
        for i, system in enumerate(SYSTEMS):
            status, headers, text = padded_chat(base, system, f"Large question {i}?", 100_000)
            assert status == 200, text
            assert headers["X-Keel-Replica"] == first[i], f"prefix {i}: {headers['X-Keel-Replica']} vs {first[i]}"
            body = json.loads(text)
            assert body["choices"][0]["message"]["content"]
            assert body["usage"]["prompt_tokens_details"]["cached_tokens"] >= 80
        assert metric_line(base, 'keel_router_large_bodies_total{outcome="prepared"}') == 3
        assert metric_line(base, 'keel_router_large_bodies_total{outcome="refused"}') == 0
    finally:
        stop(proc)


def test_large_bodies_past_the_body_queue_get_429_and_small_ones_still_pass(keel_bin, model_path, two_replicas):
    # --body-queue 0: no large body may wait, so each is refused at once.
    base, proc = start_router(keel_bin, two_replicas, "--body-queue", "0", model_path=model_path)
    try:
        status, headers, text = padded_chat(base, SYSTEMS[0], "Large?", 100_000)
        assert status == 429, text
        assert headers["Retry-After"] == "1"
        assert json.loads(text)["error"]["type"] == "rate_limit_exceeded"
        replica, resp = chat(client_for(base), SYSTEMS[0], "Small?")
        assert replica in two_replicas and resp.choices[0].message.content
        assert metric_line(base, 'keel_router_large_bodies_total{outcome="refused"}') == 1
        assert metric_line(base, 'keel_router_large_bodies_total{outcome="prepared"}') == 0
    finally:
        stop(proc)
