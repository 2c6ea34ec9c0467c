"""`keel serve` under concurrent load, with the official openai client against a real server on SmolLM2:
batched greedy outputs equal solo ones, a disconnect frees KV slots, a shared 1,000-token system prompt
is computed once, and a full queue answers 429."""
import concurrent.futures as futures
import signal
import socket
import threading
import time

import openai
import pytest

from keel_serve_process import KeelServe

MODEL = "smollm2"


@pytest.fixture(scope="module")
def server(keel_bin, model_path):
    s = KeelServe(keel_bin, model_path, "--kv-tokens", "8192", "--max-running", "64")
    yield s
    assert s.stop() == 0


@pytest.fixture(scope="module")
def client(server):
    return openai.OpenAI(base_url=server.base + "/v1", api_key="unused", max_retries=0, timeout=600)


def _stream_text(client, prompt: str, max_tokens: int) -> tuple[str, str]:
    stream = client.completions.create(model=MODEL, prompt=prompt, max_tokens=max_tokens, temperature=0, stream=True)
    text, finish = "", None
    for chunk in stream:
        for c in chunk.choices:
            text += c.text or ""
            finish = c.finish_reason or finish
    return text, finish


def test_64_streaming_clients_finish_with_solo_greedy_outputs(server, client):
    prompts = [f"Fact {i}: the number {i * 7} is" for i in range(64)]
    solo = []
    for p in prompts:
        server.flush_cache()  # each solo run computes its prompt alone, as it would on an idle server
        solo.append(_stream_text(client, p, 8))
    server.flush_cache()

    running_seen = []
    done = threading.Event()

    def watch():
        while not done.is_set():
            running_seen.append(server.metrics()["keel_num_requests_running"])
            time.sleep(0.05)

    watcher = threading.Thread(target=watch)
    watcher.start()
    barrier = threading.Barrier(64)

    def together(p):
        barrier.wait()
        return _stream_text(client, p, 8)

    try:
        with futures.ThreadPoolExecutor(64) as pool:
            batched = list(pool.map(together, prompts))
    finally:
        done.set()
        watcher.join()
    assert all(finish in ("stop", "length") for _, finish in batched)
    assert [t for t, _ in batched] == [t for t, _ in solo]
    assert all(t for t, _ in solo)
    assert max(running_seen) > 1, "the 64 clients never ran in one batch"


def test_disconnect_mid_stream_frees_kv_slots(server, client):
    server.flush_cache()
    before = server.metrics()
    assert before["keel_kv_slots_used"] == 0
    # 8,000 tokens with EOS ignored: left alone, this request would run for minutes.
    stream = client.completions.create(model=MODEL, prompt="Write a very long story about a river.", max_tokens=8000,
                                       temperature=0, stream=True, extra_body={"ignore_eos": True})
    n = 0
    for chunk in stream:
        n += len(chunk.choices)
        if n >= 5:
            break
    during = server.metrics()
    assert during["keel_num_requests_running"] == 1
    assert during["keel_kv_slots_used"] > 5
    stream.close()  # drops the connection mid-stream

    deadline = time.time() + 60
    while server.metrics()["keel_num_requests_running"] != 0:
        assert time.time() < deadline, "the request still runs after its client went away"
        time.sleep(0.05)
    cancelled = 'keel_request_samples_finished_total{reason="cancelled"}'
    deadline = time.time() + 60
    while server.metrics().get(cancelled, 0) != before.get(cancelled, 0) + 1:
        assert time.time() < deadline, "the cancellation was never counted"
        time.sleep(0.05)
    # What the request held is either freed or an unlocked cache entry that a flush can evict: no slot
    # stays locked by the cancelled request.
    server.flush_cache()
    assert server.metrics()["keel_kv_slots_used"] == 0


def _system_prompt() -> str:
    words = ("river light garden music market winter paper school number family story window table friend "
             "road forest animal letter money doctor").split()
    return "You are a careful assistant. " + " ".join(f"{words[i % len(words)]}{i % 7}" for i in range(500))


def test_shared_1000_token_system_prompt_is_computed_once(server, client):
    server.flush_cache()
    system = _system_prompt()
    questions = ["What is a river?", "Name a color.", "Say hello.", "Count to three.", "What is music?"]
    first = client.chat.completions.create(model=MODEL, max_tokens=2, temperature=0, messages=[
        {"role": "system", "content": system}, {"role": "user", "content": questions[0]}])
    n_prompt = first.usage.prompt_tokens
    assert n_prompt >= 1000, f"system prompt too short: {n_prompt} tokens"
    assert first.usage.prompt_tokens_details.cached_tokens == 0
    before = server.metrics()
    for q in questions[1:]:
        r = client.chat.completions.create(model=MODEL, max_tokens=2, temperature=0, messages=[
            {"role": "system", "content": system}, {"role": "user", "content": q}])
        cached = r.usage.prompt_tokens_details.cached_tokens
        # Everything up to the user turn is reused; only the question and the template's tail are computed.
        assert cached >= 1000
        assert r.usage.prompt_tokens - cached < 30
    after = server.metrics()
    computed = (after["keel_prompt_tokens_total"] - before["keel_prompt_tokens_total"]) - (
        after["keel_cached_prompt_tokens_total"] - before["keel_cached_prompt_tokens_total"])
    assert computed < 30 * (len(questions) - 1)


def test_full_queue_answers_429_rate_limit_error(keel_bin, model_path):
    s = KeelServe(keel_bin, model_path, "--kv-tokens", "4096", "--max-running", "1", "--max-queue", "2")
    try:
        c = openai.OpenAI(base_url=s.base + "/v1", api_key="unused", max_retries=0, timeout=600)
        barrier = threading.Barrier(12)

        def one(i):
            barrier.wait()
            try:
                r = c.completions.create(model=MODEL, prompt=f"Story {i}:", max_tokens=48, temperature=0,
                                         extra_body={"ignore_eos": True})
                return r.usage.completion_tokens
            except openai.RateLimitError as e:
                assert e.status_code == 429
                return "429"

        with futures.ThreadPoolExecutor(12) as pool:
            outcomes = list(pool.map(one, range(12)))
        assert "429" in outcomes
        assert outcomes.count(48) >= 1
        assert all(o in ("429", 48) for o in outcomes)
        assert s.metrics()['keel_http_requests_total{path="/v1/completions",code="429"}'] == outcomes.count("429")
    finally:
        assert s.stop() == 0


def test_sigterm_under_load_finishes_accepted_requests_and_refuses_new(keel_bin, model_path):
    s = KeelServe(keel_bin, model_path, "--kv-tokens", "4096")
    c = openai.OpenAI(base_url=s.base + "/v1", api_key="unused", max_retries=0, timeout=600)
    n = 12
    accepted = threading.Semaphore(0)

    def one(i):
        stream = c.completions.create(model=MODEL, prompt=f"Item {i}: once upon a time", max_tokens=40,
                                      temperature=0, stream=True, extra_body={"ignore_eos": True})
        accepted.release()  # the 200 head arrived: the server took the request
        text, finish = "", None
        for chunk in stream:
            for ch in chunk.choices:
                text += ch.text or ""
                finish = ch.finish_reason or finish
        return text, finish

    with futures.ThreadPoolExecutor(n) as pool:
        results = [pool.submit(one, i) for i in range(n)]
        for _ in range(n):
            assert accepted.acquire(timeout=300)
        s.proc.send_signal(signal.SIGTERM)
        # New work is refused while the accepted requests drain: 503, or the listener is already closed.
        # A request can still reach the server before it has taken the signal (the main thread waits in
        # sigwait while the io threads serve); it is then served in full. Once one is refused, every
        # later one must be.
        refused = []
        while s.proc.poll() is None and sum(r != "served" for r in refused) < 3 and len(refused) < 100:
            try:
                c.completions.create(model=MODEL, prompt="late", max_tokens=2)
                refused.append("served")
            except openai.InternalServerError as e:
                refused.append(e.status_code)
            except openai.APIConnectionError:
                refused.append("connection refused")
        outputs = [r.result() for r in results]
    assert s.proc.wait(timeout=300) == 0
    assert all(finish == "length" and text for text, finish in outputs), outputs
    first = next((i for i, r in enumerate(refused) if r != "served"), len(refused))
    after = refused[first:]
    assert after and all(r in (503, "connection refused") for r in after), refused
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", s.port), timeout=5).close()
