"""`keel bench serve` end to end against a real `keel serve` on SmolLM2: its counts agree with the
server's own /metrics, both endpoints and both arrival modes work, 429s are reported as errors, and bad
flags or an unreachable server give a message and a non-zero exit."""
import json
import subprocess

import pytest

from keel_serve_process import KeelServe, free_port


@pytest.fixture(scope="module")
def server(keel_bin, model_path):
    s = KeelServe(keel_bin, model_path, "--kv-tokens", "8192")
    yield s
    assert s.stop() == 0


def _bench(keel_bin, *args, check=True):
    p = subprocess.run([keel_bin, "bench", "serve", "--quiet", *args], capture_output=True, text=True, timeout=600)
    if check:
        assert p.returncode == 0, p.stderr + p.stdout
    return p


def _counter(m, name):
    return m.get(name, 0.0)


@pytest.mark.parametrize("endpoint", ["chat", "completions"])
def test_counts_match_server_metrics(keel_bin, server, tmp_path, endpoint):
    before = server.metrics()
    out = tmp_path / "report.json"
    _bench(keel_bin, "--url", server.base, "--endpoint", endpoint, "--concurrency", "4", "--num-requests", "12",
           "--input-words-min", "4", "--input-words-max", "12", "--output-tokens-min", "2", "--output-tokens-max", "6",
           "--seed", "3", "--output", str(out))
    after = server.metrics()
    rep = json.loads(out.read_text())
    s = rep["summary"]
    assert rep["config"]["model"] == "smollm2"  # taken from GET /v1/models
    assert s["requests"] == 12 and s["ok"] == 12 and s["errors"] == 0
    assert s["requests_with_usage"] == 12
    path = "/v1/chat/completions" if endpoint == "chat" else "/v1/completions"
    served = _counter(after, f'keel_http_requests_total{{path="{path}",code="200"}}') - _counter(
        before, f'keel_http_requests_total{{path="{path}",code="200"}}')
    assert served == 12
    assert s["output_tokens"] == after["keel_generation_tokens_total"] - before["keel_generation_tokens_total"]
    assert s["prompt_tokens"] == after["keel_prompt_tokens_total"] - before["keel_prompt_tokens_total"]
    assert 12 <= s["output_tokens"] <= 12 * 6
    assert rep["ttft_ms"]["n"] == 12
    assert 0 < rep["ttft_ms"]["p50"] <= rep["e2e_ms"]["p50"]
    assert rep["ttft_ms"]["p99"] <= rep["e2e_ms"]["max"]
    assert s["output_token_throughput_tps"] > 0


def test_shared_prefix_poisson_bursts_hit_the_cache(keel_bin, server, tmp_path):
    server.flush_cache()
    before = server.metrics()
    out = tmp_path / "report.json"
    _bench(keel_bin, "--url", server.base, "--model", "smollm2", "--workload", "shared-prefix", "--tenants", "2",
           "--prompts-per-tenant", "1", "--prefix-words", "60", "--question-words", "4", "--rate", "20", "--burst", "3",
           "--num-requests", "12", "--output-tokens-min", "2", "--output-tokens-max", "2", "--output", str(out))
    rep = json.loads(out.read_text())
    assert rep["summary"]["ok"] == 12
    assert rep["config"]["rate_rps"] == 20 and rep["config"]["burst"] == 3
    after = server.metrics()
    # The client read usage.prompt_tokens_details.cached_tokens from every stream: the totals agree with
    # the server's counters, and two system prompts shared by 12 requests were reused.
    cached = after["keel_cached_prompt_tokens_total"] - before["keel_cached_prompt_tokens_total"]
    assert rep["summary"]["cached_prompt_tokens"] == cached > 0
    assert rep["summary"]["prompt_tokens"] == after["keel_prompt_tokens_total"] - before["keel_prompt_tokens_total"]


def test_queue_full_is_reported_as_429_errors(keel_bin, model_path, tmp_path):
    s = KeelServe(keel_bin, model_path, "--kv-tokens", "2048", "--max-running", "1", "--max-queue", "1")
    try:
        out = tmp_path / "report.json"
        p = _bench(keel_bin, "--url", s.base, "--concurrency", "8", "--num-requests", "8", "--output-tokens-min",
                   "24", "--output-tokens-max", "24", "--extra-body", '{"ignore_eos": true}', "--output", str(out))
        rep = json.loads(out.read_text())
        n_429 = sum(e["count"] for e in rep["errors"] if e["message"].startswith("HTTP 429"))
        assert n_429 >= 1 and rep["summary"]["errors"] == n_429
        assert rep["summary"]["ok"] == 8 - n_429
        assert "HTTP 429" in p.stdout
    finally:
        assert s.stop() == 0


@pytest.mark.parametrize("flags,needle", [
    (["--concurrency", "2", "--rate", "3"], "exactly one"),
    ([], "exactly one"),
    (["--concurrency", "0"], "exactly one"),
    (["--rate", "-2"], "--rate"),
    (["--concurrency", "2", "--workload", "zipf"], "zipf"),
    (["--concurrency", "2", "--endpoint", "embeddings"], "embeddings"),
    (["--concurrency", "2", "--url", "https://x"], "http://"),
    (["--concurrency", "2", "--extra-body", "[1]"], "JSON object"),
    (["--concurrency", "2", "--output-tokens-min", "9", "--output-tokens-max", "3"], "output-tokens"),
    (["--concurrency", "x"], "concurrency"),
])
def test_bad_flags_exit_2_with_a_message(keel_bin, flags, needle):
    p = _bench(keel_bin, *flags, check=False)
    assert p.returncode == 2
    assert needle in p.stderr


def test_unreachable_server_exits_1(keel_bin):
    p = _bench(keel_bin, "--url", f"http://127.0.0.1:{free_port()}", "--concurrency", "1", check=False)
    assert p.returncode == 1
    assert "refused" in p.stderr.lower()
    p = _bench(keel_bin, "--url", f"http://127.0.0.1:{free_port()}", "--model", "m", "--concurrency", "1", "-n", "2",
               check=False)
    assert p.returncode == 1
    assert "connect" in p.stdout
