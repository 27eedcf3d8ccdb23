#!/usr/bin/env python3
"""CPU time of the processes a command starts, by process name.

    proc_cpu.py --csv FILE [--interval S] -- COMMAND [ARGS...]

Runs COMMAND and, every S seconds (default 0.1) until it exits, reads
/proc/PID/stat of COMMAND and all its descendants (this tool makes itself
their subreaper, so orphans stay in its tree; descendants in other network
namespaces count too, they share the PID namespace); writes CSV
name,processes,cpu_seconds (user + system, summed over the processes of
that name, each at the last value seen).  A process's last interval
before it exits is not seen: run a short and a long job and take the
difference to cancel that and the start-up.  Exits with COMMAND's status.
"""
import argparse
import csv
import ctypes
import os
import subprocess
import sys
import time

TICKS = os.sysconf("SC_CLK_TCK")
PR_SET_CHILD_SUBREAPER = 36


def descendants_cpu():
    """{pid: (name, cpu seconds)} of every descendant of this process."""
    stats = {}
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
        stats[int(entry)] = (int(fields[1]), name,
                             (int(fields[11]) + int(fields[12])) / TICKS)
    children = {}
    for pid, (ppid, _, _) in stats.items():
        children.setdefault(ppid, []).append(pid)
    found, todo = {}, list(children.get(os.getpid(), []))
    while todo:
        pid = todo.pop()
        found[pid] = stats[pid][1:]
        todo += children.get(pid, [])
    return found


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--csv", required=True)
    ap.add_argument("--interval", type=float, default=0.1)
    ap.add_argument("command", nargs=argparse.REMAINDER)
    args = ap.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command or args.interval <= 0:
        ap.error("a command after --, and an interval above 0")
    if ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1) != 0:
        sys.exit("proc_cpu.py: prctl(PR_SET_CHILD_SUBREAPER): %s"
                 % os.strerror(ctypes.get_errno()))
    child = subprocess.Popen(command)
    last = {}
    while child.poll() is None:
        last.update(descendants_cpu())
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
