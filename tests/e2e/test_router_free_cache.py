"""New prefixes sent one after another go to the replicas with the most free KV cache, and each counts
against its replica until a load poll sent after it finished reports it (keel serve's gauge may lag a
running request). Three fresh replicas of their own, so their caches start in a known state."""
import pytest

from test_router import SYSTEMS, chat, client_for, http, start_router, started_replicas, stop


@pytest.fixture(scope="module")
def three_fresh_replicas(keel_bin, model_path):
    for urls, _ in started_replicas(keel_bin, model_path, 3):
        yield urls


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
