#!/usr/bin/env python3
"""Tables of bench/run-threads.sh's CSVs (docs/performance/README.md,
"Threads").

Usage: threads_report.py DIR

cost: median round trip (us) of one thread per library and level, median
over runs with the spread (min-max) of the runs' medians, and the ratio of
each configuration to the older library at MPI_THREAD_SINGLE measured in
the same runs.  scaling: aggregate round trips per second with 1-8
threads, median over runs (min-max), for MPICH alone and GridColl across
the same emulated WAN, and each one's speed-up over its own single thread.
"""

import csv
import os
import statistics
import sys
from collections import defaultdict


def read(path):
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return list(csv.DictReader(f))


def size_name(n):
    n = int(n)
    for unit, shift in (("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return "%d %s" % (n >> shift, unit)
    return "%d B" % n


def spread(values, fmt):
    med = statistics.median(values)
    return med, "%s (%s-%s)" % (fmt % med, fmt % min(values), fmt % max(values))


def cost(rows):
    runs = defaultdict(list)
    for r in rows:
        runs[(r["lib"], r["level"], r["bytes"])].append(
            float(r["median_rtt_us"]))
    configs = [("old", "single"), ("new", "single"), ("new", "multiple")]
    sizes = sorted({r["bytes"] for r in rows}, key=int)
    print("| size | " + " | ".join("%s %s (us)" % c for c in configs) +
          " | new single / old | new multiple / old |")
    print("|---|" + "---:|" * (len(configs) + 2))
    for b in sizes:
        cells, meds = [], {}
        for c in configs:
            v = runs.get(c + (b,))
            if not v:
                cells.append("-")
                continue
            meds[c], text = spread(v, "%.0f")
            cells.append(text)
        base = meds.get(("old", "single"))
        ratios = ["%.2f" % (meds[c] / base) if base and c in meds else "-"
                  for c in configs[1:]]
        print("| %s | %s | %s |" % (size_name(b), " | ".join(cells),
                                     " | ".join(ratios)))


def scaling(rows):
    rate = defaultdict(list)
    for r in rows:
        rate[(r["lib"], r["bytes"], int(r["threads"]))].append(
            float(r["round_trips_per_s"]))
    libs = ["native", "new"]
    for b in sorted({r["bytes"] for r in rows}, key=int):
        print("\n%s messages: aggregate round trips/s, median (min-max), "
              "and speed-up over one thread\n" % size_name(b))
        print("| threads | " + " | ".join(libs) + " | " +
              " | ".join("%s speed-up" % l for l in libs) + " |")
        print("|---:|" + "---:|" * (2 * len(libs)))
        threads = sorted({t for (l, s, t) in rate if s == b})
        for t in threads:
            cells, ups = [], []
            for l in libs:
                v = rate.get((l, b, t))
                one = rate.get((l, b, 1))
                if not v:
                    cells.append("-")
                    ups.append("-")
                    continue
                med, text = spread(v, "%.1f")
                cells.append(text)
                ups.append("%.2f" % (med / statistics.median(one))
                           if one else "-")
            print("| %d | %s | %s |" % (t, " | ".join(cells), " | ".join(ups)))


def main(argv):
    if len(argv) != 2:
        sys.stderr.write(__doc__.split("\n\n")[1] + "\n")
        return 2
    c = read(os.path.join(argv[1], "threads-cost.csv"))
    s = read(os.path.join(argv[1], "threads-scaling.csv"))
    if c:
        print("One thread, through the local relays: median round trip\n")
        cost(c)
    if s:
        print("\nThreads ping-ponging at once on 1+1 over --wan")
        scaling(s)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
