"""`keel router` under injected faults. FakeBackend below is a tiny Python HTTP server used ONLY to
inject faults a real replica will not produce on demand (HTTP 500s, a stall before the first byte, a
stream cut mid-way); refused connections use a port nobody listens on. Every successful answer in
these tests comes from a real `keel serve` replica."""
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
import json
import resource
import socket
import subprocess
import threading
import time

import openai
import pytest

from test_router import client_for, free_port, http, one_replica, start_router, stop, wait_healthy


class FakeBackend:
    """Fault injection only: mode '500' answers every POST with 500, 'slow' stalls POSTs for 5 s,
    'cut' starts an SSE stream, sends two chunks and drops the connection (and refuses to resume a
    stream with 503), 'ok' answers a fixed chat completion. /health always answers 200 (so only passive detection can catch it).
    With feeds, GET /v1/cache/events answers the next list of SSE events (a replica's cache feed, possibly
    malformed)."""

    def __init__(self, mode: str, feeds: list[list[str]] | None = None):
        self.mode = mode
        self.posts = 0
        self.feeds = feeds or []  # cache-feed answers (SSE events), one per subscription
        self.subscriptions = 0
        self.feed_writes = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def _send(self, status, body, ctype="application/json"):
                data = body.encode()
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                if self.path.startswith("/v1/cache/events") and fake.feeds:
                    return self._feed()
                self._send(200, '{"status":"ok"}' if self.path == "/health" else "")

            def _feed(self):
                """The next of fake.feeds (the last one repeats): its events, then heartbeats for 3 s."""
                events = fake.feeds[min(fake.subscriptions, len(fake.feeds) - 1)]
                fake.subscriptions += 1
                fake.feed_writes.append(0)  # chunks this subscription wrote before the router hung up
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                try:
                    for ev in events + [":\n\n"] * 15:
                        self.wfile.write(f"{len(ev.encode()):x}\r\n{ev}\r\n".encode())
                        self.wfile.flush()
                        fake.feed_writes[-1] += 1
                        if ev.startswith(":"):
                            time.sleep(0.2)
                    self.wfile.write(b"0\r\n\r\n")
                except OSError:
                    pass  # the router dropped the feed (a malformed event): expected
                self.close_connection = True

            def do_POST(self):
                self.rfile.read(int(self.headers.get("Content-Length", 0)))
                fake.posts += 1
                if fake.mode == "500":
                    return self._send(500, '{"error":{"message":"injected","type":"internal"}}')
                if fake.mode == "slow":
                    time.sleep(5)
                    return self._send(200, "{}")
                if self.headers.get("X-Keel-Resume"):  # a fake cannot continue a stream
                    return self._send(503, '{"error":{"message":"cannot resume","type":"unavailable"}}')
                if fake.mode == "ok":
                    return self._send(200, json.dumps({
                        "id": "fake", "object": "chat.completion", "created": 0, "model": "smollm2",
                        "choices": [{"index": 0, "finish_reason": "stop",
                                     "message": {"role": "assistant", "content": "fake"}}]}))
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                for i, word in enumerate(["Hello", " there"]):
                    chunk = {"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "smollm2",
                             "choices": [{"index": 0, "delta": {"content": word}, "finish_reason": None}]}
                    ev = f'event: keel_tokens\ndata: {{"index":0,"token_ids":[{i + 1}]}}\n\ndata: {json.dumps(chunk)}\n\n'
                    self.wfile.write(f"{len(ev.encode()):x}\r\n{ev}\r\n".encode())
                    self.wfile.flush()
                self.close_connection = True  # cut: no last chunk, no [DONE]

        class Server(ThreadingHTTPServer):
            def handle_error(self, request, client_address):
                pass  # the router hanging up on a cut or stalled answer is expected here

        self.server = Server(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def metric(base: str, name: str, replica: str) -> float:
    _, _, text = http("GET", base + "/metrics")
    for line in text.splitlines():
        if line.startswith(f'{name}{{replica="{replica}"}}'):
            return float(line.split()[-1])
    raise AssertionError(f"{name} for {replica} not in the router's metrics")


def test_500s_stalls_and_refused_connections_are_retried_on_a_healthy_replica(keel_bin, one_replica):
    failing, slow = FakeBackend("500"), FakeBackend("slow")
    refused = f"http://127.0.0.1:{free_port()}"
    # 3 s: under the slow fake's 5 s stall, above a real replica's first answer on a busy 2-core machine
    # (1 s timed the real replica out too there, and the request ran out of replicas).
    base, proc = start_router(keel_bin, [failing.url, slow.url, refused, one_replica], "--policy", "round_robin",
                              "--first-byte-timeout-ms", "3000", "--breaker-threshold", "2",
                              "--breaker-open-ms", "600000", "--max-retries", "3", "--retry-backoff-ms", "1")
    try:
        c = client_for(base)
        for i in range(8):
            raw = c.chat.completions.with_raw_response.create(
                model="smollm2", messages=[{"role": "user", "content": f"hi {i}"}], max_tokens=2, temperature=0)
            assert raw.headers["x-keel-replica"] == one_replica
            assert raw.parse().choices[0].message.content
        assert failing.posts >= 1 and slow.posts >= 1
        assert metric(base, "keel_router_replica_errors_total", failing.url) >= 1
        assert metric(base, "keel_router_replica_errors_total", slow.url) >= 1
        assert metric(base, "keel_router_replica_healthy", refused) == 0
        assert metric(base, "keel_router_replica_breaker_open", failing.url) == 1  # open: passive detection
        posts = failing.posts
        for i in range(4):  # the open breaker keeps traffic away from the failing replica
            c.chat.completions.create(model="smollm2", messages=[{"role": "user", "content": "x"}], max_tokens=1)
        assert failing.posts == posts
    finally:
        stop(proc)
        failing.close()
        slow.close()


def test_breaker_half_opens_and_closes_when_the_replica_recovers(keel_bin, one_replica):
    flaky = FakeBackend("500")
    base, proc = start_router(keel_bin, [flaky.url, one_replica], "--policy", "round_robin", "--breaker-threshold",
                              "1", "--breaker-open-ms", "300", "--retry-backoff-ms", "1")
    try:
        c = client_for(base)
        c.chat.completions.create(model="smollm2", messages=[{"role": "user", "content": "x"}], max_tokens=1)
        c.chat.completions.create(model="smollm2", messages=[{"role": "user", "content": "y"}], max_tokens=1)
        assert flaky.posts >= 1
        flaky.mode = "ok"
        deadline = time.time() + 30
        while metric(base, "keel_router_replica_breaker_open", flaky.url) != 0 and time.time() < deadline:
            time.sleep(0.05)
        assert metric(base, "keel_router_replica_breaker_open", flaky.url) == 0  # probe passed: closed
        answers = {c.chat.completions.create(model="smollm2", messages=[{"role": "user", "content": "z"}],
                                             max_tokens=1).choices[0].message.content for _ in range(4)}
        assert "fake" in answers  # traffic flows to it again
    finally:
        stop(proc)
        flaky.close()


def test_a_stream_nobody_can_continue_ends_with_a_clean_error_event(keel_bin):
    cut = FakeBackend("cut")
    base, proc = start_router(keel_bin, [cut.url], "--retry-backoff-ms", "1")
    try:
        c = client_for(base)
        got = []
        with pytest.raises(openai.APIError) as e:
            for ch in c.chat.completions.create(model="smollm2", messages=[{"role": "user", "content": "x"}],
                                                max_tokens=20, stream=True):
                got.append(ch.choices[0].delta.content)
        assert got == ["Hello", " there"]  # what was sent stays sent, once
        assert "cannot" in str(e.value) or "no replica" in str(e.value)
    finally:
        stop(proc)
        cut.close()


def test_no_replica_at_all_is_a_503_not_a_hang(keel_bin):
    port = free_port()
    proc = subprocess.Popen([keel_bin, "router", "--port", str(port), "--workers", f"http://127.0.0.1:{free_port()}"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    base = f"http://127.0.0.1:{port}"
    try:
        status, _, text = None, None, None
        deadline = time.time() + 30
        while time.time() < deadline:
            try:
                status, _, text = http("POST", base + "/v1/completions", {"model": "smollm2", "prompt": "x"})
                break
            except OSError:  # not listening yet
                time.sleep(0.05)
        assert status == 503 and "replica" in json.loads(text)["error"]["message"]
        deadline = time.time() + 30
        while http("GET", base + "/health")[0] != 503 and time.time() < deadline:
            time.sleep(0.05)
        assert http("GET", base + "/health")[0] == 503
    finally:
        stop(proc)


def plain_metric(base: str, name: str) -> float:
    _, _, text = http("GET", base + "/metrics")
    for line in text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[-1])
    raise AssertionError(f"{name} not in the router's metrics")


def wait_idle(base: str, urls: list[str]) -> None:
    """Waits (bounded) until the router holds no request and no work on any replica; fails otherwise."""
    deadline = time.time() + 30
    while time.time() < deadline:
        if all(metric(base, "keel_router_replica_in_flight", u) == 0 and
               metric(base, "keel_router_replica_work", u) == 0 for u in urls) and \
                plain_metric(base, "keel_router_group_requests_in_flight") == 0:
            return
        time.sleep(0.05)
    state = {u: (metric(base, "keel_router_replica_in_flight", u), metric(base, "keel_router_replica_work", u))
             for u in urls}
    raise AssertionError(f"in flight / work not back to 0: {state}")


def test_work_in_flight_is_taken_off_once_on_every_path(keel_bin, one_replica):
    """keel_router_replica_work (the cost the work rule counts per replica) and the per-group count of
    group affinity go up at dispatch and back to 0 after success, errors and retries (500s, first-byte timeouts, refused), a stream cut mid-way
    and resumed or failed, and a client that hangs up while its request waits on a replica."""
    # A client hanging up: the only replica stalls, so the request is in flight until the client goes.
    slow = FakeBackend("slow")
    base, proc = start_router(keel_bin, [slow.url], "--first-byte-timeout-ms", "60000")
    try:
        body = json.dumps({"model": "smollm2", "messages": [{"role": "user", "content": "wait " * 40}],
                           "max_tokens": 1}).encode()
        s = socket.create_connection(("127.0.0.1", int(base.rsplit(":", 1)[1])))
        s.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                  b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
        deadline = time.time() + 30
        while metric(base, "keel_router_replica_in_flight", slow.url) == 0 and time.time() < deadline:
            time.sleep(0.02)
        # Counted while it waits: its uncached prompt (character blocks, no --model) plus the constant.
        assert metric(base, "keel_router_replica_in_flight", slow.url) == 1
        assert metric(base, "keel_router_replica_work", slow.url) > 16
        assert plain_metric(base, "keel_router_group_requests_in_flight") == 1  # its prompt group
        s.close()
        wait_idle(base, [slow.url])
        time.sleep(5.5)  # past the fake's stall: a late answer must not take the work off a second time
        assert metric(base, "keel_router_replica_work", slow.url) == 0
        assert metric(base, "keel_router_replica_in_flight", slow.url) == 0
        assert plain_metric(base, "keel_router_group_requests_in_flight") == 0
    finally:
        stop(proc)
        slow.close()
    # Success, errors and retries over faulty replicas and a real one.
    failing, slow = FakeBackend("500"), FakeBackend("slow")
    refused = f"http://127.0.0.1:{free_port()}"
    urls = [failing.url, slow.url, refused, one_replica]
    base, proc = start_router(keel_bin, urls, "--policy", "round_robin", "--first-byte-timeout-ms", "3000",
                              "--breaker-threshold", "1000", "--max-retries", "4", "--retry-backoff-ms", "1")
    try:
        c = client_for(base)
        for i in range(6):
            assert c.chat.completions.create(model="smollm2", messages=[{"role": "user", "content": f"hi {i}"}],
                                             max_tokens=2, temperature=0).choices[0].message.content
        assert failing.posts >= 1 and slow.posts >= 1
        wait_idle(base, urls)
        time.sleep(5.5)  # every stalled fake answer has come back or been dropped: still 0, not below
        wait_idle(base, urls)
    finally:
        stop(proc)
        failing.close()
        slow.close()
    # Streams cut mid-way: resumed on the real replica (or ended with a clean error event).
    cut = FakeBackend("cut")
    urls = [cut.url, one_replica]
    base, proc = start_router(keel_bin, urls, "--policy", "round_robin", "--retry-backoff-ms", "1")
    try:
        c = client_for(base)
        for i in range(4):
            try:
                for _ in c.chat.completions.create(model="smollm2", stream=True, max_tokens=4,
                                                   messages=[{"role": "user", "content": f"tell {i}"}]):
                    pass
            except openai.APIError:
                pass
        assert cut.posts >= 1
        assert metric(base, "keel_router_replica_resumed_streams_total", one_replica) >= 1
        wait_idle(base, urls)
    finally:
        stop(proc)
        cut.close()


def test_malformed_cache_feed_events_resync_the_feed_and_never_crash_the_router(keel_bin, model_path, one_replica):
    """A replica's cache feed is input too: deltas whose tokens are not integers, or whose kind is not a
    string, must drop that feed back to a fresh subscription, not throw out of the router's handler; an
    event that never ends must drop it too (it was buffered without bound)."""
    reset = 'event: reset\ndata: {"seq":0}\n\n'
    # 48 one-MiB pieces of one event that never ends: the router must hang up near its 8 MiB event limit.
    huge = ["event: stored\ndata: 1"] + [",1" * (1 << 19)] * 48
    bad = [[reset, 'event: stored\ndata: {"seq":1,"parent_hash":0,"tokens":[1,"two",3]}\n\n'],
           [reset] + huge,
           [reset, 'event: stored\ndata: {"seq":1,"parent_hash":0,"tokens":[1,2,3],"kind":5}\n\n'],
           [reset, 'event: stored\ndata: {"seq":1,"parent_hash":0,"tokens":[1,1e300]}\n\n'],
           [reset, 'event: pending\ndata: {"tokens":[1,2.5]}\n\n', 'event: load\ndata: {"in_flight":"3"}\n\n',
            'event: stored\ndata: {"seq":1,"parent_hash":0,"tokens":[1,2,3]}\n\n']]
    fake = FakeBackend("ok", feeds=bad)
    base, proc = start_router(keel_bin, [fake.url, one_replica], "--policy", "round_robin", model_path=model_path)
    try:
        deadline = time.time() + 30
        while fake.subscriptions < len(bad) and time.time() < deadline and proc.poll() is None:
            time.sleep(0.05)
        assert proc.poll() is None, "the router exited on a malformed cache feed event"
        assert fake.subscriptions >= len(bad)  # each malformed delta dropped the feed; the router subscribed again
        assert fake.feed_writes[1] < 2 + 32, f"{fake.feed_writes[1]} MiB pieces taken: the event was buffered"
        c = client_for(base)
        for i in range(4):  # round robin: both replicas still take requests
            assert c.chat.completions.create(model="smollm2", messages=[{"role": "user", "content": f"hi {i}"}],
                                             max_tokens=1, temperature=0).choices[0].message.content is not None
        assert fake.posts >= 1
        assert proc.poll() is None
    finally:
        stop(proc)
        fake.close()


def test_running_out_of_file_descriptors_neither_spins_nor_sticks(keel_bin, one_replica, tmp_path):
    """With its descriptors used up (RLIMIT_NOFILE 64, 100 clients connecting), accept fails with EMFILE
    while connections wait in the backlog: the router must pause between attempts (it used to retry at
    once, a busy loop writing a warning per try) and serve again once clients leave."""
    port = free_port()
    log_path = tmp_path / "router.log"
    with open(log_path, "w") as log:
        proc = subprocess.Popen([keel_bin, "router", "--port", str(port), "--workers", one_replica, "--no-access-log"],
                                stdout=log, stderr=subprocess.STDOUT,
                                preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64)))
    base = f"http://127.0.0.1:{port}"
    socks = []
    try:
        wait_healthy(base, proc, 30)
        socks = [socket.create_connection(("127.0.0.1", port)) for _ in range(100)]
        time.sleep(1.5)
        failures = log_path.read_text().count("accept failed")
        assert failures >= 1, "the descriptor limit was not reached"
        assert failures < 100, f"{failures} accept failures in 1.5 s: the accept loop spins"
        assert proc.poll() is None
        for s in socks:
            s.close()
        socks = []
        c = client_for(base)
        out = c.chat.completions.create(model="smollm2", messages=[{"role": "user", "content": "hi"}], max_tokens=1)
        assert out.choices[0].message.content is not None
    finally:
        for s in socks:
            s.close()
        stop(proc)



def test_without_an_admin_key_the_admin_api_answers_loopback_clients(keel_bin, one_replica):
    """No --admin-key: the admin API answers clients on this host (the router sees each connection's
    address); AdminAccess unit tests hold that other addresses get 403."""
    port = free_port()
    proc = subprocess.Popen([keel_bin, "router", "--port", str(port), "--workers", one_replica],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(base, proc, 30)
        status, _, text = http("GET", base + "/admin/replicas")
        assert status == 200 and json.loads(text)["replicas"][0]["url"] == one_replica
    finally:
        stop(proc)
