#!/usr/bin/env python3
"""gridcoll-sched command line: exact CSV, tables, --help, bad arguments.

The expected rows for FT(2;4,2) are the paper's Fig. 1-3 example
(Prisacari et al. §2-3.2): 8 tasks, halves of 4; XOR sends nothing across
the bisection in phases 0-3 and everything in 4-7, LIN sends
N - |2p - N|, OPT exactly N/2 = 4 (B_min(1) = 2 per half) in every phase.
"""

import os
import subprocess

from harness import BIN, check, main

SCHED = os.path.join(BIN, "gridcoll-sched")


def run(*args):
    return subprocess.run([SCHED] + list(args), stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, timeout=60)


def csv_lines(*args):
    r = run(*args)
    check(r.returncode == 0 and r.stderr == "",
          "%s: exit %d, stderr %r" % (" ".join(args), r.returncode, r.stderr))
    return r.stdout.splitlines()


def rows(text):
    return text.split()


def alltoall_csv_exact():
    header = "phase,level,crossing,max_link_load,bmin"
    expected = {
        "opt": rows("""
            0,0,6,1,1 0,1,4,2,2 1,0,8,1,1 1,1,4,2,2 2,0,7,1,1 2,1,4,2,2
            3,0,7,1,1 3,1,4,2,2 4,0,8,1,1 4,1,4,2,2 5,0,6,1,1 5,1,4,2,2
            6,0,7,1,1 6,1,4,2,2 7,0,7,1,1 7,1,4,2,2"""),
        "xor": rows("""
            0,0,0,0,1 0,1,0,0,2 1,0,8,1,1 1,1,0,0,2 2,0,8,1,1 2,1,0,0,2
            3,0,8,1,1 3,1,0,0,2 4,0,8,1,1 4,1,8,4,2 5,0,8,1,1 5,1,8,4,2
            6,0,8,1,1 6,1,8,4,2 7,0,8,1,1 7,1,8,4,2"""),
        "lin": rows("""
            0,0,0,0,1 0,1,0,0,2 1,0,8,1,1 1,1,2,1,2 2,0,8,1,1 2,1,4,2,2
            3,0,8,1,1 3,1,6,3,2 4,0,8,1,1 4,1,8,4,2 5,0,8,1,1 5,1,6,3,2
            6,0,8,1,1 6,1,4,2,2 7,0,8,1,1 7,1,2,1,2"""),
    }
    for pattern, want in expected.items():
        got = csv_lines("alltoall", "--pattern", pattern, "--fattree", "4,2",
                        "--csv")
        check(got == [header] + want,
              "%s on FT(2;4,2):\n%s" % (pattern, "\n".join(got)))
    # --opt=value works as well as --opt value
    got = csv_lines("alltoall", "--pattern=opt", "--fattree=4,2", "--csv")
    check(got == [header] + expected["opt"], "--opt=value form differs")


def alltoall_section_5_2():
    # N = 16 on the Table 1 tree XGFT[3: 4,2,2]: top level is level 2
    for pattern, want in (
            ("xor", [0] * 8 + [16] * 8),
            ("lin", [16 - abs(2 * p - 16) for p in range(16)]),
            ("opt", [8] * 16)):
        got = csv_lines("alltoall", "--pattern", pattern, "--fattree",
                        "4,2,2", "--csv")[1:]
        top = [int(line.split(",")[2]) for line in got
               if line.split(",")[1] == "2"]
        check(top == want, "%s top-level crossing %r" % (pattern, top))
        loads = [line.split(",") for line in got]
        if pattern == "opt":
            check(all(int(f[3]) <= int(f[4]) for f in loads),
                  "opt above B_min: %r" % loads)


def allgather_csv_exact():
    header = "phase,op,distance,messages,max_downlink_contention"
    got = csv_lines("allgather", "--strategy", "kshift", "--k", "3",
                    "--kary", "2", "--levels", "3", "--csv")
    want = [header] + rows("""
        0,shift,-1,8,1 1,shift,1,8,1 2,shift,3,8,1 3,shift,-1,8,1
        4,shift,1,8,1 5,shift,3,8,1 6,shift,-1,8,1""")
    check(got == want, "kshift K=3 on 2-ary 3-tree:\n" + "\n".join(got))
    # a hole at leaf 2: 7 ranks, prefix-send idles one rank per phase and
    # contends in 5 of its 7 phases
    got = csv_lines("allgather", "--strategy", "prefix", "--kary", "2",
                    "--levels", "3", "--holes", "2", "--csv")
    want = [header] + rows("""
        0,xor,1,6,1 1,xor,2,6,2 2,xor,3,6,1 3,xor,4,6,2 4,xor,5,6,2
        5,xor,6,6,2 6,xor,7,6,2""")
    check(got == want, "prefix with hole 2:\n" + "\n".join(got))
    # the paper's kShift, K = 8, on a 4-ary 3-tree: congestion free; with
    # leaf 5 missing only the -4 and +8 phases contend
    for holes, contended in (([], 0), (["--holes", "5"], 15)):
        got = csv_lines("allgather", "--strategy", "kshift", "--k", "8",
                        "--kary", "4", "--levels", "3", "--csv", *holes)
        loads = [line.split(",") for line in got[1:]]
        bad = [f for f in loads if f[4] != "1"]
        check(len(loads) == 64 - 1 - len(holes) // 2 and
              len(bad) == contended and
              all(f[2] in ("-4", "8") for f in bad),
              "kshift 8 holes %r: %r" % (holes, bad))


def tables():
    r = run("alltoall", "--pattern", "xor", "--fattree", "4,2")
    check(r.returncode == 0, "alltoall table failed: " + r.stderr)
    lines = r.stdout.splitlines()
    check(lines[0].startswith("alltoall xor on FT(2;4,2): 8 ranks, 8 phases"),
          "table title: %r" % lines[0])
    check(lines[1].split() == ["phase", "level", "crossing",
                               "max_link_load", "bmin"],
          "table header: %r" % lines[1])
    check(lines[-1].split() == ["1", "2", "4", "4"],
          "level 1 summary (bmin 2, worst 4, 4 phases over): %r" % lines[-1])
    r = run("allgather", "--strategy", "kshift", "--k", "8", "--kary", "4",
            "--levels", "3", "--holes", "5")
    check(r.returncode == 0, "allgather table failed: " + r.stderr)
    lines = r.stdout.splitlines()
    check("63 ranks, 62 phases" in lines[0] and "holes: 5" in lines[0],
          "allgather title: %r" % lines[0])
    check(lines[2].split()[:4] == ["0", "p-4", "63", "2"],
          "first phase row: %r" % lines[2])
    check(lines[-1] == "contended phases: 15 of 62 (worst down-link load 2)",
          "allgather summary: %r" % lines[-1])


def help_text():
    for args in (["--help"], ["-h"], ["alltoall", "--help"],
                 ["allgather", "--strategy", "ring", "--help"]):
        r = run(*args)
        check(r.returncode == 0 and r.stderr == "", "%r failed" % args)
        for word in ("--pattern", "--fattree", "--strategy", "--k", "--kary",
                     "--levels", "--holes", "--csv", "max_link_load",
                     "max_downlink_contention", "bmin"):
            check(word in r.stdout, "%r does not mention %s" % (args, word))


def bad_arguments():
    cases = [
        ([], "missing command"),
        (["scatter"], "scatter"),
        (["alltoall", "--fattree", "4,2"], "--pattern"),
        (["alltoall", "--pattern", "opt"], "--fattree"),
        (["alltoall", "--pattern", "best", "--fattree", "4,2"], "--pattern"),
        (["alltoall", "--pattern", "opt", "--fattree", "4,x"], "--fattree"),
        (["alltoall", "--pattern", "opt", "--fattree", "4,0"], "--fattree"),
        (["alltoall", "--pattern", "opt", "--fattree", "256,256"],
         "--fattree"),
        (["alltoall", "--pattern", "opt", "--fattree"], "--fattree"),
        (["alltoall", "--pattern", "opt", "--fattree", "4,2", "--kary", "4"],
         "--kary"),
        (["alltoall", "--pattern", "opt", "--fattree", "4,2", "--color"],
         "--color"),
        (["alltoall", "--pattern", "opt", "--fattree", "4,2", "--csv=yes"],
         "--csv"),
        (["allgather", "--kary", "4", "--levels", "3"], "--strategy"),
        (["allgather", "--strategy", "tree", "--kary", "4", "--levels", "3"],
         "--strategy"),
        (["allgather", "--strategy", "kshift", "--kary", "4", "--levels",
          "3"], "--k"),
        (["allgather", "--strategy", "kshift", "--k", "0", "--kary", "4",
          "--levels", "3"], "--k"),
        (["allgather", "--strategy", "kprefix", "--k", "3", "--kary", "4",
          "--levels", "3"], "--k"),
        (["allgather", "--strategy", "kprefix", "--k", "8", "--kary", "4",
          "--levels", "3", "--holes", "5"], "--k"),
        (["allgather", "--strategy", "ring", "--kary", "1", "--levels", "3"],
         "--kary"),
        (["allgather", "--strategy", "ring", "--levels", "3"], "--kary"),
        (["allgather", "--strategy", "ring", "--kary", "4", "--levels", "x"],
         "--levels"),
        (["allgather", "--strategy", "ring", "--kary", "4"], "--levels"),
        (["allgather", "--strategy", "ring", "--kary", "4", "--levels", "3",
          "--holes", "64"], "--holes"),
        (["allgather", "--strategy", "ring", "--kary", "4", "--levels", "3",
          "--holes", "1,,2"], "--holes"),
        (["allgather", "--strategy", "ring", "--kary", "4", "--levels", "3",
          "--holes", "7,7"], "--holes"),
        (["allgather", "--strategy", "ring", "--kary", "4", "--levels", "3",
          "--fattree", "4,2"], "--fattree"),
    ]
    for args, name in cases:
        r = run(*args)
        lines = r.stderr.splitlines()
        check(r.returncode == 2 and r.stdout == "" and len(lines) == 1 and
              lines[0].startswith("gridcoll-sched: ") and name in lines[0],
              "%r: exit %d, stderr %r" % (args, r.returncode, r.stderr))


if __name__ == "__main__":
    main([("alltoall_csv_exact", alltoall_csv_exact),
          ("alltoall_section_5_2", alltoall_section_5_2),
          ("allgather_csv_exact", allgather_csv_exact),
          ("tables", tables),
          ("help_text", help_text),
          ("bad_arguments", bad_arguments)])
