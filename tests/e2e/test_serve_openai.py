"""`keel serve` end to end with the official openai client: a real server process on SmolLM2."""
import json
import os
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request

import openai
import pytest

from keel_serve_process import KeelServe


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server(keel_bin, model_path):
    port = _free_port()
    proc = subprocess.Popen([keel_bin, "serve", "--model", model_path, "--port", str(port), "--served-model-name", "smollm2",
                             "--kv-tokens", "8192"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env={**os.environ, "KEEL_THREADS": "2"})
    base = f"http://127.0.0.1:{port}"
    deadline = time.time() + 120
    while time.time() < deadline:
        try:
            with urllib.request.urlopen(base + "/health", timeout=2) as r:
                if r.status == 200:
                    break
        except (urllib.error.URLError, ConnectionError):
            pass
        assert proc.poll() is None, proc.stdout.read()
        time.sleep(0.2)
    else:
        proc.kill()
        pytest.fail("keel serve did not become healthy in 120 s")
    yield base, proc
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)


@pytest.fixture(scope="module")
def client(server):
    return openai.OpenAI(base_url=server[0] + "/v1", api_key="unused", max_retries=0, timeout=300)


def test_models_lists_the_served_name(client):
    assert "smollm2" in [m.id for m in client.models.list().data]


def test_chat_completion_greedy_is_deterministic_with_usage(client):
    msgs = [{"role": "user", "content": "Name three colors."}]
    a = client.chat.completions.create(model="smollm2", messages=msgs, max_tokens=16, temperature=0)
    b = client.chat.completions.create(model="smollm2", messages=msgs, max_tokens=16, temperature=0)
    assert a.choices[0].message.content == b.choices[0].message.content
    assert a.choices[0].message.content
    assert a.choices[0].finish_reason in ("stop", "length")
    assert a.usage.completion_tokens <= 16 and a.usage.prompt_tokens > 5
    # The second identical request reuses the cached prompt.
    assert b.usage.prompt_tokens_details.cached_tokens >= b.usage.prompt_tokens - 1


def test_streaming_matches_non_streaming(client):
    msgs = [{"role": "user", "content": "Count from one to five."}]
    full = client.chat.completions.create(model="smollm2", messages=msgs, max_tokens=20, temperature=0)
    stream = client.chat.completions.create(model="smollm2", messages=msgs, max_tokens=20, temperature=0, stream=True,
                                            stream_options={"include_usage": True})
    text, usage, finish = "", None, None
    for chunk in stream:
        if chunk.usage:
            usage = chunk.usage
        for c in chunk.choices:
            text += c.delta.content or ""
            finish = c.finish_reason or finish
    assert text == full.choices[0].message.content
    assert usage is not None and usage.completion_tokens == full.usage.completion_tokens
    assert finish == full.choices[0].finish_reason


def test_completions_n_seed_and_logprobs(client):
    kw = dict(model="smollm2", prompt="The weather today is", max_tokens=8, temperature=1.0, seed=11)
    a = client.completions.create(n=2, logprobs=3, **kw)
    b = client.completions.create(n=2, logprobs=3, **kw)
    assert [c.text for c in a.choices] == [c.text for c in b.choices]
    assert len(a.choices) == 2
    lp = a.choices[0].logprobs
    assert lp is not None and len(lp.tokens) == len(lp.token_logprobs) > 0
    assert all(v <= 0.0 for v in lp.token_logprobs)
    assert all(len(t) <= 3 for t in lp.top_logprobs)


def test_stop_string_is_excluded(client):
    r = client.completions.create(model="smollm2", prompt="1, 2, 3, 4,", max_tokens=20, temperature=0, stop=[" 7"])
    assert " 7" not in r.choices[0].text
    assert r.choices[0].finish_reason in ("stop", "length")


@pytest.mark.parametrize("kwargs,param", [
    (dict(temperature=-1), "temperature"),
    (dict(top_p=2), "top_p"),
    (dict(n=0), "n"),
    (dict(max_tokens=-5), "max_tokens"),
])
def test_bad_parameters_raise_bad_request(client, kwargs, param):
    with pytest.raises(openai.BadRequestError) as e:
        client.chat.completions.create(model="smollm2", messages=[{"role": "user", "content": "hi"}], **kwargs)
    assert param in str(e.value)


def test_unknown_model_is_an_error(client):
    with pytest.raises((openai.NotFoundError, openai.BadRequestError)):
        client.chat.completions.create(model="no-such-model", messages=[{"role": "user", "content": "hi"}])


def test_prompt_longer_than_context_says_by_how_much(client):
    with pytest.raises(openai.BadRequestError) as e:
        client.completions.create(model="smollm2", prompt="word " * 9000, max_tokens=4)
    assert "token" in str(e.value)


def _post(base, path, body, content_type="application/json"):
    req = urllib.request.Request(base + path, data=body, headers={"Content-Type": content_type}, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def test_malformed_json_and_content_type_get_4xx_json_errors(server):
    base = server[0]
    status, body = _post(base, "/v1/chat/completions", b'{"model": "smollm2", "messages": [')
    assert status == 400 and "error" in json.loads(body)
    status, body = _post(base, "/v1/chat/completions", b"hello", content_type="text/plain")
    assert status in (400, 415) and "error" in json.loads(body)


def test_metrics_and_native_generate(server):
    base = server[0]
    status, body = _post(base, "/generate", json.dumps({"text": "Hello", "sampling_params": {"max_new_tokens": 4, "temperature": 0}}).encode())
    assert status == 200, body
    with urllib.request.urlopen(base + "/metrics", timeout=10) as r:
        text = r.read().decode()
    assert "keel_" in text


def test_flush_cache_is_an_admin_call(server, keel_bin, model_path):
    # Without a key (the module's server) a loopback client may flush.
    status, body = _post(server[0], "/flush_cache", b"{}")
    assert status == 200 and json.loads(body) == {"status": "flushed"}
    # With a key from the environment it is needed even from loopback; generation never needs it.
    keyed = KeelServe(keel_bin, model_path, "--kv-tokens", "1024", env={"KEEL_ADMIN_KEY": "e2e-admin"})
    try:
        assert keyed.post("/flush_cache") == 401
        assert keyed.post("/flush_cache", headers={"Authorization": "Bearer nope"}) == 401
        assert keyed.post("/flush_cache", headers={"Authorization": "Bearer e2e-admin"}) == 200
        assert keyed.post("/generate", json.dumps({"text": "Hi", "sampling_params": {"max_new_tokens": 2}}).encode()) == 200
    finally:
        assert keyed.stop() == 0
