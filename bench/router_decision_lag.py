#!/usr/bin/env python3
"""How late two peered keel router instances saw each other's decisions in a closed-loop burst.

Reads the decision logs of one run (keel router --decision-log, written by bench_router_prefix.py
--decision-logs DIR as run<k>_instance<i>.jsonl) and the burst's monotonic window from the bench's row
(burst_window_us; without --out rows, the last group's decisions are taken as the burst). For each of the
burst's first --first decisions it prints the deciding instance, the time since the burst's first
decision, the other instance's earlier decisions of the burst that its view did not hold yet
(unseen: a decision of the other instance whose replica's `peers` count in this view is below the
other's own count there after it, as the other's log has it; completions are rare in the burst's
first milliseconds, and a completion would only hide an unseen decision) and how long ago the oldest of
them was made; then the largest such age seen (an upper bound of the feed's lag, and a lower one
where a later decision saw it). Two instances only.

Usage: bench/router_decision_lag.py DIR/run1_instance0.jsonl DIR/run1_instance1.jsonl [--window T0,T1] [--first 12]
"""
import argparse
import json


def load(path, i):
    with open(path) as f:
        return [dict(json.loads(line), i=i) for line in f if line.strip()]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("logs", nargs=2)
    ap.add_argument("--window", default="", help="the burst's burst_window_us as T0,T1")
    ap.add_argument("--first", type=int, default=12)
    args = ap.parse_args()
    ev = sorted(load(args.logs[0], 0) + load(args.logs[1], 1), key=lambda d: d["t_us"])
    if args.window:
        t0, t1 = (int(x) for x in args.window.split(","))
        ev = [d for d in ev if t0 <= d["t_us"] <= t1]
    if not ev:
        raise SystemExit("no decisions in the window")
    group = ev[-1]["group"]
    burst = [d for d in ev if d["group"] == group][: args.first]
    start = burst[0]["t_us"]
    # After each decision of the other instance: its own in-flight count at the replica it picked (the
    # log's `own` is before the decision). The view holds that decision when its `peers` there reach it.
    after = [(d, d["c"][d["pick"]]["own"] + 1) for d in ev if d["t_us"] >= start - 50_000]
    worst = 0
    print("inst  t_us  pick decision    unseen  oldest_unseen_us")
    for d in burst:
        other = [(e, n) for e, n in after if e["i"] != d["i"] and e["t_us"] < d["t_us"]]
        missing = [e for e, n in other if d["c"][e["pick"]]["peers"] < n and e["t_us"] >= start]
        age = d["t_us"] - missing[0]["t_us"] if missing else 0
        worst = max(worst, age)
        print(f"{d['i']:>4} {d['t_us'] - start:>5} {d['pick']:>5} {d['decision']:<12} {len(missing):>6} {age:>17}")
    print(f"oldest unseen decision: {worst} us")


if __name__ == "__main__":
    main()
