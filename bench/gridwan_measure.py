#!/usr/bin/env python3
"""gridwan's accuracy and throughput on this machine (docs/gridwan.md).

RTT: ping through gridwan at one-way delays of 0, 1, 10 and 20 ms against
2 x delay, under gridwan's default scheduling (fair, short slices) and
under --rt-priority.  Throughput: iperf3 over a 20 ms link at 100 Mbit/s
and 1 Gbit/s, 0 % and 0.1 % loss, cubic and bbr, 1 and 8 streams, with
gridwan's CPU time, its lateness and its drops for every run.  Needs root.

    bench/gridwan_measure.py [--build build] [--time 8] [--rt-priority 10]
                             [--csv docs/performance/gridwan.csv] [--quick]

Every run is bounded (gridwan --duration, iperf3 --time); namespaces are
named gwm<pid>* and removed by gridwan itself.
"""

import argparse
import csv
import json
import os
import re
import statistics
import subprocess
import sys
import time

PREFIX = "gwm%d" % os.getpid()
# Window for a 40 ms RTT at 1 Gbit/s (5 MB) with room to spare; the
# namespace defaults (4 MB send buffer) would cap one stream near 500 Mbit/s.
BUFFERS = "4096 131072 67108864"


def in_ns(ns, *args, timeout=120):
    return subprocess.run(["ip", "netns", "exec", ns] + [str(a) for a in args],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, timeout=timeout)


class Wan:
    def __init__(self, gridwan, tag, args):
        self.ns = ["%s%s%d" % (PREFIX, tag, i) for i in range(2)]
        self.proc = subprocess.Popen(
            [gridwan, "--ns", ",".join(self.ns)] + [str(a) for a in args],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        seen = ""
        for line in self.proc.stdout:
            seen += line
            m = re.match(r"gridwan: ready .*addrs=(\S+)", line)
            if m:
                break
        else:
            sys.exit("gridwan did not start:\n" + seen)
        self.addrs = m.group(1).split(",")
        for ns in self.ns:
            in_ns(ns, "sysctl", "-qw", "net.ipv4.tcp_wmem=" + BUFFERS,
                  "net.ipv4.tcp_rmem=" + BUFFERS)

    def stop(self):
        self.proc.terminate()
        out = self.proc.communicate(timeout=30)[0]
        if self.proc.returncode != 0:
            sys.exit("gridwan failed:\n" + out)
        return out


def value(text, name, default=0.0):
    found = re.findall(r"\b%s=([0-9.]+)" % name, text)
    return sum(float(v) for v in found) if found else default


def resolve(ns, addr):
    for _ in range(10):
        if in_ns(ns, "ping", "-n", "-c", 1, "-W", 1, addr).returncode == 0:
            return
    sys.exit("%s cannot reach %s" % (ns, addr))


def measure_rtt(gridwan, delay_ms, sched_args, count):
    wan = Wan(gridwan, "p", ["--delay", "%dms" % delay_ms, "--duration", 120]
              + sched_args)
    resolve(wan.ns[0], wan.addrs[1])
    out = in_ns(wan.ns[0], "ping", "-n", "-c", count, "-i", 0.02,
                wan.addrs[1]).stdout
    counters = wan.stop()
    rtts = sorted(float(x) for x in re.findall(r"time=([\d.]+) ms", out))
    return {
        "min": rtts[0], "median": statistics.median(rtts),
        "p90": rtts[int(0.9 * (len(rtts) - 1))], "max": rtts[-1],
        "late_avg_us": value(counters, "late_avg_us") / 2,
    }


def measure_iperf(gridwan, rate, loss, cc, streams, sched_args, seconds):
    omit = 2
    wan = Wan(gridwan, "t", ["--delay", "20ms", "--rate", rate, "--loss",
                             loss, "--duration", seconds + omit + 20]
              + sched_args)
    server = subprocess.Popen(
        ["ip", "netns", "exec", wan.ns[1], "iperf3", "-s", "-1", "-B",
         wan.addrs[1]], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        resolve(wan.ns[0], wan.addrs[1])
        r = in_ns(wan.ns[0], "iperf3", "-c", wan.addrs[1], "-t", seconds,
                  "-O", omit, "-C", cc, "-P", streams, "-J")
        report = json.loads(r.stdout)
        if "error" in report:
            sys.exit("iperf3: " + report["error"])
    finally:
        server.kill()
        server.wait()
    counters = wan.stop()
    end = report["end"]
    return {
        "mbps": end["sum_received"]["bits_per_second"] / 1e6,
        "retransmits": end["sum_sent"].get("retransmits", 0),
        # gridwan was busy with this run's traffic for omit + seconds.
        "cpu_user": value(counters, "user_s") / (seconds + omit),
        "cpu_sys": value(counters, "sys_s") / (seconds + omit),
        "late_avg_us": value(counters, "late_avg_us") / 2,
        "dropped_queue": value(counters, "dropped_queue"),
        "not_read_dropped": value(counters, "not_read_dropped"),
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--time", type=int, default=8)
    ap.add_argument("--rt-priority", type=int, default=10)
    ap.add_argument("--pings", type=int, default=100)
    ap.add_argument("--csv", default="docs/performance/gridwan.csv")
    ap.add_argument("--quick", action="store_true",
                    help="cubic only, and no fair-scheduling throughput runs")
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("needs root (network namespaces and TAP devices)")
    gridwan = os.path.join(args.build, "bin", "gridwan")
    rt = ["--rt-priority", args.rt_priority]
    ccs = open("/proc/sys/net/ipv4/tcp_available_congestion_control").read()
    ccs = [cc for cc in ("cubic", "bbr") if cc in ccs.split()]
    if args.quick:
        ccs = ccs[:1]
    print("load average at start: %s" % open("/proc/loadavg").read().strip())

    rows = []
    print("\n| delay | scheduling | 2 x delay | min | median | p90 | max "
          "| lateness (avg) |\n|---|---|---|---|---|---|---|---|")
    for delay in (0, 1, 10, 20):
        for sched, sched_args in (("fair", []), ("fifo", rt)):
            r = measure_rtt(gridwan, delay, sched_args, args.pings)
            print("| %d ms | %s | %d ms | %.3f | %.3f | %.3f | %.3f | %.0f us |"
                  % (delay, sched, 2 * delay, r["min"], r["median"], r["p90"],
                     r["max"], r["late_avg_us"]))
            rows.append(dict(kind="rtt", delay_ms=delay, sched=sched, **r))

    print("\n| rate | loss | cc | streams | scheduling | iperf3 Mbit/s "
          "| % of rate | retransmits | gridwan CPU user+sys | lateness (avg) "
          "| queue drops | unread drops |\n" + "|---" * 12 + "|")
    for rate, rate_mbit in (("100mbit", 100), ("1gbit", 1000)):
        for loss in ("0%", "0.1%"):
            for cc in ccs:
                for streams in (1, 8):
                    scheds = [("fifo", rt)]
                    if (not args.quick and loss == "0%" and cc == "cubic"):
                        scheds.insert(0, ("fair", []))
                    for sched, sched_args in scheds:
                        r = measure_iperf(gridwan, rate, loss, cc, streams,
                                          sched_args, args.time)
                        print("| %s | %s | %s | %d | %s | %.1f | %.1f | %d "
                              "| %.0f+%.0f %% | %.0f us | %d | %d |"
                              % (rate, loss, cc, streams, sched, r["mbps"],
                                 100 * r["mbps"] / rate_mbit,
                                 r["retransmits"], 100 * r["cpu_user"],
                                 100 * r["cpu_sys"],
                                 r["late_avg_us"], r["dropped_queue"],
                                 r["not_read_dropped"]), flush=True)
                        rows.append(dict(kind="iperf3", rate=rate, loss=loss,
                                         cc=cc, streams=streams, sched=sched,
                                         delay_ms=20, **r))
    print("load average at end: %s" % open("/proc/loadavg").read().strip())
    if args.csv:
        keys = sorted({k for row in rows for k in row})
        with open(args.csv, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=keys)
            w.writeheader()
            w.writerows(rows)
        print("wrote " + args.csv)


if __name__ == "__main__":
    main()
