#!/usr/bin/env python3
"""Shared-prefix workload over 4 `keel serve` replicas (SmolLM2, CPU): prefix-cache hit rate, latency
and throughput per routing policy, in one run. The hit rate is the replicas' own accounting
(keel_cached_prompt_tokens_total / keel_prompt_tokens_total), not the router's estimate. Caches are
flushed (POST /flush_cache) before each policy. Requests are non-streamed with max_tokens=1, so the
client-side latency is time to first token plus one HTTP round trip.

Policies: cache_aware with the exact index (--model; its default since Session 7 is the equal-match set
with cost spills, --spill-factor 3), the same with the count bound alone (--spill-factor 0) and with
group affinity (--spill-factor 0 --group-affinity 3), cache_aware with character keys, round_robin, random, plus any --variant. With --sglang-router PYTHON (a python
with sglang-router==0.3.2), sglang-router's cache_aware policy
runs over the same replicas (its defaults). It publishes no per-replica in-flight count, so its burst
samples come from the replicas' own queued + running gauges; --replica-view samples every policy that
way, for a like-for-like burst comparison.

Then a burst on one hot prefix (--burst requests, --burst-concurrency at once): the router's in-flight
count per replica is sampled every 20 ms; reported are the worst busiest/least-busy ratio (samples
where every replica has work), the worst difference, and the busiest replica's worst share; and the
same over "full" samples only (all --burst-concurrency requests inside the router while more still
wait to be sent: states the routing decisions produced, not a completion awaiting its replacement or
the drain at the burst's end).

Open-loop mode (--arrivals poisson): requests are sent at exponential inter-arrival times (--rate
req/s, or --load x the fleet's closed-loop capacity with every prefix group on one replica of its own,
measured at start), each on its own client thread, and latency counts
from the scheduled send time, so a slow router or replica cannot slow the arrivals down.

Test bed with replicas on cores of their own (--replica-cpus 0-2,3-5,6-8,9-11 --threads 3
--router-cpus 12-13 --client-cpus 14-15): each replica, the router (keel or sglang-router) and this
script are pinned with sched_setaffinity. --model takes the GGUF or a Hugging Face folder;
--load-format dummy runs random weights from the folder's config.json (the prompt's tokens, the
prefix cache and the compute per token are real, the one generated token is not).

Usage: bench/bench_router_prefix.py [--build build] [--groups 8] [--per-group 6] [--concurrency 4]
         [--sglang-router PYTHON] [--replica-view] [--only NAME,NAME] [--repeat N]
         [--model PATH] [--load-format dummy] [--threads N] [--replica-cpus A-B,...] [--router-cpus A-B]
         [--client-cpus A-B] [--arrivals poisson --rate R | --load F] [--variant NAME=ARGS] [--out FILE]
         [--trace] [--zipf S] [--turns T] [--mid-burst N] [--kv-tokens N] [--routers N] [--decision-logs DIR]
         [--router-upstream-threads N]

High availability (--routers N): N instances of the router under test, as a deployment behind a load
balancer runs them, on the same replicas with the same flags (keel: each instance subscribes to every
replica's cache feed; sglang-router: N processes with the same worker list, each its own tree). The
client sends request i to instance i mod N (open loop, closed loop and the burst alike); keel instance i
gets --instance i/N (unless the row's flags name --instance) and --peer for every other instance (exact
peer sync, docs/router.md; not with --no-peers, or for a row whose flags hold --no-peers, which the script
takes out: Session 10's instances); --router-cpus
is split between the instances (12-13 -> 12 and 13). N = 1 is the single router of earlier sessions.

Skewed and realistic traffic: --zipf S gives group g a share ~ 1/(g+1)^S of the groups x per-group
requests (a hot app and a long tail), --turns T makes each group's requests conversations of T turns
(the prompt carries the earlier turns, so the cached prefix grows), --mid-burst N adds N requests of
the most popular group 5 ms apart in the middle of the Poisson schedule, and --kv-tokens below the
working set puts the replicas' caches under pressure (evictions). With --zipf, --load's calibration
(every group on one replica of its own) does not describe the fleet: give --rate.

--trace (open loop): each result line also carries "requests", one record per request (its group,
send time, TTFT, the replica that answered, cached prompt tokens, the requests it met queued on that
replica), and "trace", a summary (groups, requests and cold prefills per replica; warm requests that
met a cold prefill and their median TTFT; the slowest requests), for keel and sglang-router alike.
"""
import argparse
import concurrent.futures
import json
import os
import pathlib
import random
import signal
import socket
import statistics
import subprocess
import threading
import time
import urllib.request

ROOT = pathlib.Path(__file__).resolve().parents[1]
MODEL = pathlib.Path(os.environ.get("KEEL_CACHE_DIR", pathlib.Path.home() / ".cache/keel")) / \
    "models/SmolLM2-135M-Instruct.Q4_1.gguf"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_http(url, timeout_s=120):
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=2):
                return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"{url} did not answer")


def post(url, body):
    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=300) as r:
        return json.loads(r.read())


def metric(url, name):
    with urllib.request.urlopen(url + "/metrics", timeout=10) as r:
        for line in r.read().decode().splitlines():
            if line.startswith(name + " "):
                return float(line.split()[1])
    return 0.0


def pull_outcomes(url):
    """keel_kv_pulls_total by outcome on one replica (empty for a replica that has none)."""
    out = {}
    with urllib.request.urlopen(url + "/metrics", timeout=10) as r:
        for line in r.read().decode().splitlines():
            if line.startswith('keel_kv_pulls_total{outcome="'):
                out[line.split('"')[1]] = float(line.split()[1])
    return out


def cpu_set(spec):
    """'0-2,5' -> {0, 1, 2, 5}."""
    out = set()
    for part in filter(None, spec.split(",")):
        lo, _, hi = part.partition("-")
        out.update(range(int(lo), int(hi or lo) + 1))
    return out


def split_cpus(cpus, n):
    """`cpus` (a set) in n contiguous parts, as even as can be, for n router instances: {12, 13}, 2 ->
    [{12}, {13}]; an empty set (no pinning) -> n empty sets; fewer CPUs than instances -> they share."""
    if not cpus:
        return [set()] * n
    ordered = sorted(cpus)
    if len(ordered) < n:
        return [{ordered[k % len(ordered)]} for k in range(n)]
    size, extra = divmod(len(ordered), n)
    out, at = [], 0
    for k in range(n):
        take = size + (k < extra)
        out.append(set(ordered[at:at + take]))
        at += take
    return out


def pin(cpus):
    """preexec_fn pinning a child process (and every thread it starts) to `cpus`; None when not pinning."""
    return (lambda: os.sched_setaffinity(0, cpus)) if cpus else None


def arrival_times(n, rate, seed):
    """Poisson arrivals: n send times (seconds from the start) at `rate` requests per second."""
    rnd, t, out = random.Random(seed), 0.0, []
    for _ in range(n):
        t += rnd.expovariate(rate)
        out.append(t)
    return out


def send_open_loop(urls, reqs, times, answers=None):
    """Each request on its own thread at its scheduled time, request i to urls[i % len(urls)] (several
    router instances behind a round-robin balancer); latency from the scheduled time (a late answer never
    delays the next arrival). Returns (latencies in s, errors, wall from start to last answer); with
    `answers` (a list of len(reqs)), answers[i] = (latency in s, response body) of request i."""
    lat, errors, threads = [None] * len(reqs), [], []

    def one(i, due):
        try:
            body = post(urls[i % len(urls)], reqs[i])
            lat[i] = time.perf_counter() - due
            if answers is not None:
                answers[i] = (lat[i], body)
        except Exception as e:  # noqa: BLE001 - counted and reported, the run goes on
            errors.append(repr(e))
    t0 = time.perf_counter()
    for i, t in enumerate(times):
        due = t0 + t
        delay = due - time.perf_counter()
        if delay > 0:
            time.sleep(delay)
        th = threading.Thread(target=one, args=(i, due), daemon=True)
        th.start()
        threads.append(th)
    for th in threads:
        th.join()
    return sorted(x for x in lat if x is not None), errors, time.perf_counter() - t0


_M64 = (1 << 64) - 1


def _unshift(y, s):
    x = y
    for _ in range(64 // s + 1):
        x = y ^ (x >> s)
    return x & _M64


def answer_source(response_id):
    """Which keel serve process answered: its ids are mix64(counter ^ salt) (server/api.cc, SplitMix64's
    finaliser, a bijection) with a per-process random salt, so inverting mix64 gives counter ^ salt, whose
    high 32 bits are the salt's (the counter stays far below 2^32). Works behind any router."""
    x = _unshift(int(response_id.rsplit("-", 1)[1], 16), 31)
    x = (x * pow(0x94d049bb133111eb, -1, 1 << 64)) & _M64
    x = _unshift(x, 27)
    x = (x * pow(0xbf58476d1ce4e5b9, -1, 1 << 64)) & _M64
    x = _unshift(x, 30)
    return ((x - 0x9e3779b97f4a7c15) & _M64) >> 32


def replica_sources(replicas):
    """answer_source() of each replica, from one tiny request sent straight to it."""
    body = {"model": "smollm2", "max_tokens": 1, "temperature": 0, "messages": [{"role": "user", "content": "Hi"}]}
    return {answer_source(post(r + "/v1/chat/completions", body)["id"]): k for k, r in enumerate(replicas)}


def pct(xs, q):
    """The q-th percentile of xs, nearest rank (None when empty)."""
    return sorted(xs)[min(len(xs) - 1, len(xs) * q // 100)] if xs else None


def trace_requests(reqs, times, answers, sources, group_of):
    """One record per request of the open-loop phase: its group, send time, latency, the replica that
    answered, its cached prompt tokens, and the queue it met: requests on that replica sent before it and
    not yet answered (`depth`), and how many of those were cold (`cold_ahead`: cached below half the prompt)."""
    recs = []
    for i, (body, t) in enumerate(zip(reqs, times)):
        if answers[i] is None:
            continue
        lat, resp = answers[i]
        usage = resp.get("usage", {})
        cached = (usage.get("prompt_tokens_details") or {}).get("cached_tokens", 0)
        recs.append({"i": i, "group": group_of(body), "t_ms": round(t * 1e3, 1), "ttft_ms": round(lat * 1e3, 1),
                     "replica": sources.get(answer_source(resp["id"]), -1), "prompt": usage.get("prompt_tokens", 0),
                     "cached": cached})
    for r in recs:
        ahead = [q for q in recs if q["replica"] == r["replica"] and q["t_ms"] < r["t_ms"] < q["t_ms"] + q["ttft_ms"]]
        r["depth"] = len(ahead)
        r["cold_ahead"] = sum(2 * q["cached"] < q["prompt"] for q in ahead)
        r["cold"] = 2 * r["cached"] < r["prompt"]
    return recs


def trace_summary(recs):
    """Where the time went: groups per replica (by their first request there), requests per replica,
    cold requests, and the latency of warm requests by what they met on arrival."""
    n_rep = 1 + max((r["replica"] for r in recs), default=0)
    first = {}
    for r in sorted(recs, key=lambda q: q["t_ms"]):
        first.setdefault((r["group"], r["replica"]), r)
    warm = [r for r in recs if not r["cold"]]
    return {
        "groups_per_replica": [sum(1 for (g, k) in first if k == rep) for rep in range(n_rep)],
        "requests_per_replica": [sum(1 for r in recs if r["replica"] == rep) for rep in range(n_rep)],
        "cold_per_replica": [sum(1 for r in recs if r["replica"] == rep and r["cold"]) for rep in range(n_rep)],
        "cold_ttft_p50_ms": pct([r["ttft_ms"] for r in recs if r["cold"]], 50),
        "warm_ttft_p50_ms": pct([r["ttft_ms"] for r in warm], 50),
        "warm_behind_cold": sum(1 for r in warm if r["cold_ahead"]),
        "warm_behind_cold_p50_ms": pct([r["ttft_ms"] for r in warm if r["cold_ahead"]], 50),
        "warm_clear_p50_ms": pct([r["ttft_ms"] for r in warm if not r["cold_ahead"]], 50),
        "depth_mean": round(statistics.fmean(r["depth"] for r in recs), 2) if recs else None,
        "slowest": [{k: r[k] for k in ("i", "group", "replica", "t_ms", "ttft_ms", "cold", "depth", "cold_ahead")}
                    for r in sorted(recs, key=lambda q: -q["ttft_ms"])[:6]],
    }


def calibrate(replicas, reqs, groups):
    """Service times on one idle replica, one request at a time: a cold prompt (new system prompt) and
    a warm one (its prefix cached). Then the fleet's capacity under ideal affinity: the workload sent
    straight to the replicas, every group to one replica of its own (8 cold prefills, the floor), closed
    loop with 2 clients per replica (the replicas batch them). (A capacity derived from the single-request
    times alone overestimated it about 1.7x in the session-5 run: it missed the cold duplicates a group's
    requests cause while its first prefill runs, and an offered load of 0.7 x that was an overload.)"""
    def timed(url, body):
        t0 = time.perf_counter()
        post(url + "/v1/chat/completions", body)
        return time.perf_counter() - t0
    cold, warm = [], []
    for k in range(4):
        system = f"Calibration prompt {k}. " + " ".join(f"Rule {j}: calibrate item {k}-{j} carefully." for j in range(14))
        body = lambda q: {"model": "smollm2", "max_tokens": 1, "temperature": 0,  # noqa: E731
                          "messages": [{"role": "system", "content": system}, {"role": "user", "content": f"Q{q}?"}]}
        cold.append(timed(replicas[0], body(0)))
        warm.extend(timed(replicas[0], body(q)) for q in (1, 2))
    home = {}
    for body in reqs:
        home.setdefault(body["messages"][0]["content"], replicas[len(home) % len(replicas)])
    t0 = time.perf_counter()
    with concurrent.futures.ThreadPoolExecutor(2 * len(replicas)) as pool:
        list(pool.map(lambda b: timed(home[b["messages"][0]["content"]], b), reqs))
    capacity = len(reqs) / (time.perf_counter() - t0)
    for r in replicas:
        post(r + "/flush_cache", {})
    return statistics.median(cold), statistics.median(warm), capacity


def zipf_counts(groups, total, s):
    """Requests per group, group g's share proportional to 1/(g+1)^s (s = 0: equal), summing to `total`,
    at least one each (largest remainders)."""
    w = [1.0 / (g + 1) ** s for g in range(groups)]
    exact = [total * x / sum(w) for x in w]
    n = [max(1, int(x)) for x in exact]
    for g in sorted(range(groups), key=lambda g: int(exact[g]) - exact[g]):
        if sum(n) >= total:
            break
        n[g] += 1
    return n


def workload(groups, per_group, seed=0, zipf=0.0, turns=1):
    """groups x per_group chat requests, shuffled. zipf > 0: group popularity ~ 1/rank^zipf (same total).
    turns > 1: each group's requests are conversations of `turns` turns; turn k carries the k-1 earlier
    user questions and assistant answers, so the prompt's cached prefix grows turn by turn, and a
    conversation's turns keep their order in the shuffled schedule."""
    rnd = random.Random(seed)
    topics = ["astronomy", "cooking", "sailing", "chess", "gardening", "jazz", "geology", "poetry", "cycling",
              "origami", "beekeeping", "pottery"]
    counts = zipf_counts(groups, groups * per_group, zipf) if zipf else [per_group] * groups
    reqs, conv = [], []
    for g in range(groups):
        system = f"You are expert {g} on {topics[g % len(topics)]}. " + " ".join(
            f"Guideline {k}: keep answers about {topics[g % len(topics)]} short and precise." for k in range(9))
        history = []
        for q in range(counts[g]):
            if q % turns == 0:
                history = [{"role": "system", "content": system}]
            user = {"role": "user", "content": f"Question {q}: what is item {q * 7 + g}?"}
            reqs.append({"model": "smollm2", "max_tokens": 1, "temperature": 0, "messages": history + [user]})
            conv.append((g, q // turns))
            history = history + [user, {"role": "assistant", "content": f"Item {q * 7 + g} is a kind of "
                                        f"{topics[g % len(topics)]} thing, number {q}."}]
    order = list(range(len(reqs)))
    rnd.shuffle(order)
    # Turns in order: each conversation's slots in the shuffled schedule get its turns first to last.
    slots = {}
    for pos, i in enumerate(order):
        slots.setdefault(conv[i], []).append(pos)
    out = [None] * len(reqs)
    members = {}
    for i in range(len(reqs)):
        members.setdefault(conv[i], []).append(i)
    for c, positions in slots.items():
        for pos, i in zip(sorted(positions), members[c]):
            out[pos] = reqs[i]
    return out


def add_mid_burst(reqs, times, n, gap_s=0.005):
    """n more requests of the most popular group, sent gap_s apart from the middle of the schedule: a
    burst of one prefix amid the Poisson traffic of all groups."""
    if n <= 0:
        return reqs, times
    by_group = {}
    for r in reqs:
        by_group.setdefault(r["messages"][0]["content"], []).append(r)
    hot = max(by_group.values(), key=len)[0]
    t0 = times[len(times) // 2]
    extra = [({**hot, "messages": [hot["messages"][0], {"role": "user", "content": f"Burst question {i}: now?"}]},
              t0 + i * gap_s) for i in range(n)]
    merged = sorted(list(zip(reqs, times)) + extra, key=lambda x: x[1])
    return [r for r, _ in merged], [t for _, t in merged]


def in_flight(bases):
    """Router-side in-flight count per replica, from each router instance's /metrics, summed over them."""
    out = {}
    for base in bases:
        with urllib.request.urlopen(base + "/metrics", timeout=10) as r:
            for line in r.read().decode().splitlines():
                if line.startswith("keel_router_replica_in_flight{"):
                    key = line.split('"')[1]
                    out[key] = out.get(key, 0.0) + float(line.split()[-1])
    return out


def decisions(bases):
    """The router instances' decision counters by kind (cache_hit, imbalance, free_cache, ...), summed."""
    out = {}
    for base in bases:
        with urllib.request.urlopen(base + "/metrics", timeout=10) as r:
            for line in r.read().decode().splitlines():
                if line.startswith("keel_router_decisions_total{"):
                    kind = line.split('decision="')[1].split('"')[0]
                    out[kind] = out.get(kind, 0) + int(float(line.split()[-1]))
    return out


def replica_in_flight(replicas):
    """Each replica's own queued + running count."""
    return {r: metric(r, "keel_num_requests_waiting") + metric(r, "keel_num_requests_running") for r in replicas}


def hot_burst(bases, n_requests, concurrency, sample):
    """One hot prefix, a burst of concurrent requests (request i to bases[i % len(bases)]): the in-flight
    spread across replicas, sampled."""
    system = "You are the hot assistant. " + " ".join(f"Hot rule {k}: always answer in one word." for k in range(12))
    reqs = [{"model": "smollm2", "max_tokens": 1, "temperature": 0,
             "messages": [{"role": "system", "content": system}, {"role": "user", "content": f"Hot {i}?"}]}
            for i in range(n_requests)]
    samples, full, full_states = [], [], []
    t_start = time.perf_counter()
    with concurrent.futures.ThreadPoolExecutor(concurrency) as pool:
        futs = [pool.submit(post, bases[i % len(bases)] + "/v1/chat/completions", b) for i, b in enumerate(reqs)]
        while not all(f.done() for f in futs):
            raw = sample()
            counts = sorted(raw.values())
            if sum(counts) >= len(counts):  # a burst: at least one request per replica in flight
                samples.append(counts)
            # Full: every client's request is inside the router and more are still waiting to go, so
            # the state is one the router's decisions produced (not a completion not yet replaced,
            # not the drain at the end of the burst, which no routing decision can touch).
            if sum(counts) == concurrency and any(not f.running() and not f.done() for f in futs):
                full.append(counts)
                # Per replica, in the replicas' order, with the time into the burst (ms): which one was
                # busiest or idle, for the traces.
                full_states.append([round((time.perf_counter() - t_start) * 1e3)] + [int(v) for v in raw.values()])
            time.sleep(0.02)
        for f in futs:
            f.result()
    worst_ratio = max((c[-1] / c[0] for c in samples if c[0] > 0), default=None)
    # Integer counts: with the least busy at 1, anything but all-1 is >= 2x, and going from all-1 to
    # all-2 must pass through [2,1,1,1]; so the bound is also reported where it can hold (least >= 2)
    # and as the share of all-busy samples within 1.5x.
    within = [c for c in samples if c[0] > 0 and c[-1] <= 1.5 * c[0]]
    worst_spread = max((c[-1] - c[0] for c in samples), default=None)
    return {"burst_samples": len(samples), "burst_max_over_min": worst_ratio, "burst_max_minus_min": worst_spread,
            "burst_busiest_share": max((c[-1] / sum(c) for c in samples), default=None),
            "burst_share_within_1_5": round(len(within) / len(samples), 3) if samples else None,
            "burst_lo2_max_over_min": max((c[-1] / c[0] for c in samples if c[0] >= 2), default=None),
            "full_samples": len(full),
            "full_max_over_min": max((c[-1] / c[0] if c[0] else float("inf") for c in full), default=None),
            "full_max_minus_min": max((c[-1] - c[0] for c in full), default=None),
            "full_states": full_states}


RUNS = [0]  # run_policy calls so far: numbers the --decision-logs files


def run_policy(keel, replicas, args, extra, reqs, times, sources=None):
    RUNS[0] += 1
    for r in replicas:
        post(r + "/flush_cache", {})
    before = [(metric(r, "keel_prompt_tokens_total"), metric(r, "keel_cached_prompt_tokens_total"),
               metric(r, "keel_kv_pulled_tokens_total")) for r in replicas]
    pulls_before = [pull_outcomes(r) for r in replicas]
    sglang = extra == ["sglang"]
    binary = keel
    if extra and extra[0].startswith("--binary="):  # a router binary other than the replicas' (A/B runs)
        binary, extra = extra[0].split("=", 1)[1], extra[1:]
    peers = not args.no_peers and "--no-peers" not in extra  # a row's --no-peers is the script's, not keel's
    extra = [e for e in extra if e != "--no-peers"]
    ports = [free_port() for _ in range(args.routers)]

    def router_cmd(port, i):
        if sglang:
            return [args.sglang_router, "-m", "sglang_router.launch_router", "--host", "127.0.0.1", "--port",
                    str(port), "--worker-urls", *replicas, "--policy", "cache_aware", "--log-level", "error",
                    "--prometheus-port", str(free_port())]
        cmd = [binary, "router", "--port", str(port), "--workers", *replicas, "--no-access-log",
               "--health-interval-ms", "200", *extra]
        if args.routers > 1 and "--instance" not in extra:  # keel: instance i of N (docs/router.md)
            cmd += ["--instance", f"{i}/{args.routers}"]
        if args.routers > 1 and peers and "--peer" not in extra:  # keel: exact sync with every other instance
            cmd += [a for k, p in enumerate(ports) if k != i for a in ("--peer", f"http://127.0.0.1:{p}")]
        if args.decision_logs:  # keel: every decision of instance i as JSON lines (docs/router.md)
            cmd += ["--decision-log", str(pathlib.Path(args.decision_logs) / f"run{RUNS[0]}_instance{i}.jsonl")]
        if args.router_cpus:  # one io thread; --router-upstream-threads N > 0: N upstream threads too (Sessions <= 11: 1)
            cmd += ["--http-threads", "1"]
            if "--upstream-threads" not in extra:
                cmd += ["--upstream-threads", str(args.router_upstream_threads)]
        return cmd
    # --routers N: N independent instances, same flags and replicas (keel: each subscribes to every
    # replica's cache feed itself, and to every other instance's peer feed), the router CPUs split between
    # them; the client spreads over them.
    procs = [subprocess.Popen(router_cmd(port, i), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              preexec_fn=pin(cpus))
             for i, (port, cpus) in enumerate(zip(ports, split_cpus(cpu_set(args.router_cpus), args.routers)))]
    try:
        bases = [f"http://127.0.0.1:{port}" for port in ports]
        for base in bases:
            wait_http(base + "/health")
        replica_view = sglang or args.replica_view
        sample = (lambda: replica_in_flight(replicas)) if replica_view else (lambda: in_flight(bases))
        time.sleep(0.5)  # first load poll and cache-feed snapshots

        def one(i):
            t0 = time.perf_counter()
            post(bases[i % len(bases)] + "/v1/chat/completions", reqs[i])
            return time.perf_counter() - t0

        errors, answers = [], [None] * len(reqs)
        if times:
            lat, errors, wall = send_open_loop([b + "/v1/chat/completions" for b in bases], reqs, times, answers)
        else:
            t0 = time.perf_counter()
            with concurrent.futures.ThreadPoolExecutor(args.concurrency) as pool:
                lat = sorted(pool.map(one, range(len(reqs))))
            wall = time.perf_counter() - t0
        after = [(metric(r, "keel_prompt_tokens_total"), metric(r, "keel_cached_prompt_tokens_total"),
                  metric(r, "keel_kv_pulled_tokens_total")) for r in replicas]
        pulls = {}
        for r, was in zip(replicas, pulls_before):
            for k, v in pull_outcomes(r).items():
                if v - was.get(k, 0):
                    pulls[k] = pulls.get(k, 0) + v - was.get(k, 0)
        picks = {} if sglang else decisions(bases)
        per_instance = [] if sglang else [decisions([b]) for b in bases]
        t0 = time.perf_counter()
        burst_t0_us = time.monotonic_ns() // 1000  # the decision logs' clock (CLOCK_MONOTONIC)
        burst = hot_burst(bases, args.burst, args.burst_concurrency, sample)
        burst["burst_window_us"] = [burst_t0_us, time.monotonic_ns() // 1000]
        if args.decision_logs and not sglang:
            burst["decision_logs"] = [f"run{RUNS[0]}_instance{i}.jsonl" for i in range(args.routers)]
        burst["burst_req_per_s"] = round(args.burst / (time.perf_counter() - t0), 2)
        if not sglang:  # each instance's decisions during the closed-loop burst, by kind
            burst["burst_decisions"] = [{k: v - was.get(k, 0) for k, v in decisions([b]).items() if v - was.get(k, 0)}
                                        for b, was in zip(bases, per_instance)]
        if not sglang and args.routers > 1 and peers:  # every peer feed still live at the end (exact view)
            burst["peer_synced"] = [metric(b, "keel_router_peer_synced") for b in bases]
    finally:
        for proc in procs:
            proc.send_signal(signal.SIGTERM)
        for proc in procs:
            proc.wait(timeout=30)
    prompt = sum(a[0] - b[0] for a, b in zip(after, before))
    cached = sum(a[1] - b[1] for a, b in zip(after, before))
    pulled = sum(a[2] - b[2] for a, b in zip(after, before))
    trace = {}
    if sources and times:
        groups = {}
        recs = trace_requests(reqs, times, answers, sources,
                              lambda b: groups.setdefault(b["messages"][0]["content"], len(groups)))
        trace = {"trace": trace_summary(recs), "requests": recs}
    # KV pulls (docs/router.md): pulled tokens are cached when their request arrives, so the replicas
    # count them as hits; hit_rate_without_pulled leaves them out.
    return {"hit_rate": round(cached / prompt, 3), "pulled_tokens": int(pulled),
            "hit_rate_without_pulled": round((cached - pulled) / prompt, 3), "pulls": pulls, "ttft_p50_ms": round(pct(lat, 50) * 1e3, 1),
            "ttft_p99_ms": round(pct(lat, 99) * 1e3, 1),
            "ttft_mean_ms": round(statistics.fmean(lat) * 1e3, 1), "errors": len(errors),
            "req_per_s": round(len(lat) / wall, 2), "burst_view": "replicas" if replica_view else "router",
            "routers": args.routers, "peers": bool(not sglang and args.routers > 1 and peers),
            "decisions": picks, **burst, **trace}


def summarize(rows, emit):
    """Mean of each figure per policy over the repeats, one line each."""
    keys = ["hit_rate", "hit_rate_without_pulled", "pulled_tokens", "ttft_p50_ms", "ttft_p99_ms", "req_per_s",
            "burst_req_per_s", "full_max_over_min",
            "burst_lo2_max_over_min", "burst_share_within_1_5"]
    for name in dict.fromkeys(r["policy"] for r in rows):
        mine = [r for r in rows if r["policy"] == name]
        out = {"summary": name, "repeats": len(mine)}
        for k in keys:
            vals = [r[k] for r in mine if r.get(k) is not None]
            if vals:
                out[k] = round(statistics.fmean(vals), 3) if all(v != float("inf") for v in vals) else float("inf")
                out[k + "_range"] = [min(vals), max(vals)]
        emit(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=str(ROOT / "build"))
    ap.add_argument("--keel", default="", help="the keel binary (default: BUILD/src/cli/keel)")
    ap.add_argument("--model", default=str(MODEL), help="GGUF file or Hugging Face folder (replicas and --model router)")
    ap.add_argument("--load-format", default="auto", choices=["auto", "dummy"])
    ap.add_argument("--threads", type=int, default=1, help="compute threads per replica")
    ap.add_argument("--kv-tokens", type=int, default=4096)
    ap.add_argument("--replica-cpus", default="", help="one CPU range per replica, e.g. 0-2,3-5,6-8,9-11")
    ap.add_argument("--router-cpus", default="", help="CPUs for the router under test (keel: 1 http thread, --router-upstream-threads)")
    ap.add_argument("--router-upstream-threads", type=int, default=0,
                    help="with --router-cpus: keel's --upstream-threads (0, keel's default: the upstream sockets and the "
                         "peer links on the one http thread; Sessions 4-11 ran 1)")
    ap.add_argument("--routers", type=int, default=1,
                    help="instances of the router under test (high availability): --router-cpus split between "
                         "them, requests to them round-robin by index")
    ap.add_argument("--decision-logs", default="",
                    help="a folder: each keel instance writes its decisions there (--decision-log), run<k>_instance<i>"
                         ".jsonl; the rows name their files and the closed-loop burst's monotonic window")
    ap.add_argument("--no-peers", action="store_true",
                    help="--routers N: no --peer between the keel instances (Session 10's --instance estimate alone)")
    ap.add_argument("--client-cpus", default="", help="CPUs for this script (the load generator)")
    ap.add_argument("--groups", type=int, default=8)
    ap.add_argument("--per-group", type=int, default=6)
    ap.add_argument("--zipf", type=float, default=0.0,
                    help="group popularity ~ 1/rank^ZIPF over --groups (same total, groups x per-group); 0 = equal")
    ap.add_argument("--turns", type=int, default=1, help="multi-turn: conversations of this many turns per group")
    ap.add_argument("--mid-burst", type=int, default=0,
                    help="poisson: this many more requests of the most popular group, 5 ms apart, mid-schedule")
    ap.add_argument("--concurrency", type=int, default=4, help="closed-loop clients (--arrivals closed)")
    ap.add_argument("--arrivals", default="closed", choices=["closed", "poisson"])
    ap.add_argument("--rate", type=float, default=0.0, help="poisson: requests per second")
    ap.add_argument("--load", type=float, default=0.0,
                    help="poisson: rate = this x the fleet's closed-loop capacity under ideal affinity, measured at start")
    ap.add_argument("--burst", type=int, default=32, help="hot-prefix burst requests after the workload")
    ap.add_argument("--burst-concurrency", type=int, default=12)
    ap.add_argument("--only", default="",
                    help="run only the policies whose name contains one of these (comma-separated), in this order")
    ap.add_argument("--repeat", type=int, default=1,
                    help="run the chosen policies this many times, interleaved, each round starting one policy later")
    ap.add_argument("--sglang-router", default="", help="python with sglang-router==0.3.2 installed")
    ap.add_argument("--before-keel", default="", help="another keel binary: its router runs cache_aware exact too")
    ap.add_argument("--variant", action="append", default=[],
                    help="NAME=ARGS: one more keel router run with these flags ({model} = --model)")
    ap.add_argument("--replica-view", action="store_true", help="burst samples from the replicas' own gauges")
    ap.add_argument("--out", default="", help="append every result line to this file too")
    ap.add_argument("--trace", action="store_true",
                    help="open-loop: per-request records (replica, cached tokens, queue met) and a summary per run")
    args = ap.parse_args()
    if args.routers < 1:
        raise SystemExit("--routers needs at least 1")
    keel = args.keel or str(pathlib.Path(args.build) / "src/cli/keel")
    if args.client_cpus:
        os.sched_setaffinity(0, cpu_set(args.client_cpus))
    replica_cpus = [cpu_set(c) for c in args.replica_cpus.split(",")] if args.replica_cpus else [set()] * 4
    ports = [free_port() for _ in replica_cpus]
    serve = [keel, "serve", "--model", args.model, "--served-model-name", "smollm2", "--kv-tokens", str(args.kv_tokens),
             "-t", str(args.threads), "--http-threads", "1"]
    if args.load_format != "auto":
        serve += ["--load-format", args.load_format]
    procs = [subprocess.Popen(serve + ["--port", str(p)], stderr=subprocess.DEVNULL, preexec_fn=pin(cpus),
                              env={**os.environ, "KEEL_THREADS": str(args.threads)})
             for p, cpus in zip(ports, replica_cpus)]
    replicas = [f"http://127.0.0.1:{p}" for p in ports]
    out = open(args.out, "a") if args.out else None

    def emit(row):
        print(json.dumps(row), flush=True)
        if out:
            out.write(json.dumps(row) + "\n")
            out.flush()
    try:
        for r in replicas:
            wait_http(r + "/health")
        sources = replica_sources(replicas) if args.trace else None
        reqs = workload(args.groups, args.per_group, zipf=args.zipf, turns=args.turns)
        times = None
        if args.arrivals == "poisson":
            rate = args.rate
            if args.load:
                s_cold, s_warm, capacity = calibrate(replicas, reqs, args.groups)
                rate = args.load * capacity
                emit({"calibration": {"cold_ms": round(s_cold * 1e3, 1), "warm_ms": round(s_warm * 1e3, 1),
                                      "ideal_affinity_req_per_s": round(capacity, 1), "load": args.load,
                                      "rate": round(rate, 1)}})
            if rate <= 0:
                raise SystemExit("--arrivals poisson needs --rate or --load")
            times = arrival_times(len(reqs), rate, seed=1)
            reqs, times = add_mid_burst(reqs, times, args.mid_burst)
        configs = [("cache_aware exact (--model)", ["--model", args.model]),
                   ("cache_aware count bound (--model)", ["--model", args.model, "--spill-factor", "0"]),
                   ("cache_aware group affinity 3 (--model)",
                    ["--model", args.model, "--spill-factor", "0", "--group-affinity", "3"]),
                   ("cache_aware approximate (char keys)", []),
                   ("round_robin", ["--policy", "round_robin"]),
                   ("random", ["--policy", "random"])]
        if args.before_keel:
            configs.insert(1, ("cache_aware exact (--model), before", [f"--binary={args.before_keel}", "--model", args.model]))
        for v in args.variant:
            name, _, flags = v.partition("=")
            configs.append((name, [f.replace("{model}", args.model) for f in flags.split()]))
        if args.sglang_router:
            configs.append(("sglang-router 0.3.2 cache_aware", ["sglang"]))
        # In --only's order (a run cut short by a time limit still has the first ones), each config once.
        chosen = list({n: (n, e) for o in args.only.split(",") for n, e in configs if o in n}.values())
        rows = []
        for rep in range(args.repeat):
            # Repeat k starts at the k-th policy: no policy always runs first (right after the replicas
            # start, or right after another policy's burst).
            k = rep % len(chosen)
            for name, extra in chosen[k:] + chosen[:k]:
                r = run_policy(keel, replicas, args, extra, reqs, times, sources)
                r["policy"] = name
                r["repeat"] = rep
                r["arrivals"] = args.arrivals if not times else f"poisson {len(reqs) / times[-1]:.1f} req/s"
                r["load_avg"] = round(os.getloadavg()[0], 1)
                rows.append(r)
                emit(r)
        summarize(rows, emit)
    finally:
        for p in procs:
            p.send_signal(signal.SIGTERM)
        for p in procs:
            p.wait(timeout=60)


if __name__ == "__main__":
    main()
