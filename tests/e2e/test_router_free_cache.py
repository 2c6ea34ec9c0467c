"""New prefixes sent one after another go to the replicas with the most free KV cache, and each counts
against its replica until a load poll sent after it finished reports it (keel serve's gauge may lag a
running request). Three fresh replicas of their own, so their caches start in a known state."""
import pytest

from test_router import SYSTEMS, chat, client_for, free_port, http, start_replica, start_router, stop, wait_healthy


@pytest.fixture(scope="module")
def three_fresh_replicas(keel_bin, model_path):
    ports = [free_port() for _ in range(3)]
    procs = [start_replica(keel_bin, model_path, p) for p in ports]
    urls = [f"http://127.0.0.1:{p}" for p in ports]
    for url, proc in zip(urls, procs):
        wait_healthy(url, proc)
    yield urls
    for p in procs:
        stop(p)


def test_sequential_new_prefixes_spread_over_the_freest_replicas(keel_bin, model_path, three_fresh_replicas):
    urls = three_fresh_replicas
    # One replica holds a prompt the others do not (sent to it directly): it has the least free cache,
    # the other two tie.
    status, _, text = http("POST", urls[0] + "/v1/chat/completions",
                           {"model": "smollm2", "max_tokens": 4, "temperature": 0,
                            "messages": [{"role": "system", "content": SYSTEMS[0].replace("assistant", "tutor")},
                                         {"role": "user", "content": "Hi"}]})
    assert status == 200, text
    base, proc = start_router(keel_bin, urls, model_path=model_path)
    try:
        c = client_for(base)
        picks = [chat(c, s.replace("assistant", "clerk"), "Hello?")[0] for s in SYSTEMS[:2]]
        # The two most free replicas take the two prefixes: the first one's prefill counts on its
        # replica until a poll reports it, so the second goes to the other.
        assert picks[0] != picks[1] and urls[0] not in picks, picks
    finally:
        stop(proc)
