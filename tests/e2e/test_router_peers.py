"""Exact peer sync between two `keel router` instances (`--peer`, GET /v1/router/peer_feed): two real
router processes peered with each other in front of one real `keel serve` replica (SmolLM2, CPU). A
stream through A shows up in B's view (B's /metrics: A's in-flight count on the replica) and leaves it
when it completes; killing A makes B drop A's contribution at once and report the feed down, and A
back on its port makes it live again; a peer URL that is no router never goes live; a replica spelled
differently on the two instances is dropped and warned about once; a bad `--peer` is a CLI error."""
import json
import signal
import socket
import subprocess
import threading
import time
import urllib.request

import pytest

from test_router import free_port, http, one_replica, start_router, stop


def metrics(base: str) -> str:
    with urllib.request.urlopen(base + "/metrics", timeout=10) as r:
        return r.read().decode()


def gauge(base: str, line_prefix: str) -> float:
    for line in metrics(base).splitlines():
        if line.startswith(line_prefix + " "):
            return float(line.rsplit(" ", 1)[1])
    raise AssertionError(f"{line_prefix} not in {base}/metrics")


def wait_for(cond, timeout_s: float = 10.0) -> bool:
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        if cond():
            return True
        time.sleep(0.02)
    return cond()


def chat_status(base: str) -> int:
    """One short chat completion through `base`; its HTTP status."""
    body = json.dumps({"model": "smollm2", "max_tokens": 2, "messages": [{"role": "user", "content": "hi"}]}).encode()
    req = urllib.request.Request(base + "/v1/chat/completions", data=body, method="POST",
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=120) as r:
        return r.status


def open_stream(base: str, max_tokens: int):
    """Starts a streamed chat completion through `base`; returns the response after its first chunk."""
    body = json.dumps({"model": "smollm2", "stream": True, "max_tokens": max_tokens, "temperature": 0,
                       "ignore_eos": True,
                       "messages": [{"role": "user", "content": "Count slowly from one to one hundred."}]}).encode()
    req = urllib.request.Request(base + "/v1/chat/completions", data=body, method="POST",
                                 headers={"Content-Type": "application/json"})
    resp = urllib.request.urlopen(req, timeout=120)
    assert resp.status == 200
    assert resp.readline().startswith(b"data: ")
    return resp


# keel's default layout (one io thread for everything), two front-end threads with the upstream calls on
# them (an io_context each: the peer links and the feed live on the first, decisions run on both), and a
# threaded one (the peer links and the flushes then cross threads: a decision drains a link that an
# upstream thread also reads).
@pytest.mark.parametrize("layout", [[], ["--http-threads", "2"], ["--http-threads", "2", "--upstream-threads", "2"]],
                         ids=["one-thread", "front-threads", "threads"])
def test_a_request_through_one_instance_shows_in_the_other_and_a_killed_peer_is_dropped(keel_bin, one_replica, layout):
    replica = one_replica
    pa, pb = free_port(), free_port()
    a, b = f"http://127.0.0.1:{pa}", f"http://127.0.0.1:{pb}"
    # A starts first, so B's feed to A connects at once and A's feed to B retries until B is up.
    a_base, a_proc = start_router(keel_bin, [replica], "--instance", "0/2", "--peer", b, *layout, port=pa)
    b_base, b_proc = start_router(keel_bin, [replica], "--instance", "1/2", "--peer", a, *layout, port=pb)
    try:
        a_on_b = f'keel_router_peer_in_flight{{peer="{a}",replica="{replica}"}}'
        assert wait_for(lambda: gauge(b_base, "keel_router_peer_synced") == 1 and
                        gauge(a_base, "keel_router_peer_synced") == 1)
        assert gauge(b_base, f'keel_router_peer_live{{peer="{a}"}}') == 1
        assert gauge(b_base, a_on_b) == 0
        assert gauge(a_base, "keel_router_peer_feed_subscribers") == 1

        # One stream through A: B sees A's request on the replica while it runs, then sees it go.
        resp = open_stream(a_base, 400)
        assert gauge(a_base, f'keel_router_replica_in_flight{{replica="{replica}"}}') == 1
        assert wait_for(lambda: gauge(b_base, a_on_b) == 1)
        assert gauge(b_base, f'keel_router_replica_peer_in_flight{{replica="{replica}"}}') == 1
        assert gauge(b_base, f'keel_router_replica_in_flight{{replica="{replica}"}}') == 0  # B's own: none
        text = resp.read().decode()
        assert "[DONE]" in text
        assert wait_for(lambda: gauge(b_base, a_on_b) == 0)

        # Another stream through A, then A is killed mid-stream: B drops A's contribution at once.
        resp = open_stream(a_base, 400)
        assert wait_for(lambda: gauge(b_base, a_on_b) == 1)
        a_proc.send_signal(signal.SIGKILL)
        a_proc.wait(timeout=10)
        assert wait_for(lambda: gauge(b_base, f'keel_router_peer_live{{peer="{a}"}}') == 0, 5)
        assert gauge(b_base, "keel_router_peer_synced") == 0
        assert gauge(b_base, f'keel_router_replica_peer_in_flight{{replica="{replica}"}}') == 0
        assert gauge(b_base, a_on_b) == 0
        resp.close()
        # B still routes on its own (the --instance fallback).
        assert chat_status(b_base) == 200
        # A comes back on the same port: B's link reconnects and is live again, with A's fresh figures.
        a_base, a_proc = start_router(keel_bin, [replica], "--instance", "0/2", "--peer", b, *layout, port=pa)
        assert wait_for(lambda: gauge(b_base, f'keel_router_peer_live{{peer="{a}"}}') == 1, 5)
        assert gauge(b_base, "keel_router_peer_synced") == 1
        assert gauge(b_base, a_on_b) == 0
    finally:
        stop(a_proc)
        stop(b_proc)


def test_a_peer_url_that_is_no_router_never_goes_live(keel_bin, one_replica):
    """--peer pointing at a keel serve replica (404 on /v1/router/peer_feed): the link is never live, the
    instance keeps retrying without harm and routes on its own estimate."""
    replica = one_replica
    base, proc = start_router(keel_bin, [replica], "--instance", "0/2", "--peer", replica)
    try:
        time.sleep(0.5)  # several connect attempts (every 100 ms)
        assert gauge(base, f'keel_router_peer_live{{peer="{replica}"}}') == 0
        assert gauge(base, "keel_router_peer_synced") == 0
        assert chat_status(base) == 200
        assert proc.poll() is None
    finally:
        stop(proc)


def test_a_replica_spelled_differently_on_the_peer_is_dropped_and_warned_about_once(keel_bin, one_replica):
    """A names the replica http://127.0.0.1:P, B names the same replica http://localhost:P: B cannot match
    A's figures to a replica of its own, so it drops them (counted), warns once in its log naming the
    URL, and still routes; A, whose spelling B's events do not match either, warns about B's."""
    replica = one_replica
    other = replica.replace("127.0.0.1", "localhost")
    assert other != replica
    pa, pb = free_port(), free_port()
    a, b = f"http://127.0.0.1:{pa}", f"http://127.0.0.1:{pb}"
    a_base, a_proc = start_router(keel_bin, [replica], "--instance", "0/2", "--peer", b, port=pa)
    b_base, b_proc = start_router(keel_bin, [other], "--instance", "1/2", "--peer", a, port=pb)
    try:
        assert wait_for(lambda: gauge(b_base, "keel_router_peer_synced") == 1)
        for _ in range(3):
            assert chat_status(a_base) == 200
            assert chat_status(b_base) == 200
        assert wait_for(lambda: gauge(b_base, "keel_router_peer_events_dropped_total") >= 3)
        assert wait_for(lambda: gauge(a_base, "keel_router_peer_events_dropped_total") >= 3)
        # B's view of A's requests on its replica stays empty: the figures went nowhere.
        assert gauge(b_base, f'keel_router_replica_peer_in_flight{{replica="{other}"}}') == 0
    finally:
        a_log = stop(a_proc)
        b_log = stop(b_proc)
    b_warnings = [line for line in b_log.splitlines() if "does not route to" in line]
    assert len(b_warnings) == 1, b_log
    assert replica in b_warnings[0] and a in b_warnings[0]
    a_warnings = [line for line in a_log.splitlines() if "does not route to" in line]
    assert len(a_warnings) == 1, a_log
    assert other in a_warnings[0] and b in a_warnings[0]


@pytest.mark.parametrize("peer, message", [("localhost:9000", "must start with http://"),
                                           ("http://127.0.0.1:0", "bad port"),
                                           ("http://127.0.0.1", "needs host:port")])
def test_a_bad_peer_is_a_cli_error(keel_bin, one_replica, peer, message):
    proc = subprocess.run([keel_bin, "router", "--port", str(free_port()), "--workers", one_replica, "--peer", peer],
                          capture_output=True, text=True, timeout=30)
    assert proc.returncode == 2
    assert message in proc.stderr and "--peer" in proc.stderr


class ScriptedPeer:
    """A fake peer instance (named a mock: it stands in for a misbehaving router, which a real one is not):
    accepts connections on a loopback port and answers each GET /v1/router/peer_feed with `script`, a list
    of byte strings sent 0.3 s apart, then keeps the connection open and silent (until close())."""

    def __init__(self, script):
        self.script = script
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.conns = []
        self.stopped = False
        threading.Thread(target=self.serve, daemon=True).start()

    def serve(self):
        while not self.stopped:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            self.conns.append(c)
            threading.Thread(target=self.answer, args=(c,), daemon=True).start()

    def answer(self, c):
        try:
            buf = b""
            while b"\r\n\r\n" not in buf:
                got = c.recv(4096)
                if not got:
                    return
                buf += got
            assert buf.startswith(b"GET /v1/router/peer_feed HTTP/1.1\r\n")
            for piece in self.script:
                c.sendall(piece)
                time.sleep(0.3)
        except OSError:
            pass

    def close(self):
        self.stopped = True
        self.sock.close()
        for c in self.conns:
            c.close()


def chunk(text: str) -> bytes:
    data = text.encode()
    return f"{len(data):x}\r\n".encode() + data + b"\r\n"


HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"


@pytest.mark.parametrize("case", ["malformed framing", "silent", "oversized event"])
def test_a_misbehaving_peer_feed_is_dropped_and_routing_goes_on(keel_bin, one_replica, case):
    """A peer whose feed goes live (reset) and then breaks its framing, falls silent past 3 s, or sends an
    event over 64 KiB: the link drops it (live 0, its figures gone), connects again, and the router keeps
    routing meanwhile."""
    replica = one_replica
    live = [HEAD, chunk("event: reset\ndata: {}\n\n"),
            chunk(f'event: replica\ndata: {{"url":"{replica}","in_flight":3,"work":240}}\n\n'),
            chunk("event: route\ndata: not json\n\n")]  # dropped one by one, the feed stays live
    tail = {"malformed framing": [b"zz\r\nnot a chunk\r\n"], "silent": [],
            "oversized event": [chunk("data: " + "x" * 70_000)]}[case]
    peer = ScriptedPeer(live + tail)
    base, proc = start_router(keel_bin, [replica], "--instance", "0/2", "--peer", peer.url)
    try:
        on = f'keel_router_peer_live{{peer="{peer.url}"}}'
        fig = f'keel_router_peer_in_flight{{peer="{peer.url}",replica="{replica}"}}'
        assert wait_for(lambda: gauge(base, on) == 1 and gauge(base, fig) == 3, 5)
        assert wait_for(lambda: gauge(base, "keel_router_peer_events_dropped_total") >= 1, 5)
        # The fake peer never closes a connection: live 0 can only be the link dropping the feed, whose
        # figures go with it; then it connects again (and the script replays).
        assert wait_for(lambda: gauge(base, on) == 0 and
                        gauge(base, f'keel_router_replica_peer_in_flight{{replica="{replica}"}}') == 0, 6)
        assert wait_for(lambda: len(peer.conns) >= 2, 3)
        assert chat_status(base) == 200
        assert proc.poll() is None
    finally:
        peer.close()
        stop(proc)


def test_the_peer_feed_needs_the_admin_key_and_peers_send_it(keel_bin, one_replica):
    """The peer feed shows every replica's load and each decision's group: with --admin-key set a
    subscriber needs the key (401 without it or with another), and two instances sharing the key sync."""
    replica = one_replica
    pa, pb = free_port(), free_port()
    a, b = f"http://127.0.0.1:{pa}", f"http://127.0.0.1:{pb}"
    a_base, a_proc = start_router(keel_bin, [replica], "--instance", "0/2", "--peer", b, port=pa)
    b_base, b_proc = start_router(keel_bin, [replica], "--instance", "1/2", "--peer", a, port=pb)
    try:
        assert http("GET", a_base + "/v1/router/peer_feed")[0] == 401
        assert http("GET", a_base + "/v1/router/peer_feed", headers={"Authorization": "Bearer other"})[0] == 401
        deadline = time.time() + 20
        while gauge(a_base, "keel_router_peer_synced") != 1 or gauge(b_base, "keel_router_peer_synced") != 1:
            assert time.time() < deadline, "the instances did not sync with the shared key"
            time.sleep(0.05)
        assert gauge(a_base, "keel_router_peer_feed_subscribers") == 1
    finally:
        stop(a_proc)
        stop(b_proc)
