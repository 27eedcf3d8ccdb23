#!/usr/bin/env python3
"""Every collective algorithm on loopback sites (issue 4).

Runs gridcoll-bench under gridrun for every collective it knows and every
layout, collects the rows into one CSV and prints the report of
docs/performance/history.md (issue 4): the median time per algorithm and
size, and the
automatic choice ("auto") against the best forced algorithm.

    bench/coll_loopback.py [--build build] [--layouts 2,2 3,5] [--iters 10]
                           [--warmup 2] [--csv docs/performance/coll-loopback.csv]
    bench/coll_loopback.py --report-only --csv FILE

Per gridrun job: `gridcoll-bench COLL --sizes SIZES --iters N --warmup W
--csv` (bytes per pair for alltoall(v), per rank for allgather, gather and
scatter, the whole buffer for bcast, allreduce and reduce; see
gridcoll-bench --help).  CSV columns: layout (site sizes, "2+2"), then
gridcoll-bench's columns, then load1 (the 1-minute load average as the job
started: other jobs on the machine).
"""

import argparse
import csv
import os
import subprocess
import sys

SRC = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Per-rank buffers of the block collectives grow with the rank count:
# 1 MiB per block is 8 MiB per rank on 8 ranks.
SIZES = {
    "barrier": "0",
    "bcast": "8,1k,64k,1m,16m",
    "reduce": "8,1k,64k,1m,16m",
    "allreduce": "8,1k,64k,1m,16m",
    "gather": "8,1k,64k,1m",
    "scatter": "8,1k,64k,1m",
    "allgather": "8,1k,64k,1m",
    "alltoall": "8,1k,64k,1m",
    "alltoallv": "8,1k,64k,1m",
}
BENCH_COLUMNS = ["coll", "algo", "sites", "ranks", "bytes", "median_us",
                 "p10_us", "p90_us"]
COLUMNS = ["layout"] + BENCH_COLUMNS + ["load1"]


def bench_command(build, layout, coll, iters, warmup):
    cmd = [os.path.join(build, "bin", "gridrun"), "--timeout", "900",
           "--site-sizes", layout, "--",
           os.path.join(build, "bin", "gridcoll-bench"), coll]
    if coll != "barrier":
        cmd += ["--sizes", SIZES[coll]]
    return cmd + ["--iters", str(iters), "--warmup", str(warmup), "--csv"]


def measure(args):
    rows = []
    for layout in args.layouts:
        for coll in SIZES:
            cmd = bench_command(args.build, layout, coll, args.iters,
                                args.warmup)
            load1 = os.getloadavg()[0]
            print("#", " ".join(cmd), file=sys.stderr, flush=True)
            r = subprocess.run(cmd, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True,
                               timeout=1000)
            if r.returncode != 0:
                sys.exit("failed (exit %d):\n%s\n%s" %
                         (r.returncode, r.stdout, r.stderr))
            for row in csv.DictReader(r.stdout.splitlines()):
                row["layout"] = layout.replace(",", "+")
                row["load1"] = "%.2f" % load1
                rows.append(row)
    with open(args.csv, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS)
        w.writeheader()
        w.writerows(rows)
    return rows


def size_label(n):
    for unit, shift in (("Mi", 20), ("Ki", 10)):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return "%d %sB" % (n >> shift, unit)
    return "%d B" % n


def fmt(us):
    if us == "n/a":
        return us
    us = float(us)
    return "%.0f" % us if us >= 100 else "%.1f" % us


def report(rows):
    layouts = list(dict.fromkeys(r["layout"] for r in rows))
    for layout in layouts:
        mine = [r for r in rows if r["layout"] == layout]
        sizes = sorted({int(r["bytes"]) for r in mine if r["coll"] !=
                        "barrier"})
        print("Median µs, sites %s (%s ranks):\n" %
              (layout, mine[0]["ranks"]))
        print("| collective | algorithm | " +
              " | ".join(size_label(s) for s in sizes) + " |")
        print("|---|---|" + "---:|" * len(sizes))
        for coll in dict.fromkeys(r["coll"] for r in mine):
            for algo in dict.fromkeys(r["algo"] for r in mine
                                      if r["coll"] == coll):
                cells = {int(r["bytes"]): fmt(r["median_us"]) for r in mine
                         if r["coll"] == coll and r["algo"] == algo}
                if coll == "barrier":
                    line = [cells[0]] + [""] * (len(sizes) - 1)
                else:
                    line = [cells.get(s, "") for s in sizes]
                print("| %s | %s | %s |" % (coll, algo, " | ".join(line)))
        print()
    print("Automatic choice against the best forced algorithm (medians):\n")
    print("| sites | collective | bytes | best forced | µs | auto µs | "
          "auto / best |")
    print("|---|---|---:|---|---:|---:|---:|")
    for layout in layouts:
        cases = dict.fromkeys((r["coll"], int(r["bytes"])) for r in rows
                              if r["layout"] == layout)
        for coll, size in cases:
            case = [r for r in rows if r["layout"] == layout and
                    r["coll"] == coll and int(r["bytes"]) == size and
                    r["median_us"] != "n/a"]
            forced = [r for r in case if r["algo"] != "auto"]
            auto = [r for r in case if r["algo"] == "auto"]
            if not forced or not auto:
                continue
            best = min(forced, key=lambda r: float(r["median_us"]))
            ratio = float(auto[0]["median_us"]) / float(best["median_us"])
            print("| %s | %s | %s | %s | %s | %s | %.2f |" %
                  (layout, coll, size_label(size) if coll != "barrier"
                   else "-", best["algo"], fmt(best["median_us"]),
                   fmt(auto[0]["median_us"]), ratio))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--build", default=os.path.join(SRC, "build"))
    p.add_argument("--layouts", nargs="+", default=["2,2", "3,5"])
    p.add_argument("--iters", type=int, default=10)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--csv", default=os.path.join(
        SRC, "docs", "performance", "coll-loopback.csv"))
    p.add_argument("--report-only", action="store_true",
                   help="summarize the rows already in --csv")
    args = p.parse_args()
    if args.report_only:
        with open(args.csv) as f:
            rows = list(csv.DictReader(f))
    else:
        rows = measure(args)
    report(rows)


if __name__ == "__main__":
    main()
