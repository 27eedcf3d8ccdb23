#!/usr/bin/env python3
"""The rendezvous of large cross-site messages against eager only, side by
side in one run over the emulated WAN (libgridcoll/p2p/gc_p2p_rndv.c).

Configurations, each a `gridrun --site-sizes 1,1 --wan WAN` job of its own:
  default   the defaults: GRIDCOLL_RNDV_THRESHOLD=64K (above it a message
            goes eager only into the receives posted for it),
            GRIDCOLL_EAGER_WINDOW=32M;
  eager     GRIDCOLL_RNDV_THRESHOLD=1024G (eager only: the behaviour
            before the rendezvous).
Tests, gridcoll-mpibench between rank 0 and rank 1 (other site):
  latency   pingpong --bytes 8,1k,8k,64k,1m,4m: one-way time = half the
            median round trip (usec_median);
  bandwidth stream --bytes 1k,8k,1m,8m,64m --window 8 --seconds 3
            --omit 1: application-level MB/s of 8 MPI_Isend in flight
            (the relay link's stream of docs/performance/README.md, "Over
            an emulated WAN").
Every round runs each configuration once, the first one moving on by one
every round.  CSV columns: config, test, bytes, round, position,
usec_median, MBps, load1 (1-minute load average as the job started).
The summary gives the median over the rounds and the min .. max.

    bench/rndv_bench.py [--build build] [--rounds 5] [--quick]
                        [--wan delay=20ms,rate=1gbit,loss=0.1%]
                        [--csv docs/performance/rndv.csv]

Needs root (gridrun --wan makes network namespaces).
"""

import argparse
import csv
import io
import os
import statistics
import subprocess
import sys

SRC = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

CONFIGS = [
    ("default", {}),
    ("eager", {"GRIDCOLL_RNDV_THRESHOLD": "1024G"}),
]
LATENCY = ("8,1k,8k,64k,1m,4m", "20,20,20,20,10,6")
BANDWIDTH = ("1k,8k,1m,8m,64m", "3")
QUICK_LATENCY = ("8,64k,1m", "6,6,4")
QUICK_BANDWIDTH = ("1k,1m,64m", "2")


def load1():
    with open("/proc/loadavg") as f:
        return float(f.read().split()[0])


def job(build, wan, env, args):
    """Rows of one gridcoll-mpibench job's CSV output."""
    gridrun = os.path.join(build, "bin", "gridrun")
    bench = os.path.join(build, "bin", "gridcoll-mpibench")
    cmd = [gridrun, "--timeout", "300", "--site-sizes", "1,1", "--wan", wan,
           "--", bench] + args + ["--peer", "1", "--csv"]
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True, env=dict(os.environ, **env), timeout=360)
    if r.returncode != 0:
        sys.exit("%s failed (%d):\n%s" % (" ".join(cmd), r.returncode,
                                          r.stderr[-2000:]))
    text = r.stdout[r.stdout.index("test,lib,"):]
    return list(csv.DictReader(io.StringIO(text)))


def summary(rows):
    out = []
    keys = []
    for r in rows:
        k = (r["test"], int(r["bytes"]))
        if k not in keys:
            keys.append(k)
    names = [name for name, _ in CONFIGS]
    for test, size in keys:
        field = "usec_median" if test == "latency" else "MBps"
        unit = "one-way ms" if test == "latency" else "MB/s"
        cells = []
        for name in names:
            vals = [float(r[field]) for r in rows
                    if r["config"] == name and r["test"] == test
                    and int(r["bytes"]) == size]
            if test == "latency":
                vals = [v / 1000 for v in vals]
            cells.append("%.1f (%.1f .. %.1f)" % (
                statistics.median(vals), min(vals), max(vals)) if vals
                else "-")
        out.append("| %s | %s | %s | %s |" % (
            test + " (" + unit + ")", human(size), " | ".join(cells),
            len(vals)))
    head = "| test | size | %s | rounds |\n|---|---|%s---:|" % (
        " | ".join(names), "---:|" * len(names))
    return head + "\n" + "\n".join(out)


def human(n):
    for unit, shift in (("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return "%d %s" % (n >> shift, unit)
    return "%d B" % n


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(SRC, "build"))
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--wan", default="delay=20ms,rate=1gbit,loss=0.1%")
    ap.add_argument("--csv", default=os.path.join(SRC, "docs", "performance",
                                                  "rndv.csv"))
    a = ap.parse_args()
    lat = QUICK_LATENCY if a.quick else LATENCY
    bw = QUICK_BANDWIDTH if a.quick else BANDWIDTH
    rows = []
    fields = ["config", "test", "bytes", "round", "position", "usec_median",
              "MBps", "load1"]
    for rnd in range(1, a.rounds + 1):
        order = CONFIGS[rnd % len(CONFIGS):] + CONFIGS[:rnd % len(CONFIGS)]
        for pos, (name, env) in enumerate(order):
            for test, args in (
                    ("latency", ["pingpong", "--bytes", lat[0], "--iters",
                                 lat[1]]),
                    ("bandwidth", ["stream", "--bytes", bw[0], "--window",
                                   "8", "--seconds", bw[1], "--omit", "1"])):
                load = load1()
                for r in job(a.build, a.wan, env, args):
                    rows.append({"config": name, "test": test,
                                 "bytes": r["bytes"], "round": rnd,
                                 "position": pos,
                                 "usec_median": r["usec_median"],
                                 "MBps": r["MBps"], "load1": load})
            print("round %d %s done (load %.2f)" % (rnd, name, load1()),
                  file=sys.stderr, flush=True)
    os.makedirs(os.path.dirname(os.path.abspath(a.csv)), exist_ok=True)
    with open(a.csv, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields)
        w.writeheader()
        w.writerows(rows)
    print(summary(rows))
    loads = [r["load1"] for r in rows]
    print("\nload1 at job start: median %.2f, %.2f .. %.2f"
          % (statistics.median(loads), min(loads), max(loads)))


if __name__ == "__main__":
    main()
