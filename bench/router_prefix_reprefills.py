#!/usr/bin/env python3
"""Where the cold prefills of a shared-prefix run came from, read back from bench_router_prefix.py --trace
result lines (one JSON object per policy and run, each with "requests": group, send time, replica,
cached tokens, depth = requests met queued on that replica, cold = cached under half the prompt).

Per run: cold prefills split into first placements (a group's first request), copies (a group's cold
prefill on a replica it had not run on) and re-prefills (on a replica that had run it before: evicted,
prefilled again); for re-prefills, how long after the group's previous request there they came, and how
many came while another replica had run the group within --recent-ms (it may still have held it);
the queue depth every request met (mean, p90), and how many groups each replica served.

Usage: bench/router_prefix_reprefills.py FILE.jsonl [FILE.jsonl ...] [--recent-ms 3000]
"""
import argparse
import collections
import json
import statistics


def summarize(d, recent_ms):
    reqs = sorted(d["requests"], key=lambda r: r["t_ms"])
    last = collections.defaultdict(dict)  # group -> replica -> time of its latest request there
    first = copies = 0
    re_gaps, re_other = [], 0
    groups = collections.defaultdict(set)
    for r in reqs:
        g, rep, t = r["group"], r["replica"], r["t_ms"]
        groups[rep].add(g)
        if r["cold"]:
            if not last[g]:
                first += 1
            elif rep in last[g]:
                re_gaps.append(t - last[g][rep])
                re_other += any(k != rep and t - v < recent_ms for k, v in last[g].items())
            else:
                copies += 1
        last[g][rep] = t
    depth = sorted(r["depth"] for r in reqs)
    return {
        "policy": d.get("policy"), "run": d.get("repeat"), "hit_rate": d.get("hit_rate"),
        "cold": first + copies + len(re_gaps), "first": first, "copies": copies, "re": len(re_gaps),
        "re_other_recent": re_other,
        "re_gap_p50_s": round(statistics.median(re_gaps) / 1e3, 1) if re_gaps else None,
        "re_gap_min_s": round(min(re_gaps) / 1e3, 1) if re_gaps else None,
        "depth_mean": round(statistics.mean(depth), 1), "depth_p90": depth[int(0.9 * (len(depth) - 1))],
        "groups_per_replica": [len(groups[k]) for k in sorted(groups)],
        "ttft_p50_ms": d.get("ttft_p50_ms"), "ttft_p99_ms": d.get("ttft_p99_ms"),
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("files", nargs="+")
    ap.add_argument("--recent-ms", type=float, default=3000)
    args = ap.parse_args()
    cols = ["policy", "run", "hit_rate", "cold", "first", "copies", "re", "re_other_recent", "re_gap_p50_s",
            "re_gap_min_s", "depth_mean", "depth_p90", "groups_per_replica", "ttft_p50_ms", "ttft_p99_ms"]
    print("| file | " + " | ".join(cols) + " |")
    print("|" + " --- |" * (len(cols) + 1))
    for fn in args.files:
        with open(fn) as f:
            for line in f:
                d = json.loads(line)
                if "requests" not in d:
                    continue
                s = summarize(d, args.recent_ms)
                print(f"| {fn.split('/')[-1]} | " + " | ".join(str(s[c]) for c in cols) + " |")


if __name__ == "__main__":
    main()
