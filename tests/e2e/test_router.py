"""`keel router` end to end: three real `keel serve` replicas (SmolLM2, CPU, one thread each) behind a
real router process, driven by the official openai client. Covers prefix routing (checked against the
replicas' own cached-token counts), tenants and rate limits, the admin API, bad input, router restart
(cache map rebuilt from the replicas' event streams; admin changes kept in the state file) and, last,
SIGKILL of a replica under load."""
import concurrent.futures
import hashlib
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

ADMIN_KEY = "admin-secret"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_healthy(base: str, proc: subprocess.Popen, timeout_s: float = 120) -> None:
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        try:
            with urllib.request.urlopen(base + "/health", timeout=2) as r:
                if r.status == 200:
                    return
        except (urllib.error.URLError, ConnectionError):
            pass
        assert proc.poll() is None, proc.stdout.read() if proc.stdout else "the process exited"
        time.sleep(0.1)
    proc.kill()
    pytest.fail(f"{base} did not become healthy in {timeout_s} s")


def start_replica(keel_bin: str, model_path: str, port: int) -> subprocess.Popen:
    return subprocess.Popen([keel_bin, "serve", "--model", model_path, "--port", str(port), "--served-model-name",
                             "smollm2", "--kv-tokens", "2048", "-t", "1", "--http-threads", "1"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env={**os.environ, "KEEL_THREADS": "1"})


def start_router(keel_bin: str, workers: list[str], *extra: str, model_path: str | None = None,
                 port: int | None = None) -> tuple[str, subprocess.Popen]:
    port = port or free_port()
    args = [keel_bin, "router", "--port", str(port), "--admin-key", ADMIN_KEY, "--health-interval-ms", "200",
            "--workers", *workers, *extra]
    if model_path:
        args += ["--model", model_path]
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    base = f"http://127.0.0.1:{port}"
    wait_healthy(base, proc, 30)
    return base, proc


@pytest.fixture(scope="module")
def one_replica(keel_bin, model_path):
    """One real `keel serve` replica (SmolLM2, CPU) for the tests of a module that imports this fixture: its URL."""
    port = free_port()
    proc = start_replica(keel_bin, model_path, port)
    url = f"http://127.0.0.1:{port}"
    wait_healthy(url, proc)
    yield url
    stop(proc)


def stop(proc: subprocess.Popen) -> str:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    return proc.stdout.read() if proc.stdout else ""


def http(method: str, url: str, body=None, headers=None) -> tuple[int, dict, str]:
    data = None if body is None else (body if isinstance(body, bytes) else json.dumps(body).encode())
    req = urllib.request.Request(url, data=data, method=method,
                                 headers={"Content-Type": "application/json", **(headers or {})})
    try:
        with urllib.request.urlopen(req, timeout=120) as r:
            return r.status, dict(r.headers), r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read().decode()


def declared_body_status(base: str, n_bytes: int) -> int:
    """Status answered to a request that declares an n_bytes body (headers only: the answer comes first)."""
    host, port = base.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=30) as s:
        s.sendall(f"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                  f"Content-Length: {n_bytes}\r\n\r\n".encode())
        return int(s.recv(4096).split(b" ")[1])


def admin(method: str, base: str, path: str, body=None) -> tuple[int, dict]:
    status, _, text = http(method, base + path, body, {"Authorization": f"Bearer {ADMIN_KEY}"})
    return status, json.loads(text)


def replica_metric(url: str, name: str) -> float:
    _, _, text = http("GET", url + "/metrics")
    for line in text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    raise AssertionError(f"{name} not in {url}/metrics")


def client_for(base: str, key: str = "unused") -> openai.OpenAI:
    return openai.OpenAI(base_url=base + "/v1", api_key=key, max_retries=0, timeout=300)


def chat(client: openai.OpenAI, system: str, user: str, max_tokens: int = 4, **kw):
    """One chat call; returns (replica URL the router chose, parsed completion)."""
    raw = client.chat.completions.with_raw_response.create(
        model="smollm2", messages=[{"role": "system", "content": system}, {"role": "user", "content": user}],
        max_tokens=max_tokens, temperature=0, **kw)
    return raw.headers["x-keel-replica"], raw.parse()


# Three system prompts long enough (~100 tokens) that a shared prefix dominates each prompt.
SYSTEMS = [f"You are assistant number {i}. " + " ".join(f"Rule {i}.{k}: answer about topic {topic} briefly."
                                                          for k in range(8))
           for i, topic in enumerate(["astronomy", "cooking", "sailing"])]


def started_replicas(keel_bin: str, model_path: str, n: int):
    """n fresh replicas for a module fixture: yields (urls, procs), stops them after."""
    ports = [free_port() for _ in range(n)]
    procs = [start_replica(keel_bin, model_path, p) for p in ports]
    urls = [f"http://127.0.0.1:{p}" for p in ports]
    try:
        for url, proc in zip(urls, procs):
            wait_healthy(url, proc)
        yield urls, procs
    finally:
        for p in procs:
            stop(p)


@pytest.fixture(scope="module")
def replicas(keel_bin, model_path):
    yield from started_replicas(keel_bin, model_path, 3)


@pytest.fixture(scope="module")
def router(keel_bin, model_path, replicas):
    base, proc = start_router(keel_bin, replicas[0], model_path=model_path)
    yield base, proc
    stop(proc)


def check_prefix_routing(base: str, systems: list[str]) -> None:
    c = client_for(base)
    first = {}
    for i, system in enumerate(systems):
        first[i], _ = chat(c, system, "Hello?")
    for round_ in range(2):
        for i, system in enumerate(systems):
            replica, resp = chat(c, system, f"Question {round_} for prefix {i}?")
            assert replica == first[i], f"prefix {i} moved from {first[i]} to {replica}"
            # The replica's own accounting: the shared system prompt was served from its cache.
            assert resp.usage.prompt_tokens_details.cached_tokens >= 80
    assert len(set(first.values())) >= 2, f"three prefixes all went to one replica: {first}"


def test_routing_follows_prefixes_and_replicas_confirm_cache_hits(router, replicas):
    base, _ = router
    check_prefix_routing(base, SYSTEMS)
    _, _, metrics = http("GET", base + "/metrics")
    assert 'keel_router_decisions_total{policy="cache_aware",decision="cache_hit"} 6' in metrics
    # the 9 chats, the health checks and the load polls (at least 15 requests) reuse pooled connections: per
    # replica the cache feed's, and one or two for the rest (a poll can overlap a chat), not one per request
    connects = int(next(line.split()[1] for line in metrics.splitlines()
                        if line.startswith("keel_router_upstream_connects_total ")))
    print(f"upstream connections opened: {connects}")
    assert 1 <= connects <= 4 * len(replicas[0]), connects
    status, body = admin("GET", base, "/admin/replicas")
    assert status == 200
    assert all(r["cache_source"] == "exact" for r in body["replicas"])
    # every request has completed (the router releases a replica just after the last byte): nothing stays
    # in flight, and the work in flight (uncached prompt tokens) goes back to 0
    deadline = time.time() + 10
    while not all(r["in_flight"] == 0 and r["work"] == 0 for r in body["replicas"]):
        assert time.time() < deadline, body
        time.sleep(0.05)
        body = admin("GET", base, "/admin/replicas")[1]


def test_approximate_index_without_a_tokenizer_also_follows_prefixes(keel_bin, replicas):
    """No --model: character keys and the tree of what the router sent where (no exact feed)."""
    base, proc = start_router(keel_bin, replicas[0])
    try:
        check_prefix_routing(base, [s.replace("assistant", "helper") for s in SYSTEMS])
        _, body = admin("GET", base, "/admin/replicas")
        assert {r["cache_source"] for r in body["replicas"]} == {"approximate"}
    finally:
        stop(proc)


@pytest.mark.parametrize("threads, word", [(("--http-threads", "2"), "aide"),
                                           (("--http-threads", "2", "--upstream-threads", "2"), "agent"),
                                           (("--busy-poll-us", "200"), "butler")],
                         ids=["front_threads_run_upstream", "upstream_threads_of_its_own", "busy_poll"])
def test_other_thread_layouts_route_and_stream_alike(keel_bin, replicas, threads, word):
    """The default runs everything on one io thread that sleeps when idle; two front-end threads sharing it
    with the upstream side (strands), an upstream client with threads of its own, and an io thread that
    polls before it sleeps (--busy-poll-us) must behave the same. Each layout uses its own prompts
    (`word`), so that the replicas' caches hold none of them before the check."""
    base, proc = start_router(keel_bin, replicas[0], *threads)
    try:
        check_prefix_routing(base, [s.replace("assistant", word) for s in SYSTEMS])
        c = client_for(base)
        msgs = [{"role": "user", "content": "Name three colours."}]
        full = c.chat.completions.create(model="smollm2", messages=msgs, max_tokens=8, temperature=0)
        chunks = list(c.chat.completions.create(model="smollm2", messages=msgs, max_tokens=8, temperature=0,
                                                stream=True))
        assert "".join(ch.choices[0].delta.content or "" for ch in chunks if ch.choices) == \
            full.choices[0].message.content
    finally:
        stop(proc)


def test_streaming_passes_through_and_matches_non_streaming(router):
    c = client_for(base := router[0])
    msgs = [{"role": "user", "content": "Count from one to five."}]
    full = c.chat.completions.create(model="smollm2", messages=msgs, max_tokens=12, temperature=0)
    chunks = list(c.chat.completions.create(model="smollm2", messages=msgs, max_tokens=12, temperature=0,
                                            stream=True, stream_options={"include_usage": True}))
    text = "".join(ch.choices[0].delta.content or "" for ch in chunks if ch.choices)
    assert text == full.choices[0].message.content
    assert len({ch.id for ch in chunks}) == 1
    assert chunks[-1].usage.completion_tokens == full.usage.completion_tokens
    status, headers, _ = http("POST", base + "/v1/completions", {"model": "smollm2", "prompt": "Hi", "max_tokens": 2},
                              {"X-Request-Id": "my-request-42"})
    assert status == 200 and headers["X-Request-Id"] == "my-request-42"


def test_access_log_has_a_line_per_request_with_its_id_replica_and_status(keel_bin, replicas):
    """The access log (written by a thread of its own, flushed at the latest when the router stops): one line
    per proxied request, with the client's X-Request-Id, the replica that answered and the status."""
    urls = replicas[0]
    base, proc = start_router(keel_bin, urls[:1])
    try:
        for i in range(3):
            status, headers, _ = http("POST", base + "/v1/completions",
                                      {"model": "smollm2", "prompt": f"Access {i}", "max_tokens": 1},
                                      {"X-Request-Id": f"access-log-{i}"})
            assert status == 200 and headers["X-Request-Id"] == f"access-log-{i}"
    finally:
        out = stop(proc)
    lines = [line for line in out.splitlines() if "access id=access-log-" in line]
    assert len(lines) == 3, out[-3000:]
    for i, line in enumerate(sorted(lines)):
        assert line.startswith(f"keel info: access id=access-log-{i} POST /v1/completions "), line
        assert f"replica={urls[0]} status=200 attempts=1" in line, line
        assert " client=127.0.0.1 " in line, line
    quiet_base, quiet = start_router(keel_bin, urls[:1], "--no-access-log")
    try:
        assert http("POST", quiet_base + "/v1/completions", {"model": "smollm2", "prompt": "Hi", "max_tokens": 1},
                    {"X-Request-Id": "access-log-quiet"})[0] == 200
    finally:
        out = stop(quiet)
    assert "access id=" not in out, out[-3000:]


def test_bad_requests_and_bad_admin_calls_get_4xx(router, replicas):
    base, _ = router
    assert http("POST", base + "/v1/chat/completions", b"{not json")[0] == 400
    assert http("POST", base + "/v1/chat/completions", b"[1, 2]")[0] == 400
    assert http("GET", base + "/v1/chat/completions")[0] == 405
    assert http("GET", base + "/nope")[0] == 404
    assert declared_body_status(base, 9 << 20) == 413
    # The replica's own validation comes back through the router unchanged (not retried as a failure).
    status, _, text = http("POST", base + "/v1/chat/completions", {"model": "smollm2", "messages": [], "max_tokens": 1})
    assert status == 400 and "messages" in json.loads(text)["error"]["message"]
    assert http("GET", base + "/admin/replicas")[0] == 401
    assert http("GET", base + "/admin/replicas", headers={"Authorization": "Bearer wrong"})[0] == 401
    assert admin("POST", base, "/admin/replicas", {"url": "ftp://x:1"})[0] == 400
    assert admin("POST", base, "/admin/replicas", {"url": "http://127.0.0.1:99999"})[0] == 400
    assert admin("POST", base, "/admin/replicas", {"nourl": 1})[0] == 400
    assert admin("POST", base, "/admin/replicas", {"url": "http://127.0.0.1:1", "labels": {"colour": "x"}})[0] == 400
    assert admin("POST", base, "/admin/replicas", {"url": replicas[0][0]})[0] == 409
    assert admin("POST", base, "/admin/replicas/drain", {"url": "http://127.0.0.1:1"})[0] == 404
    assert admin("POST", base, "/admin/replicas/remove", {"url": "http://127.0.0.1:1"})[0] == 404
    status, _, _ = http("POST", base + "/admin/replicas", b"not json", {"Authorization": f"Bearer {ADMIN_KEY}"})
    assert status == 400


def test_admin_drain_remove_and_add_at_run_time(keel_bin, model_path, replicas):
    urls = replicas[0]
    base, proc = start_router(keel_bin, urls[:2], "--policy", "round_robin")
    try:
        c = client_for(base)
        assert admin("POST", base, "/admin/replicas/drain", {"url": urls[0]})[0] == 200
        assert {chat(c, "s", f"q{i}", max_tokens=1)[0] for i in range(4)} == {urls[1]}
        assert admin("POST", base, "/admin/replicas", {"url": urls[2], "labels": {"region": "eu", "pool": "p"}})[0] == 201
        assert admin("POST", base, "/admin/replicas/remove", {"url": urls[0]})[0] == 200
        status, body = admin("GET", base, "/admin/replicas")
        listed = {r["url"]: r for r in body["replicas"]}
        assert set(listed) == {urls[1], urls[2]} and listed[urls[2]]["labels"]["region"] == "eu"
        deadline = time.time() + 30  # the new replica serves once its first health check passed
        seen = set()
        while seen != {urls[1], urls[2]} and time.time() < deadline:
            seen.add(chat(c, "s", "q", max_tokens=1)[0])
        assert seen == {urls[1], urls[2]}
    finally:
        stop(proc)


def test_tenants_are_isolated_and_rate_limited(keel_bin, replicas, tmp_path):
    urls = replicas[0]
    sha = lambda k: hashlib.sha256(k.encode()).hexdigest()  # noqa: E731
    cfg = {"tenants": [
        {"name": "acme", "pool": "a", "api_keys_sha256": [sha("key-acme")]},
        {"name": "globex", "pool": "b", "api_keys_sha256": [sha("key-globex")]},
        {"name": "tiny", "pool": "b", "rate_per_s": 0.2, "burst": 2, "api_keys_sha256": [sha("key-tiny")]}]}
    path = tmp_path / "tenants.json"
    path.write_text(json.dumps(cfg))
    assert "key-acme" not in path.read_text()
    base, proc = start_router(keel_bin, [urls[0] + "@pool=a", urls[1] + "@pool=b", urls[2] + "@pool=b"],
                              "--tenants", str(path))
    try:
        acme, globex = client_for(base, "key-acme"), client_for(base, "key-globex")
        assert {chat(acme, f"s{i}", "q", max_tokens=1)[0] for i in range(4)} == {urls[0]}
        assert {chat(globex, f"s{i}", "q", max_tokens=1)[0] for i in range(6)} <= {urls[1], urls[2]}
        with pytest.raises(openai.AuthenticationError):
            chat(client_for(base, "key-unknown"), "s", "q", max_tokens=1)
        assert http("POST", base + "/v1/completions", {"model": "smollm2", "prompt": "x"})[0] == 401
        tiny = client_for(base, "key-tiny")
        chat(tiny, "s", "q", max_tokens=1)
        chat(tiny, "s", "q", max_tokens=1)
        with pytest.raises(openai.RateLimitError) as e:
            chat(tiny, "s", "q", max_tokens=1)
        assert int(e.value.response.headers["retry-after"]) >= 1
        chat(acme, "s", "q", max_tokens=1)  # another tenant's key is not limited by tiny's bucket
    finally:
        stop(proc)


def test_region_header_prefers_local_replicas(keel_bin, replicas):
    urls = replicas[0]
    base, proc = start_router(keel_bin, [urls[0] + "@region=eu", urls[1] + "@region=us", urls[2] + "@region=us"])
    try:
        c = client_for(base)
        eu = {chat(c, f"s{i}", "q", max_tokens=1, extra_headers={"X-Keel-Region": "eu"})[0] for i in range(4)}
        us = {chat(c, f"s{i}", "q", max_tokens=1, extra_headers={"X-Keel-Region": "us"})[0] for i in range(6)}
        assert eu == {urls[0]} and us <= {urls[1], urls[2]}
    finally:
        stop(proc)


def test_idle_cap_keeps_a_third_request_on_the_prefix_holder(keel_bin, model_path, replicas):
    """Three concurrent requests of one cached prefix while the fleet is idle: with the count bound
    alone (--spill-factor 0) the holder takes two and the third goes to a replica without the prefix
    (the replica reports it uncached); by default (cost spills: two of the group routed just before
    is no burst, and queueing costs less than a copy), and with --spill-factor 0 plus
    --balance-idle-cap 3, --group-affinity 3 (three of the group in flight at most) or
    --balance-work-slack 1 (the spill would repeat the prefix's prefill), all three stay on the
    holder and the replicas report hits."""
    urls = replicas[0]
    # Placement is what this test checks: without KV pulls the replicas' cached-token counts confirm
    # it (a spilled request prefills cold). With pulls (the default) the spill would report cached
    # tokens too; test_kv_pull.py covers that.
    count = ("--spill-factor", "0", "--kv-pull-min-tokens", "0")
    for tag, extra, on_holder in (("count bound", count, 2), ("default", ("--kv-pull-min-tokens", "0"), 3),
                                  ("idle cap", (*count, "--balance-idle-cap", "3"), 3),
                                  ("group affinity", (*count, "--group-affinity", "3"), 3),
                                  ("work rule", (*count, "--balance-work-slack", "1"), 3)):
        base, proc = start_router(keel_bin, urls, *extra, model_path=model_path)
        try:
            c = client_for(base)
            system = f"You are the {tag} queue tester. " + " ".join(f"Queue rule {k}: keep it brief." for k in range(12))
            holder, _ = chat(c, system, "Warm up?", max_tokens=1)
            # Sent together; each decodes 16 tokens (seconds on one CPU thread), so all three are in
            # flight at the router when the last one is routed.
            with concurrent.futures.ThreadPoolExecutor(3) as pool:
                done = list(pool.map(lambda q: chat(c, system, f"Question {q}?", max_tokens=16,
                                                          extra_body={"ignore_eos": True}),
                                     range(3)))
            placed = [replica for replica, _ in done]
            assert placed.count(holder) == on_holder, f"{tag}: {placed}, holder {holder}"
            for replica, resp in done:
                cached = resp.usage.prompt_tokens_details.cached_tokens
                assert (cached >= 80) == (replica == holder), f"{tag}: {replica} reported {cached} cached tokens"
        finally:
            stop(proc)


def wait_cache_map(base: str, urls: list[str], deadline: float) -> dict:
    """Polls until the router's exact map for every replica equals the replica's own KV use."""
    while True:
        _, body = admin("GET", base, "/admin/replicas")
        entries = {r["url"]: (r["cache_source"], r["cache_entries"]) for r in body["replicas"]}
        expected = {u: ("exact", int(replica_metric(u, "keel_kv_slots_used"))) for u in urls}
        if entries == expected or time.time() > deadline:
            assert entries == expected
            return body
        time.sleep(0.05)


def test_router_restart_rebuilds_the_cache_map_from_replicas(keel_bin, model_path, replicas):
    urls = replicas[0]
    base, proc = start_router(keel_bin, urls, model_path=model_path)
    port = int(base.rsplit(":", 1)[1])
    system = "You are a restart test. " + " ".join(f"Fact {k}: the sky is blue on day {k}." for k in range(10))
    holder, _ = chat(client_for(base), system, "first")
    stop(proc)
    t0 = time.time()
    base, proc = start_router(keel_bin, urls, model_path=model_path, port=port)
    try:
        wait_cache_map(base, urls, t0 + 60)
        print(f"cache map rebuilt {time.time() - t0:.2f} s after the restart began")
        again, resp = chat(client_for(base), system, "second")
        assert again == holder and resp.usage.prompt_tokens_details.cached_tokens >= 80
    finally:
        stop(proc)


def test_router_restarts_with_its_admin_replica_set_from_the_state_file(keel_bin, model_path, replicas, tmp_path):
    """Admin changes survive SIGKILL of the router: the state file brings back the replicas (labels, drain
    state), not only --workers, and the exact cache map is rebuilt so routing follows an existing prefix."""
    urls = replicas[0]
    state = tmp_path / "router-state.json"
    base, proc = start_router(keel_bin, urls[:2], "--state-file", str(state), model_path=model_path)
    port = int(base.rsplit(":", 1)[1])
    try:
        assert admin("POST", base, "/admin/replicas", {"url": urls[2], "labels": {"region": "eu", "cloud": "gcp"}})[0] == 201
        assert admin("POST", base, "/admin/replicas/drain", {"url": urls[1]})[0] == 200
        deadline = time.time() + 30  # the added replica serves once its first health check passed
        while not any(r["url"] == urls[2] and r["healthy"] for r in admin("GET", base, "/admin/replicas")[1]["replicas"]):
            assert time.time() < deadline
            time.sleep(0.05)
        systems = [f"You are state test {i}. " + " ".join(f"Fact {k}: the lake is cold in month {k}." for k in range(10))
                   for i in range(2)]
        holders = [chat(client_for(base), s, "first")[0] for s in systems]
        assert set(holders) <= {urls[0], urls[2]}
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    finally:
        stop(proc)
    t0 = time.time()
    base, proc = start_router(keel_bin, urls[:2], "--state-file", str(state), model_path=model_path, port=port)
    try:
        body = wait_cache_map(base, urls, t0 + 60)
        print(f"replica set and exact cache map back {time.time() - t0:.2f} s after the restart began")
        listed = {r["url"]: r for r in body["replicas"]}
        assert set(listed) == set(urls)
        assert listed[urls[1]]["state"] == "draining" and listed[urls[0]]["state"] == "active"
        assert listed[urls[2]]["labels"] == {"region": "eu", "cloud": "gcp", "pool": ""}
        for system, holder in zip(systems, holders):
            again, resp = chat(client_for(base), system, "second")
            assert again == holder and resp.usage.prompt_tokens_details.cached_tokens >= 80
    finally:
        stop(proc)


@pytest.mark.parametrize("value", ["-1", "1000001", "ten"])
def test_a_bad_busy_poll_is_a_cli_error(keel_bin, replicas, value):
    proc = subprocess.run([keel_bin, "router", "--port", "0", "--workers", replicas[0][0], "--busy-poll-us", value],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2, proc.stderr
    assert "busy" in proc.stderr.lower(), proc.stderr


@pytest.mark.parametrize("flag,value,message", [("--upstream-pool", "-1", "idle connections"),
                                                ("--upstream-pool-idle-ms", "0", "idle limit"),
                                                ("--upstream-pool", "many", "upstream-pool"),
                                                ("--max-approx-entries", "0", "max-approx-entries"),
                                                ("--max-prefix-tokens", "0", "max-prefix-tokens"),
                                                ("--body-threads", "0", "body-threads"),
                                                ("--body-queue", "-1", "body-queue"),
                                                ("--max-approx-entries", str(2**30 + 1), "max-approx-entries")])
def test_a_bad_pool_or_index_bound_is_a_cli_error(keel_bin, replicas, flag, value, message):
    proc = subprocess.run([keel_bin, "router", "--port", "0", "--workers", replicas[0][0], flag, value],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2, proc.stderr
    assert message in proc.stderr, proc.stderr


@pytest.mark.parametrize("text,message", [("{not json", "not a JSON object"),
                                          ('{"version": 1, "replicas": [{"url": "http://x"}]}', "host:port")])
def test_malformed_state_file_is_refused_with_a_clear_error(keel_bin, replicas, tmp_path, text, message):
    state = tmp_path / "bad.json"
    state.write_text(text)
    proc = subprocess.run([keel_bin, "router", "--port", "0", "--workers", replicas[0][0], "--state-file", str(state)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode != 0
    assert str(state) in proc.stderr and message in proc.stderr


def _stream(client, prompt, max_tokens, started=None):
    raw = client.chat.completions.with_raw_response.create(
        model="smollm2", messages=[{"role": "user", "content": prompt}], max_tokens=max_tokens, temperature=0,
        stream=True, stream_options={"include_usage": True})
    replica = raw.headers["x-keel-replica"]
    pieces, ids, usage = [], set(), None
    for i, ch in enumerate(raw.parse()):
        ids.add(ch.id)
        if ch.choices and ch.choices[0].delta.content:
            pieces.append(ch.choices[0].delta.content)
        if ch.usage:
            usage = (ch.usage.prompt_tokens, ch.usage.completion_tokens)
        if started is not None and i == 3:
            started(replica)
    return replica, "".join(pieces), ids, usage


def test_sigkill_under_load_loses_nothing_and_resumed_streams_match(keel_bin, model_path, replicas):
    """Last in this module: it kills one of the shared replicas."""
    urls, procs = replicas
    base, proc = start_router(keel_bin, urls, "--policy", "round_robin", model_path=model_path)
    c = client_for(base)
    prompts = [f"Tell a long story about a {animal} who learns to sail." for animal in
               ["fox", "owl", "cat", "bear", "seal", "wolf"]]
    try:
        # Uninterrupted greedy references (router and replicas healthy).
        refs = {p: _stream(c, p, 40) for p in prompts}
        victim = {}

        def started(replica):
            if "url" not in victim:
                victim["url"] = replica
                os.kill(procs[urls.index(replica)].pid, signal.SIGKILL)

        with concurrent.futures.ThreadPoolExecutor(len(prompts) + 4) as pool:
            streams = [pool.submit(_stream, c, p, 40, started if i == 0 else None) for i, p in enumerate(prompts)]
            plain = [pool.submit(chat, c, "You are brief.", f"Plain request {i}", 8) for i in range(4)]
            results = [f.result() for f in streams]
            plain_results = [f.result() for f in plain]
        assert "url" in victim
        for p, (_, text, ids, usage) in zip(prompts, results):
            assert text == refs[p][1], f"stream for {p!r} differs from the uninterrupted run"
            assert len(ids) == 1  # one completion id, even across replicas
            assert usage == refs[p][3]  # usage counts the tokens of both replicas once
        assert all(r[1].choices[0].message.content for r in plain_results)
        _, _, metrics = http("GET", base + "/metrics")
        resumed = sum(float(line.split()[-1]) for line in metrics.splitlines()
                      if line.startswith("keel_router_replica_resumed_streams_total"))
        assert resumed >= 1
    finally:
        stop(proc)
