#!/usr/bin/env python3
"""The tables, targets and plots of bench/run-wan.sh's WAN report.

Reads the raw CSVs the script wrote (relay sweep, collectives, the local
barrier, model_check.sh's CSV when there is one) and writes, into --out:
PREFIX-coll.csv again with each row's WAN lower bound (ARCHITECTURE.md,
"Performance: limits to aim at") and its fraction, PREFIX-targets.csv (every
issue-5 target: measured median, spread, pass/fail), PREFIX-report.md
(the markdown tables docs/performance/README.md links to) and the PNG plots
(gnuplot).  Python 3 standard library only.
"""

import argparse
import csv
import math
import os
import re
import statistics
import subprocess

COLLS = ["alltoall", "bcast", "allgather", "allreduce", "barrier"]
NAN = float("nan")


def parse_wan(spec):
    """(one-way delay in s, rate in bytes/s or None) of a --wan spec."""
    delay, rate = 0.0, None
    for item in spec.split(","):
        key, _, value = item.partition("=")
        m = re.fullmatch(r"([0-9.]+)(us|ms|s)", value)
        if key == "delay" and m:
            delay = float(m.group(1)) * {"us": 1e-6, "ms": 1e-3,
                                         "s": 1}[m.group(2)]
        m = re.fullmatch(r"([0-9.]+)(kbit|mbit|gbit|bit)", value.lower())
        if key == "rate" and m:
            rate = float(m.group(1)) * {"bit": 1, "kbit": 1e3, "mbit": 1e6,
                                        "gbit": 1e9}[m.group(2)] / 8
    return delay, rate


def bound_us(coll, layout, nbytes, delay, rate):
    """The WAN lower bound of ARCHITECTURE.md for two sites: L plus the
    bytes one direction must carry over B."""
    n1, n2 = (int(x) for x in layout.split("+"))
    carried = {
        "alltoall": n1 * n2 * nbytes,   # bytes per pair
        "bcast": nbytes,                # the whole buffer
        "allgather": max(n1, n2) * nbytes,  # bytes per rank
        "allreduce": nbytes,            # each site needs the other's sum
        "barrier": 0,
    }[coll]
    return (delay + (carried / rate if rate else 0)) * 1e6


def num(text):
    try:
        return float(text)
    except (TypeError, ValueError):
        return NAN


def ok(x):
    return x == x and not math.isinf(x)


def fmt(x, digits=1):
    return "%.*f" % (digits, x) if ok(x) else "n/a"


def ms(us):
    return fmt(us / 1000, 2 if ok(us) and us < 10000 else 1)


def size_text(n):
    n = int(n)
    for unit, mult in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= mult and n % mult == 0:
            return "%d %s" % (n // mult, unit)
    return "%d B" % n


def read_csv(path):
    if not path or not os.path.exists(path) or os.path.getsize(path) == 0:
        return []
    with open(path) as f:
        return list(csv.DictReader(f))


def spread(values):
    values = [v for v in values if ok(v)]
    if not values:
        return NAN, NAN, NAN
    return statistics.median(values), min(values), max(values)


class Report:
    def __init__(self, args):
        self.a = args
        self.delay, self.rate = parse_wan(args.wan)
        self.relay = read_csv(args.relay)
        self.coll = read_csv(args.coll)
        for r in self.coll:
            r["bound_us"] = bound_us(r["coll"], r["layout"], int(r["bytes"]),
                                     self.delay, self.rate)
            r["median"] = num(r["median_us"])
            r["fraction"] = (r["bound_us"] / r["median"]
                             if ok(r["median"]) and r["median"] > 0 else NAN)
        self.barrier = read_csv(args.barrier)
        self.model = read_csv(args.model)
        self.burst = read_csv(args.burst)
        self.failures = []
        if args.failures and os.path.exists(args.failures):
            self.failures = [l.strip() for l in open(args.failures)
                             if l.strip()]
        self.targets = []

    # ---- lookups ----------------------------------------------------------

    def coll_rows(self, coll, layout=None, lib=None, algo=None, nbytes=None):
        return [r for r in self.coll if r["coll"] == coll and
                (layout is None or r["layout"] == layout) and
                (lib is None or r["lib"] == lib) and
                (algo is None or r["algo"] == algo) and
                (nbytes is None or int(r["bytes"]) == nbytes)]

    def one(self, *args, **kw):
        rows = self.coll_rows(*args, **kw)
        return rows[0] if rows else None

    def burst_ms(self, nbytes):
        """Plain TCP bursts of nbytes: median, p10, p90 in ms, or NaNs.
        Quantiles interpolated between samples, as gridcoll-bench's
        p10_us and p90_us (bench_quantile)."""
        v = [num(r["seconds"]) * 1e3 for r in self.burst
             if int(r["bytes"]) == nbytes]
        if len(v) < 2:
            return (v[0],) * 3 if v else (NAN, NAN, NAN)
        deciles = statistics.quantiles(v, n=10, method="inclusive")
        return statistics.median(v), deciles[0], deciles[-1]

    # ---- targets ----------------------------------------------------------

    def target(self, name, value, low, high, goal, passed, note=""):
        self.targets.append({
            "target": name, "median": value, "min": low, "max": high,
            "goal": goal,
            "result": ("not measured" if passed is None else
                       "pass" if passed else "fail"),
            "note": note})

    def compute_targets(self):
        default = [r for r in self.relay if r["config"] == "default"]
        m, lo, hi = spread([num(r["relay_Mbit"]) for r in default])
        self.target("relay link, default config (8 streams, system cc = %s, "
                    "plaintext), Mbit/s" % self.a.system_cc, m, lo, hi,
                    ">= 850",
                    m >= 850 if ok(m) else None, "%d runs" % len(default))
        tls = [r for r in self.relay if r["config"] == "default-tls"]
        m, lo, hi = spread([num(r["relay_Mbit"]) for r in tls])
        self.target("relay link, default config with TLS (gridrun "
                    "--tls-dir), Mbit/s", m, lo, hi, ">= 850",
                    m >= 850 if ok(m) else None, "%d runs" % len(tls))
        m, lo, hi = spread([num(r["relay_over_iperf3"]) for r in tls])
        self.target("relay with TLS / iperf3 -P 8", m, lo, hi, ">= 0.95",
                    m >= 0.95 if ok(m) else None, "%d runs" % len(tls))
        m, lo, hi = spread([num(r["relay_over_iperf3"]) for r in default])
        self.target("relay / iperf3 -P 8, same cc, same namespaces", m, lo,
                    hi, ">= 0.95", m >= 0.95 if ok(m) else None,
                    "%d runs" % len(default))

        lg = self.one("alltoall", "4+4", "gridcoll", "lg", 65536)
        nat = self.one("alltoall", "4+4", "native", "native", 65536)
        if lg and nat and ok(lg["median"]) and ok(num(nat["median_us"])):
            n = num(nat["median_us"])
            self.target("alltoall 64 KiB/pair 4+4: native / lg", n / lg["median"],
                        num(nat["p10_us"]) / num(lg["p90_us"]),
                        num(nat["p90_us"]) / num(lg["p10_us"]), ">= 3",
                        n / lg["median"] >= 3, "spread: p10/p90 of the calls")
        else:
            self.target("alltoall 64 KiB/pair 4+4: native / lg", NAN, NAN,
                        NAN, ">= 3", None)
        if lg and ok(lg["median"]):
            b = lg["bound_us"]
            self.target("alltoall 64 KiB/pair 4+4: lg / bound",
                        lg["median"] / b, num(lg["p10_us"]) / b,
                        num(lg["p90_us"]) / b, "<= 1.5",
                        lg["median"] / b <= 1.5,
                        "bound L + 16 m / B = %s ms; plain TCP, one 1 MiB "
                        "burst one way: %s x bound" % (
                            ms(b), fmt(self.burst_ms(1 << 20)[0] * 1e3 / b,
                                       2)))
        else:
            self.target("alltoall 64 KiB/pair 4+4: lg / bound", NAN, NAN, NAN,
                        "<= 1.5", None)

        big = 16 << 20
        mb = big / self.rate * 1e6 if self.rate else NAN
        for layout in ("2+2", "4+4", "3+5"):
            auto = self.one("bcast", layout, "gridcoll", "auto", big)
            if not auto or not ok(auto["median"]):
                continue
            forced = [r for r in self.coll_rows("bcast", layout, "gridcoll",
                                                nbytes=big)
                      if r["algo"] != "auto" and ok(r["median"])]
            best = min(forced, key=lambda r: r["median"]) if forced else None
            self.target("bcast 16 MiB %s (auto): (M/B) / T" % layout,
                        mb / auto["median"], mb / num(auto["p90_us"]),
                        mb / num(auto["p10_us"]), ">= 0.80",
                        mb / auto["median"] >= 0.8,
                        "M/B = %s ms; best forced %s: %s; plain TCP 16 MiB "
                        "burst: %s" % (
                            ms(mb), best["algo"] if best else "-",
                            fmt(mb / best["median"], 3) if best else "n/a",
                            fmt(mb / 1e3 / self.burst_ms(big)[0], 3)))

        def barrier_times(lib):
            return [num(r["usec_per_op"]) for r in self.barrier
                    if r["lib"] == lib and ok(num(r["usec_per_op"]))]
        grid, native, local = (barrier_times(lib) for lib in
                               ("gridcoll", "native", "local"))
        if grid and local:
            limit = self.delay * 1e6 + spread(local)[0]
            m, lo, hi = (x / limit for x in spread(grid))
            self.target("barrier 2+2, back to back / (L + local barrier)",
                        m, lo, hi, "<= 1.2", m <= 1.2,
                        "%d runs of 50 calls; L + local = %s ms (local "
                        "barrier of 2 ranks %s us); native: %s" % (
                            len(grid), ms(limit), fmt(spread(local)[0], 1),
                            "%s x" % fmt(spread(native)[0] / limit, 2)
                            if native else "n/a"))
        else:
            self.target("barrier 2+2, back to back / (L + local barrier)",
                        NAN, NAN, NAN, "<= 1.2", None)

        model = [r for r in self.model if r.get("coll") == "alltoall" and
                 r.get("algo") == "lg" and num(r.get("bytes")) >= 65536]
        errors = [abs(num(r.get("ratio")) - 1) for r in model]
        errors = [e for e in errors if ok(e)]
        if errors:
            m, lo, hi = spread(errors)
            self.target("model: abs(predicted / measured - 1), lg alltoall "
                        ">= 64 KiB", hi, lo, hi, "<= 0.15", hi <= 0.15,
                        "worst of %d points (median %s)" % (len(errors),
                                                            fmt(m, 3)))
        else:
            self.target("model: abs(predicted / measured - 1), lg alltoall "
                        ">= 64 KiB", NAN, NAN, NAN, "<= 0.15", None,
                        "bench/model_check.sh not present in this tree")

        ratios = []
        for coll in COLLS:
            keys = {(r["layout"], int(r["bytes"]))
                    for r in self.coll_rows(coll, lib="gridcoll")}
            for layout, nbytes in sorted(keys):
                rows = self.coll_rows(coll, layout, "gridcoll", nbytes=nbytes)
                auto = [r for r in rows if r["algo"] == "auto"]
                forced = [r["median"] for r in rows
                          if r["algo"] != "auto" and ok(r["median"])]
                if auto and forced and ok(auto[0]["median"]):
                    ratios.append((auto[0]["median"] / min(forced), coll,
                                   layout, nbytes))
        if ratios:
            worst = max(ratios)
            bad = [r for r in ratios if r[0] > 1.10]
            self.target("auto / best forced, every point", worst[0],
                        min(r[0] for r in ratios), worst[0], "<= 1.10",
                        not bad,
                        "%d points, %d above 1.10; worst %s %s %s" % (
                            len(ratios), len(bad), worst[1], worst[2],
                            size_text(worst[3])))
        else:
            self.target("auto / best forced, every point", NAN, NAN, NAN,
                        "<= 1.10", None)

    # ---- files ------------------------------------------------------------

    def path(self, name):
        return os.path.join(self.a.out, "%s-%s" % (self.a.prefix, name))

    def write_csvs(self):
        with open(self.path("coll.csv"), "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["layout", "lib", "coll", "algo", "ranks", "bytes",
                        "median_us", "p10_us", "p90_us", "bound_us",
                        "bound_over_median"])
            for r in self.coll:
                w.writerow([r["layout"], r["lib"], r["coll"], r["algo"],
                            r["ranks"], r["bytes"], r["median_us"],
                            r["p10_us"], r["p90_us"], "%.1f" % r["bound_us"],
                            fmt(r["fraction"], 4)])
        if self.model:
            with open(self.path("model.csv"), "w", newline="") as f:
                w = csv.DictWriter(f, fieldnames=list(self.model[0].keys()))
                w.writeheader()
                w.writerows(self.model)
        with open(self.path("targets.csv"), "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["target", "median", "min", "max", "goal", "result",
                        "note"])
            for t in self.targets:
                w.writerow([t["target"], fmt(t["median"], 3),
                            fmt(t["min"], 3), fmt(t["max"], 3), t["goal"],
                            t["result"], t["note"]])

    def plots(self):
        work = self.a.gnuplot
        made = []
        # Relay sweep.
        sweep = [r for r in self.relay if r["config"] == "sweep"]
        series = []
        for cc in ("cubic", "bbr"):
            rows = sorted((int(r["streams"]), r) for r in sweep
                          if r["cc"] == cc)
            if not rows:
                continue
            for what, col in (("relay", "relay_Mbit"),
                              ("iperf3", "iperf3_Mbit")):
                dat = os.path.join(work, "relay-%s-%s.dat" % (what, cc))
                with open(dat, "w") as f:
                    for k, r in rows:
                        f.write("%d %s\n" % (k, r[col]))
                series.append("'%s' using 1:2 with linespoints title '%s %s'"
                              % (dat, what, cc))
        if series:
            png = self.path("relay.png")
            self.gnuplot([
                "set terminal pngcairo noenhanced size 800,500"
                if self.cairo() else "set terminal png size 800,500",
                "set output '%s'" % png,
                "set title 'Two ranks on two sites, %s'" % self.a.wan,
                "set logscale x 2", "set xlabel 'TCP streams (K)'",
                "set ylabel 'Mbit/s'", "set key left top", "set grid",
                "set yrange [0:*]",
                "plot " + ", ".join(series)])
            made.append(png)
        # Collectives.
        for coll in COLLS:
            layouts = sorted({r["layout"] for r in self.coll_rows(coll)},
                             key=lambda l: sum(int(x) for x in l.split("+")))
            if not layouts:
                continue
            png = self.path("coll-%s.png" % coll)
            cmds = ["set terminal pngcairo noenhanced size %d,450" % (
                        420 * len(layouts))
                    if self.cairo() else
                    "set terminal png size %d,450" % (420 * len(layouts)),
                    "set output '%s'" % png,
                    "set multiplot layout 1,%d title '%s, %s'" % (
                        len(layouts), coll, self.a.wan),
                    "set grid", "set key left top font ',8'",
                    "set offsets graph 0.04, graph 0.04, 0, 0",
                    "set ylabel 'ms per call (median)'", "set logscale y"]
            # The same colour for an algorithm in every panel.
            every = []
            for r in self.coll_rows(coll):
                if (r["lib"], r["algo"]) not in every:
                    every.append((r["lib"], r["algo"]))
            every.sort(key=lambda la: la[0] == "native")
            for layout in layouts:
                rows = self.coll_rows(coll, layout)
                algos = [la for la in every
                         if any((r["lib"], r["algo"]) == la for r in rows)]
                plot = []
                barrier = coll == "barrier"
                for i, (lib, algo) in enumerate(algos):
                    dat = os.path.join(work, "%s-%s-%s-%s.dat" % (
                        coll, layout, lib, algo))
                    pts = sorted((int(r["bytes"]), r["median"]) for r in rows
                                 if r["lib"] == lib and r["algo"] == algo and
                                 ok(r["median"]))
                    with open(dat, "w") as f:
                        for b, med in pts:
                            f.write("%d %f\n" % (i if barrier else b,
                                                 med / 1000))
                    style = ("with points pt 7 ps 1.5" if barrier else
                             "with linespoints")
                    width = " lc %d%s" % (every.index((lib, algo)) + 1,
                                          " lw 3" if lib == "native" else "")
                    plot.append("'%s' using 1:2 %s%s title '%s'" % (
                        dat, style, width,
                        "native MPICH" if lib == "native" else algo))
                dat = os.path.join(work, "%s-%s-bound.dat" % (coll, layout))
                sizes = sorted({int(r["bytes"]) for r in rows})
                with open(dat, "w") as f:
                    for b in sizes:
                        x = 0 if barrier else b
                        f.write("%d %f\n" % (x, bound_us(
                            coll, layout, b, self.delay, self.rate) / 1000))
                if barrier:
                    names = ", ".join("'%s' %d" % (
                        "native" if lib == "native" else algo, i)
                        for i, (lib, algo) in enumerate(algos))
                    cmds += ["unset logscale x", "set xrange [-1:%d]" %
                             len(algos), "set xtics (%s)" % names,
                             "set xlabel ''"]
                    plot.append("%f with lines dt 2 lw 2 title 'bound'" %
                                (bound_us(coll, layout, 0, self.delay,
                                          self.rate) / 1000))
                else:
                    cmds += ["set logscale x 2", "set xrange [*:*]",
                             "set xtics (%s)" % ", ".join(
                                 "'%s' %d" % (size_text(b).replace(" ", ""),
                                              b) for b in sizes),
                             "set xlabel 'bytes (%s)'" % (
                                 "per pair" if coll == "alltoall" else
                                 "per rank" if coll == "allgather" else
                                 "buffer")]
                    plot.append("'%s' using 1:2 with lines dt 2 lw 2 "
                                "title 'WAN bound'" % dat)
                cmds += ["set title '%s'" % layout, "plot " + ", ".join(plot)]
            cmds.append("unset multiplot")
            self.gnuplot(cmds)
            made.append(png)
        return made

    def cairo(self):
        if not hasattr(self, "_cairo"):
            r = subprocess.run(["gnuplot", "-e", "set terminal"],
                               stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True)
            self._cairo = "pngcairo" in r.stdout
        return self._cairo

    def gnuplot(self, cmds):
        subprocess.run(["gnuplot"], input="\n".join(cmds) + "\n", text=True,
                       check=True, timeout=60)

    def markdown(self, plots):
        a = self.a
        out = []
        w = out.append
        w("<!-- Written by bench/run-wan.sh (bench/wan_report.py); do not "
          "edit by hand. -->")
        w("# WAN report: relays and collectives over an emulated WAN")
        w("")
        w("Mode: %s. WAN (gridwan): `%s`. Run time %d s. Every process of "
          "the run (gridwan, relays, ranks, iperf3) shares this machine's "
          "cores with whatever else ran (load below): the figures are what "
          "this machine gave, not what the software can do on hosts of "
          "their own." % (a.mode, a.wan, a.seconds))
        w("")
        if a.seed is not None:
            w("- loss draws: each job's gridwan its own seed, %d plus the "
              "job's number (`bench/run-wan.sh --seed %d` repeats them)"
              % (a.seed, a.seed))
        w("- load before: `%s`" % a.load_before.strip())
        w("- load after: `%s`" % a.load_after.strip())
        if self.failures:
            w("- not measured (failed, timed out or over the time budget):")
            for f in self.failures:
                w("  - %s" % f)
        else:
            w("- every job ran to completion")
        w("")
        w("## Targets (issue 5)")
        w("")
        w("| target | median | spread (min .. max) | goal | result | note |")
        w("|---|---|---|---|---|---|")
        for t in self.targets:
            w("| %s | %s | %s .. %s | %s | %s | %s |" % (
                t["target"], fmt(t["median"], 3), fmt(t["min"], 3),
                fmt(t["max"], 3), t["goal"], t["result"], t["note"]))
        w("")
        if self.burst:
            w("## Plain TCP bursts: the transport's own time")
            w("")
            w("`bench/tcp_burst.py` between the two site namespaces of a 1+1 "
              "job: 8 TCP connections (bbr, TCP_NODELAY, kept open and warmed "
              "up by 3 bursts) carry each burst split evenly; its time runs "
              "from the client's start to the last byte at the server (one "
              "clock for both namespaces), then a one-byte answer and a 20 ms "
              "pause, as between a benchmark's calls. Nothing of GridColl is "
              "in the way: what any collective built on TCP pays on this "
              "link for that many bytes one way.")
            w("")
            w("| burst | rounds | median ms | p10 .. p90 ms | bound L + M/B ms "
              "| bound / median | (M/B) / median |")
            w("|---|---|---|---|---|---|---|")
            for nbytes in sorted({int(r["bytes"]) for r in self.burst}):
                med, p10, p90 = self.burst_ms(nbytes)
                wire = nbytes / self.rate * 1e3 if self.rate else NAN
                bound = self.delay * 1e3 + wire
                w("| %s | %d | %s | %s .. %s | %s | %s | %s |" % (
                    size_text(nbytes),
                    sum(int(r["bytes"]) == nbytes for r in self.burst),
                    fmt(med), fmt(p10), fmt(p90), fmt(bound),
                    fmt(bound / med, 2), fmt(wire / med, 2)))
            w("")
        w("## Relay link against iperf3")
        w("")
        w("Two ranks on two sites (1+1), rank 0 streams 1 MiB messages, 8 "
          "in flight, to rank 1 through the relays (`gridcoll-mpibench "
          "stream`, application-level, plaintext), counted over %s after "
          "1 s left out (`--omit 1`); in the same job and namespaces "
          "`iperf3 -P K -C cc -O 1` for as long, alternating which goes "
          "first. gridwan CPU: its user + system seconds over the job "
          "per GB it forwarded (iperf3 and relay together). Ranks and relays "
          "CPU: both sites' together while the MPI program ran (start-up, "
          "warm-up, stream, drain, finalize), per GB the stream moved, and "
          "in brackets as cores (CPU seconds per second of the program's "
          "run; n/a in runs made before the script recorded it)."
          % ("%d s" % self.a.relay_seconds))
        w("")
        w("| config | K | cc | extra | relay Mbit/s | iperf3 Mbit/s | "
          "relay / iperf3 | gridwan CPU s/GB | ranks CPU s/GB (cores) | "
          "relays CPU s/GB (cores) |")
        w("|---|---|---|---|---|---|---|---|---|---|")
        for r in self.relay:
            def cores(col):
                return "%s (%s)" % (fmt(num(r[col]), 2),
                                    fmt(num(r.get(col.split("_")[0] +
                                                  "_cores")), 2))
            w("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
                r["config"], r["streams"], r["cc"], r["extra"],
                r["relay_Mbit"], r["iperf3_Mbit"], r["relay_over_iperf3"],
                r["gridwan_cpu_s_per_GB"], cores("ranks_cpu_s_per_GB"),
                cores("relays_cpu_s_per_GB")))
        pairs = []
        for config in ("credit-8M", "credit-32M"):
            rows = [r for r in self.relay if r["config"] == config]
            if rows:
                pairs.append((config, spread([num(r["relay_Mbit"])
                                              for r in rows]),
                              spread([num(r["relay_over_iperf3"])
                                      for r in rows]), len(rows)))
        if pairs:
            w("")
            w("Default `flow.rank_credit` before (8M) and after (32M), "
              "alternating rounds in this run:")
            w("")
            w("| flow.rank_credit | rounds | relay Mbit/s median (min .. "
              "max) | relay / iperf3 median (min .. max) |")
            w("|---|---|---|---|")
            for config, mbit, ratio, n in pairs:
                w("| %s | %d | %s (%s .. %s) | %s (%s .. %s) |" % (
                    config.split("-")[1], n, fmt(mbit[0]), fmt(mbit[1]),
                    fmt(mbit[2]), fmt(ratio[0], 3), fmt(ratio[1], 3),
                    fmt(ratio[2], 3)))
        w("")
        w("## Collectives: GridColl against native MPICH")
        w("")
        w("gridcoll-bench (relays: 8 streams, bbr) with every algorithm "
          "forced in turn and `auto`, against gridcoll-bench-plain under "
          "`gridrun --native` (one MPICH job, UCX over TCP, the system's "
          "congestion control). Median of the timed calls, in ms (`--start "
          "window`: the ranks start each call together at a time rank 0 "
          "broadcasts on the clock they share; a call's time is the slowest "
          "rank's end minus that start); in brackets the "
          "WAN lower bound over the time (1 = at the bound). Bytes: alltoall "
          "per pair, allgather per rank, bcast and allreduce the whole "
          "buffer. Bound: L + (bytes one direction must carry) / B, with "
          "n1 n2 m (alltoall), max(n1, n2) m (allgather), M (bcast, "
          "allreduce), 0 (barrier).")
        for coll in COLLS:
            rows = self.coll_rows(coll)
            if not rows:
                continue
            w("")
            w("### %s" % coll)
            algos = []
            for r in rows:
                if r["algo"] not in algos and r["lib"] == "gridcoll":
                    algos.append(r["algo"])
            algos.append("native")
            layouts = sorted({r["layout"] for r in rows},
                             key=lambda l: sum(int(x) for x in l.split("+")))
            w("")
            w("| layout | bytes | bound ms | " + " | ".join(algos) +
              " | native / best |")
            w("|---|---|---|" + "---|" * len(algos) + "---|")
            for layout in layouts:
                for nbytes in sorted({int(r["bytes"]) for r in rows
                                      if r["layout"] == layout}):
                    cells = []
                    best = NAN
                    native = NAN
                    for algo in algos:
                        lib = "native" if algo == "native" else "gridcoll"
                        r = self.one(coll, layout, lib, algo, nbytes)
                        if r is None or not ok(r["median"]):
                            cells.append("n/a")
                            continue
                        cells.append("%s (%s)" % (ms(r["median"]),
                                                  fmt(r["fraction"], 2)))
                        if lib == "native":
                            native = r["median"]
                        elif not ok(best) or r["median"] < best:
                            best = r["median"]
                    w("| %s | %s | %s | %s | %s |" % (
                        layout, size_text(nbytes),
                        ms(bound_us(coll, layout, nbytes, self.delay,
                                    self.rate)),
                        " | ".join(cells),
                        fmt(native / best, 2) if ok(native) and ok(best)
                        else "n/a"))
        if self.model:
            w("")
            w("## The model: predicted against measured")
            w("")
            w("`bench/model_check.sh`: gridcoll-probe measures the model on "
              "each layout, `gridcoll-info --predict` predicts, gridcoll-bench "
              "(run with the model, so the forced algorithm takes the "
              "predicted segment size) measures; ratio = predicted / "
              "measured ([model.md](../model.md)).")
            w("")
            w("| coll | algo | layout | bytes | predicted ms | measured ms | "
              "ratio |")
            w("|---|---|---|---|---|---|---|")
            for r in self.model:
                w("| %s | %s | %s | %s | %s | %s | %s |" % (
                    r["coll"], r["algo"], r["layout"],
                    size_text(int(num(r["bytes"]))),
                    ms(num(r["predicted_us"])), ms(num(r["measured_us"])),
                    fmt(num(r["ratio"]), 2)))
        w("")
        w("## Files")
        w("")
        for name in ("relay.csv", "coll.csv", "targets.csv", "barrier.csv") + (
                ("model.csv",) if self.model else ()) + (
                ("tcp-burst.csv",) if self.burst else ()):
            w("- [%s-%s](%s-%s)" % (a.prefix, name, a.prefix, name))
        for p in plots:
            w("- [%s](%s)" % (os.path.basename(p), os.path.basename(p)))
        for p in plots:
            w("")
            w("![%s](%s)" % (os.path.basename(p), os.path.basename(p)))
        with open(self.path("report.md"), "w") as f:
            f.write("\n".join(out) + "\n")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--wan", required=True)
    p.add_argument("--prefix", default="wan")
    p.add_argument("--out", required=True)
    p.add_argument("--relay", required=True)
    p.add_argument("--coll", required=True)
    p.add_argument("--barrier", required=True,
                   help="back-to-back barrier CSV (round,lib,layout,...)")
    p.add_argument("--model")
    p.add_argument("--burst", help="bench/tcp_burst.py's CSV")
    p.add_argument("--failures")
    p.add_argument("--load-before", default="")
    p.add_argument("--load-after", default="")
    p.add_argument("--seconds", type=int, default=0)
    p.add_argument("--mode", default="full")
    p.add_argument("--relay-seconds", type=int, default=4)
    p.add_argument("--seed", type=int,
                   help="base of the jobs' gridwan seeds (run-wan.sh --seed)")
    p.add_argument("--system-cc", default="?",
                   help="the kernel's default congestion control")
    p.add_argument("--gnuplot", required=True,
                   help="directory for gnuplot's data files")
    args = p.parse_args()
    rep = Report(args)
    rep.compute_targets()
    rep.write_csvs()
    plots = rep.plots()
    rep.markdown(plots)
    for t in rep.targets:
        print("%-62s %10s  %-8s %s" % (t["target"][:62], fmt(t["median"], 3),
                                       t["goal"], t["result"]))


if __name__ == "__main__":
    main()
