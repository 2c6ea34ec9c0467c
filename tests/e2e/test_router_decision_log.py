"""`keel router --decision-log PATH`: one JSON line per routing decision, written as the policy decided,
in front of a real `keel serve` replica (SmolLM2, CPU). Each request's line names the candidates with
their figures, the pick and the decision kind, in time order; the kinds add up to the router's own
decision counters; a path that cannot be opened is a start-up error."""
import json
import subprocess
import urllib.request

from test_router import free_port, one_replica, start_router, stop


def decisions_total(base: str) -> dict:
    out = {}
    with urllib.request.urlopen(base + "/metrics", timeout=10) as r:
        for line in r.read().decode().splitlines():
            if line.startswith("keel_router_decisions_total{"):
                out[line.split('decision="')[1].split('"')[0]] = int(float(line.split()[-1]))
    return out


def test_every_decision_is_one_line_with_the_candidates_and_the_pick(keel_bin, one_replica, tmp_path):
    log = tmp_path / "decisions.jsonl"
    base, proc = start_router(keel_bin, [one_replica], "--decision-log", str(log))
    try:
        for i in range(3):
            body = json.dumps({"model": "smollm2", "max_tokens": 1, "temperature": 0,
                               "messages": [{"role": "user", "content": f"Say {i}."}]}).encode()
            req = urllib.request.Request(base + "/v1/chat/completions", data=body, method="POST",
                                         headers={"Content-Type": "application/json"})
            with urllib.request.urlopen(req, timeout=120) as r:
                assert r.status == 200
        counters = decisions_total(base)
    finally:
        stop(proc)
    lines = [json.loads(x) for x in log.read_text().splitlines()]
    assert len(lines) == 3
    times = [x["t_us"] for x in lines]
    assert times == sorted(times) and times[0] > 0
    for x in lines:
        assert x["pick"] == 0
        assert [c["url"] for c in x["c"]] == [one_replica]
        assert x["c"][0]["load"] >= 0 and x["c"][0]["own"] >= 0 and x["c"][0]["peers"] == 0
        assert x["synced"] is False
    kinds = {}
    for x in lines:
        kinds[x["decision"]] = kinds.get(x["decision"], 0) + 1
    assert kinds == {k: v for k, v in counters.items() if v > 0}


def test_an_unwritable_decision_log_is_a_cli_error(keel_bin, one_replica, tmp_path):
    proc = subprocess.run([keel_bin, "router", "--port", str(free_port()), "--workers", one_replica,
                           "--decision-log", str(tmp_path / "no" / "such" / "dir.jsonl")],
                          capture_output=True, text=True, timeout=30)
    assert proc.returncode == 2
    assert "--decision-log" in proc.stderr
