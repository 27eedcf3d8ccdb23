#!/usr/bin/env python3
"""CPU time of the processes a command starts, by process name.

    proc_cpu.py --csv FILE [--interval S] -- COMMAND [ARGS...]

Runs COMMAND and, every S seconds (default 0.1) until it exits, reads
/proc/PID/stat of every process that did not exist when COMMAND started;
writes CSV name,processes,cpu_seconds (user + system, summed over the
processes of that name, each at the last value seen).  Descendants in
other network namespaces count too (they share the PID namespace).  A
process's last interval before it exits is not seen: run a short and a
long job and take the difference to cancel that and the start-up.  Exits
with COMMAND's status.
"""
import argparse
import csv
import os
import subprocess
import sys
import time

TICKS = os.sysconf("SC_CLK_TCK")


def cpu_by_pid():
    """{pid: (name, cpu seconds)} of every process readable now."""
    seen = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % entry) as f:
                stat = f.read()
        except OSError:  # gone meanwhile
            continue
        # The name is in parentheses and may hold spaces or parentheses.
        name = stat[stat.index("(") + 1:stat.rindex(")")]
        fields = stat[stat.rindex(")") + 2:].split()
        seen[int(entry)] = (name, (int(fields[11]) + int(fields[12])) / TICKS)
    return seen


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--csv", required=True)
    ap.add_argument("--interval", type=float, default=0.1)
    ap.add_argument("command", nargs=argparse.REMAINDER)
    args = ap.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command or args.interval <= 0:
        ap.error("a command after --, and an interval above 0")
    before = set(cpu_by_pid())
    child = subprocess.Popen(command)
    last = {}
    while child.poll() is None:
        for pid, value in cpu_by_pid().items():
            if pid not in before:
                last[pid] = value
        time.sleep(args.interval)
    totals = {}
    for name, seconds in last.values():
        count, total = totals.get(name, (0, 0.0))
        totals[name] = (count + 1, total + seconds)
    with open(args.csv, "w", newline="") as f:
        out = csv.writer(f)
        out.writerow(["name", "processes", "cpu_seconds"])
        for name in sorted(totals):
            out.writerow([name, totals[name][0], "%.2f" % totals[name][1]])
    sys.exit(child.returncode)


if __name__ == "__main__":
    main()
