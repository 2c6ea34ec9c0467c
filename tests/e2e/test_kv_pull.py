"""KV pulls between `keel serve` replicas (docs/router.md "KV pulls"): a request that names another
replica in X-Keel-Kv-Source imports that replica's cached prefix instead of prefilling it, and answers
exactly what a cold replica answers; bad hints and bad exports are refused without failing requests;
and `keel router` names the holder when it sends a burst's request to a replica without the prefix.
Three fresh replicas of this module's own (their caches start empty), plus short-lived ones for flags."""
import concurrent.futures
import json
import os
import struct
import subprocess
import time
import urllib.error
import urllib.request

import openai
import pytest

from test_router import (SYSTEMS, client_for, free_port, http, replica_metric, start_router, started_replicas, stop,
                         wait_healthy)

SYSTEM = SYSTEMS[1].replace("assistant", "pilot")


@pytest.fixture(scope="module")
def fresh(keel_bin, model_path):
    for urls, _ in started_replicas(keel_bin, model_path, 3):
        yield urls


def ask(url: str, user: str, system: str = SYSTEM, source: str | None = None, max_tokens: int = 12):
    c = openai.OpenAI(base_url=url + "/v1", api_key="unused", max_retries=0, timeout=300)
    return c.chat.completions.create(
        model="smollm2", messages=[{"role": "system", "content": system}, {"role": "user", "content": user}],
        max_tokens=max_tokens, temperature=0, extra_headers={"X-Keel-Kv-Source": source} if source else None)


def export_kv(url: str, tokens: list[int], headers: dict | None = None):
    """POST /v1/kv/export: (status, the KV header as a dict, the bytes after it); header None on errors."""
    req = urllib.request.Request(url + "/v1/kv/export", data=json.dumps({"tokens": tokens}).encode(), method="POST",
                                 headers={"Content-Type": "application/json", **(headers or {})})
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            assert r.headers["Content-Type"] == "application/x-keel-kv"
            body = r.read()
    except urllib.error.HTTPError as e:
        return e.code, None, e.read()
    assert body[:8] == b"KEELKV01"
    (h_len,) = struct.unpack("<I", body[8:12])
    return 200, json.loads(body[12:12 + h_len]), body[12 + h_len:]


def pulls(url: str, outcome: str) -> float:
    try:
        return replica_metric(url, f'keel_kv_pulls_total{{outcome="{outcome}"}}')
    except AssertionError:
        return 0.0


def test_a_pulled_prefix_is_reused_and_answers_as_a_cold_replica(fresh):
    a, b, c = fresh
    ask(a, "Hello?")  # a caches the system prompt
    pulled = ask(b, "Which way is north?", source=a)
    assert pulls(b, "imported") == 1
    n_pulled = replica_metric(b, "keel_kv_pulled_tokens_total")
    assert n_pulled >= 80, n_pulled
    # b served the pulled prefix from its cache: it computed only the rest of the prompt.
    assert pulled.usage.prompt_tokens_details.cached_tokens >= n_pulled
    assert replica_metric(a, 'keel_kv_exports_total{outcome="sent"}') == 1
    cold = ask(c, "Which way is north?")
    assert cold.usage.prompt_tokens_details.cached_tokens == 0
    assert pulled.choices[0].message.content == cold.choices[0].message.content
    assert pulled.usage.completion_tokens == cold.usage.completion_tokens


def test_bad_hints_leave_the_request_to_prefill(fresh):
    a, b, c = fresh
    other = SYSTEMS[2].replace("assistant", "farmer")
    # Nothing listens there: the pull fails, the request is answered all the same.
    before = pulls(c, "failed")
    r = ask(c, "Hi", system=other, source=f"http://127.0.0.1:{free_port()}")
    assert r.choices[0].finish_reason in ("stop", "length")
    assert pulls(c, "failed") == before + 1
    for bad in ("not a url", "https://127.0.0.1:1", "http://127.0.0.1:0"):
        before = pulls(c, "refused")
        assert ask(c, "Hi", system=other, source=bad).choices
        assert pulls(c, "refused") == before + 1, bad
    # A holder that holds nothing of it beyond the chat template's first tokens, which b holds too:
    # nothing is imported.
    before = {o: pulls(b, o) for o in ("miss", "cached", "imported")}
    ask(b, "Hi", system=SYSTEMS[0].replace("assistant", "baker"), source=c)
    assert pulls(b, "imported") == before["imported"]
    assert pulls(b, "miss") + pulls(b, "cached") == before["miss"] + before["cached"] + 1


def test_exports_answer_bad_bodies_with_400(fresh):
    a = fresh[0]
    for body in (b"{", b"[]", b'{"tokens": [1, -2]}', b'{"tokens": [99999999]}', b'{"tokens": [1], "x": 2}'):
        status, _, text = http("POST", a + "/v1/kv/export", body)
        assert status == 400, (body, status, text)
        assert '"error"' in text
    # A prompt of ids the replica computed: its export is those ids and SmolLM2-135M's KV shape (30
    # layers, 3 KV heads of 64: the model card's figures), 4-byte floats.
    ids = [(i * 37) % 40000 + 100 for i in range(40)]
    status, _, text = http("POST", a + "/generate", {"input_ids": ids, "sampling_params": {"max_new_tokens": 1}})
    assert status == 200, text
    status, header, rest = export_kv(a, ids)
    assert status == 200
    assert (header["n_layers"], header["n_kv_heads"], header["head_dim"]) == (30, 3, 64)
    assert header["backend"] == "cpu" and len(header["model"]) == 16
    n = header["n_tokens"]
    assert n == 40
    assert list(struct.unpack(f"<{n}i", rest[:4 * n])) == ids
    assert len(rest) == 4 * n + 4 * n * 30 * 2 * 3 * 64
    # A prompt it never saw: nothing.
    status, header, rest = export_kv(a, [7, 7, 7, 7])
    assert status == 200 and header["n_tokens"] == 0 and rest == b""


def test_admin_key_guards_both_ends_and_zero_turns_pulls_off(keel_bin, model_path, fresh):
    a = fresh[0]
    port = free_port()
    args = [keel_bin, "serve", "--model", model_path, "--port", str(port), "--served-model-name", "smollm2",
            "--kv-tokens", "1024", "-t", "1", "--http-threads", "1"]
    env = {**os.environ, "KEEL_THREADS": "1"}
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env={**env, "KEEL_ADMIN_KEY": "kv-key"})
    url = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(url, proc)
        assert export_kv(url, [1, 2])[0] == 401
        assert export_kv(url, [1, 2], {"Authorization": "Bearer kv-key"})[0] == 200
        # A hint without the key is not taken (the replica prefills), with it the pull runs.
        assert ask(url, "Hello there?", source=a).choices
        assert pulls(url, "refused") == 1
        c = openai.OpenAI(base_url=url + "/v1", api_key="unused", max_retries=0, timeout=300)
        c.chat.completions.create(model="smollm2", max_tokens=2, temperature=0,
                                  messages=[{"role": "system", "content": SYSTEM}, {"role": "user", "content": "Yo"}],
                                  extra_headers={"X-Keel-Kv-Source": a, "Authorization": "Bearer kv-key"})
        assert pulls(url, "refused") == 1
        assert pulls(url, "imported") + pulls(url, "cached") == 1
    finally:
        stop(proc)
    port = free_port()
    proc = subprocess.Popen([*args[:5], str(port), *args[6:], "--kv-max-tokens", "0"], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, env=env)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(url, proc)
        assert export_kv(url, [1, 2])[0] == 404
        assert ask(url, "Hello?", source=a).choices
        assert pulls(url, "off") == 1
    finally:
        stop(proc)
    for flag, value in (("--kv-max-tokens", "-1"), ("--kv-max-tokens", "70000"), ("--kv-threads", "0"),
                        ("--kv-queue", "-1"), ("--kv-timeout-ms", "0")):
        r = subprocess.run([*args[:5], "0", *args[6:], flag, value], capture_output=True, text=True, env=env,
                           timeout=120)
        assert r.returncode == 2, (flag, value, r.stdout, r.stderr)
        assert flag in r.stdout + r.stderr


def test_router_names_the_holder_when_a_burst_spills(keel_bin, model_path, fresh):
    a, b, c = fresh
    for url in (a, b):
        assert http("POST", url + "/flush_cache")[0] == 200
    system = SYSTEMS[0].replace("assistant", "navigator")
    base, proc = start_router(keel_bin, [a, b], model_path=model_path)
    try:
        client = client_for(base)
        first = client.chat.completions.with_raw_response.create(
            model="smollm2", max_tokens=2, temperature=0,
            messages=[{"role": "system", "content": system}, {"role": "user", "content": "Start"}])
        holder = first.headers["x-keel-replica"]
        other = b if holder == a else a
        questions = [f"Question {i}: what is {i} plus {i}?" for i in range(6)]

        def one(q):
            raw = client.chat.completions.with_raw_response.create(
                model="smollm2", max_tokens=16, temperature=0,
                messages=[{"role": "system", "content": system}, {"role": "user", "content": q}])
            return raw.headers["x-keel-replica"], raw.parse()

        with concurrent.futures.ThreadPoolExecutor(6) as pool:
            got = list(pool.map(one, questions))
        spilled = [(q, r) for q, (where, r) in zip(questions, got) if where == other]
        assert spilled, "the burst of 6 stayed on the holder: the balance bound did not spill"
        assert pulls(other, "imported") + pulls(other, "cached") >= 1
        assert replica_metric(holder, 'keel_kv_exports_total{outcome="sent"}') >= 1
        for q, r in spilled:  # what the spilled requests answered is what a cold replica answers
            cold = ask(c, q, system=system, max_tokens=16)
            assert r.choices[0].message.content == cold.choices[0].message.content, q
    finally:
        stop(proc)


class SlowSource:
    """A real HTTP server in front of a replica's /v1/kv/export that answers each export after delay_s:
    a pull that takes long enough for another request to arrive while it runs."""

    def __init__(self, target: str, delay_s: float):
        import http.server
        import threading
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers["Content-Length"]))
                time.sleep(outer.delay_s)
                req = urllib.request.Request(target + self.path, data=body, method="POST",
                                             headers={"Content-Type": "application/json"})
                with urllib.request.urlopen(req, timeout=60) as r:
                    data, ctype = r.read(), r.headers["Content-Type"]
                self.send_response(200)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.delay_s = delay_s
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def test_a_request_that_arrives_during_a_pull_of_its_prefix_waits_for_it(fresh):
    a, b, _ = fresh
    system = SYSTEMS[2].replace("assistant", "geologist")
    ask(a, "Hello?", system=system)  # a holds the prefix
    slow = SlowSource(a, 1.5)
    try:
        before = {o: pulls(b, o) for o in ("waited", "imported")}
        with concurrent.futures.ThreadPoolExecutor(2) as pool:
            hinted = pool.submit(ask, b, "First question?", system, slow.url)
            time.sleep(0.5)  # the pull is under way (its source answers after 1.5 s)
            plain = pool.submit(ask, b, "Second question?", system)
            first, second = hinted.result(), plain.result()
        assert pulls(b, "imported") == before["imported"] + 1
        assert pulls(b, "waited") == before["waited"] + 1
        # The request without a hint found the pulled prefix cached instead of prefilling it itself.
        assert second.usage.prompt_tokens_details.cached_tokens >= 80
        assert first.usage.prompt_tokens_details.cached_tokens >= 80
    finally:
        slow.close()
