#!/usr/bin/env python3
"""The issue-13 tables of docs/performance/ from the CSVs of
bench/run-nbc.sh: overlap per layout, library (GridColl, or MPICH alone:
native), collective, size and MPI_Test variant (median over the jobs of
each job's median overlap, min .. max); blocking collectives this build
against the older one (medians over the runs, and the ratio new / old
run by run: each run's two jobs ran back to back); the halo exchange per
grid and reorder (cut pairs, WAN messages per site and exchange from the
library's statistics, time per exchange: median over the jobs, min ..
max).

    bench/nbc_report.py DIR   # DIR/nbc-{overlap,blocking,blocking-points,halo}.csv
"""

import csv
import os
import statistics
import sys


def size_name(b):
    b = int(b)
    for unit, n in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if b >= n and b % n == 0:
            return "%d %s" % (b // n, unit)
    return "%d B" % b


def spread(values, fmt):
    return "%s (%s .. %s)" % (fmt % statistics.median(values),
                              fmt % min(values), fmt % max(values))


def grouped(path, key, keep=lambda r: True):
    """The rows of a CSV that `keep` accepts, by key(row)."""
    groups = {}
    for r in csv.DictReader(open(path)):
        if keep(r):
            groups.setdefault(key(r), []).append(r)
    return groups


def overlap(path):
    groups = grouped(path, lambda r: (r["layout"], r["lib"], r["coll"],
                                      int(r["bytes"]), int(r["test_every"])),
                     lambda r: r["overlap_pct"] != "n/a")
    print("| layout | library | collective | bytes | MPI_Test | jobs | "
          "pure ms | compute ms | total ms | overlap % (min .. max of jobs) "
          "| rounds p10 .. p90 % | tests |")
    print("|---|---|---|---:|---|---:|---:|---:|---:|---:|---:|---:|")
    for key in sorted(groups):
        rows = groups[key]
        med = lambda k: statistics.median(float(r[k]) for r in rows)
        every = "every %d units" % key[4] if key[4] else "none"
        lib = {"new": "GridColl", "thread": "GridColl + progress thread"}.get(
            key[1], key[1])
        print("| %s | %s | %s | %s | %s | %d | %.1f | %.1f | %.1f | %s | "
              "%.0f .. %.0f | %.0f |" % (
                  key[0], lib, key[2], size_name(key[3]), every, len(rows),
                  med("pure_us") / 1e3, med("compute_us") / 1e3,
                  med("total_us") / 1e3,
                  spread([float(r["overlap_pct"]) for r in rows], "%.0f"),
                  med("overlap_p10"), med("overlap_p90"), med("tests")))


def blocking(path):
    by = {}
    for r in csv.DictReader(open(path)):
        if r["median_us"] == "n/a":
            continue
        key = (r["layout"], r["coll"], int(r["bytes"]))
        by.setdefault(key, {}).setdefault(r["lib"], {})[r["run"]] = \
            float(r["median_us"])
    print("| layout | collective | bytes | new ms | old ms | new / old "
          "(medians) | new / old per run (min .. max) | runs |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for key in sorted(by):
        new, old = by[key].get("new", {}), by[key].get("old", {})
        runs = sorted(set(new) & set(old))
        if not runs:
            continue
        ratios = [new[r] / old[r] for r in runs]
        mn = statistics.median(new[r] for r in runs)
        mo = statistics.median(old[r] for r in runs)
        print("| %s | %s | %s | %.1f | %.1f | %.2f | %s | %d |" % (
            key[0], key[1], size_name(key[2]), mn / 1e3, mo / 1e3, mn / mo,
            spread(ratios, "%.2f"), len(runs)))


def halo(path):
    groups = grouped(path, lambda r: (r["layout"], r["dims"],
                                      int(r["periodic"]), int(r["reorder"]),
                                      int(r["bytes"]), r["algo"]))
    print("| layout | dims | reorder | block | algorithm | jobs | cut pairs | "
          "WAN messages per site and exchange | ms per exchange (min .. max "
          "of jobs) |")
    print("|---|---|---:|---:|---|---:|---:|---:|---:|")
    for key in sorted(groups):
        rows = groups[key]
        per = sorted({"%g" % (int(r[side]) / int(r["calls"]))
                      for r in rows
                      for side in ("wan_messages_alpha", "wan_messages_beta")})
        print("| %s | %s%s | %d | %s | %s | %d | %s | %s | %s |" % (
            key[0], key[1], " periodic" if key[2] else "", key[3],
            size_name(key[4]), key[5], len(rows),
            "/".join(sorted({r["cut_pairs"] for r in rows})), "/".join(per),
            spread([float(r["median_us"]) / 1e3 for r in rows], "%.1f")))


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    d = sys.argv[1]
    for name, fn in (("nbc-overlap.csv", overlap),
                     ("nbc-blocking.csv", blocking),
                     ("nbc-blocking-points.csv", blocking),
                     ("nbc-halo.csv", halo)):
        path = os.path.join(d, name)
        if os.path.exists(path):
            print("%s:\n" % name)
            fn(path)
            print()


if __name__ == "__main__":
    main()
