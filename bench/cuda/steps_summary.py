"""Sums keel's StepTimer lines ([cuda steps] ...) of a log: per phase kind (graph n=B / eager) the steps,
GPU time and GPU idle between steps (weighted by steps), and the idle share. usage: steps_summary.py LOG"""
import re
import sys
from collections import defaultdict

pat = re.compile(r"\[cuda steps\] (.*?): (\d+) steps, GPU time per step median ([\d.]+) ms \(mean ([\d.]+) ms\), "
                 r"GPU idle between steps median ([\d.]+) ms \(mean ([\d.]+) ms\)")
agg = defaultdict(lambda: [0, 0.0, 0.0])
for line in open(sys.argv[1], errors="replace"):
    m = pat.search(line)
    if not m:
        continue
    phase = m.group(1).split(",")[0]
    n, busy, gap = int(m.group(2)), float(m.group(4)), float(m.group(6))
    a = agg[phase]
    a[0] += n
    a[1] += n * busy
    a[2] += n * gap
tot = [0, 0.0, 0.0]
for phase in sorted(agg, key=lambda p: (p == "eager", int(re.sub(r"\D", "", p) or 0))):
    n, b, g = agg[phase]
    tot = [tot[0] + n, tot[1] + b, tot[2] + g]
    print(f"{phase:>12}: {n:6d} steps, GPU time/step {b / n:8.3f} ms, idle between steps mean {g / n:7.3f} ms, "
          f"idle {100 * g / (b + g):5.2f}%")
if tot[0]:
    gn = sum(agg[p][0] for p in agg if p.startswith("graph"))
    gb = sum(agg[p][1] for p in agg if p.startswith("graph"))
    gg = sum(agg[p][2] for p in agg if p.startswith("graph"))
    if gn:
        print(f"{'graph (all)':>12}: {gn:6d} steps, GPU time/step {gb / gn:8.3f} ms, idle between steps mean "
              f"{gg / gn:7.3f} ms, idle {100 * gg / (gb + gg):5.2f}%")
    print(f"{'all':>12}: {tot[0]:6d} steps, idle {100 * tot[2] / (tot[1] + tot[2]):5.2f}% of GPU wall time")
