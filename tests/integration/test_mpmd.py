#!/usr/bin/env python3
"""MPMD jobs: gridrun's ':' segments and the machine file's program=, the
MPI_APPNUM every rank sees (numbered over every site, MPI 4.1 section
11.10.3), the coupled example (examples/coupled, docs/coupling.md), and
bad MPMD command lines, refused before anything starts.

Three groups, each its own CTest test:
  local      tests/mpi/appnum_check on 2 and 3 sites of uneven sizes,
             linked and with --preload, in local and machine-file mode;
             the coupled example on one site; bad input;
  intercomm  the coupled example across sites: atm on one site and ocn on
             another, and 3 sites of uneven sizes (needs intercommunicators
             across sites);
  wan        the README's command, the coupled example over gridrun --wan
             (needs root).
"""

import os
import re
import shutil
import subprocess
import sys
import tempfile
import uuid

from harness import (BIN, Skip, check, gridrun, machine_file, main,
                     need_wan_devices)

GRIDRUN = os.path.join(BIN, "gridrun")
APPNUM = os.path.join(BIN, "appnum_check")
APPNUM_PLAIN = os.path.join(BIN, "appnum_check_plain")
ATM = os.path.join(BIN, "atm")
OCN = os.path.join(BIN, "ocn")
HERE = os.path.dirname(os.path.abspath(__file__))
FAKE_RSH = os.path.join(HERE, "gridrun", "fake-rsh.sh")

LINE = re.compile(r"^rank (\d+) appnum (\d+) attr (\d+) split (\d+)/(\d+)"
                  r"((?: \S+)*)$", re.M)


def appnums(layout, program, want):
    """Run appnum_check as `program` (the words after '--'); every rank's
    line must be exactly `want`: grid rank -> (appnum, rank in its
    application, size of it, its arguments)."""
    rc, out, err = gridrun(layout, program, timeout=60)
    check(rc == 0, "exit %d: %s" % (rc, err))
    got = {int(m[0]): (int(m[1]), int(m[3]), int(m[4]), m[5].split())
           for m in LINE.findall(out)}
    for m in LINE.findall(out):
        check(m[1] == m[2], "MPI_Comm_get_attr and MPI_Attr_get disagree: "
              "%r" % (m,))
    check(got == want and len(LINE.findall(out)) == len(want),
          "%r:\ngot  %r\nwant %r\n%s" % (program, got, want, out))


def ranks(layout):
    """grid rank -> (appnum, rank in app, app size, args) for apps given as
    (size, args) in order."""
    want, rank = {}, 0
    for appnum, (size, args) in enumerate(layout):
        for i in range(size):
            want[rank] = (appnum, i, size, args)
            rank += 1
    return want


def appnum_segments():
    # Boundaries inside alpha (0 | 1) and gamma (3 | 4); application 1
    # spans three sites.
    appnums(["--site-sizes", "2,1,2"],
            ["-n", "1", APPNUM, "a", "-x", ":", "-n", "3", APPNUM, "b", ":",
             "-n", "1", APPNUM, "c"],
            ranks([(1, ["a", "-x"]), (3, ["b"]), (1, ["c"])]))
    # Two programs on one site, the other site running one of them.
    appnums(["--site-sizes", "3,2", "--preload"],
            ["-n", "2", APPNUM_PLAIN, "x", ":", "-n", "3", APPNUM_PLAIN,
             "y"],
            ranks([(2, ["x"]), (3, ["y"])]))
    # Without -n on the command line, the segments' -n give NP.
    appnums(["--sites", "2"],
            ["-n", "1", APPNUM, "p", ":", "-n", "3", APPNUM, "q"],
            ranks([(1, ["p"]), (3, ["q"])]))


def appnum_sites():
    """One segment per site, without -n."""
    appnums(["--site-sizes", "1,3"], [APPNUM, "atm", ":", APPNUM, "ocn"],
            ranks([(1, ["atm"]), (3, ["ocn"])]))
    appnums(["--site-sizes", "2,1,3", "--preload"],
            [APPNUM_PLAIN, "u", ":", APPNUM_PLAIN, "v", ":", APPNUM_PLAIN,
             "w"],
            ranks([(2, ["u"]), (1, ["v"]), (3, ["w"])]))


def appnum_single():
    """A single program is application 0, as under plain mpiexec."""
    appnums(["--site-sizes", "3,2"], [APPNUM, "s"], ranks([(5, ["s"])]))
    appnums(["--site-sizes", "1,3", "--preload"], [APPNUM_PLAIN],
            ranks([(4, [])]))


# alpha runs atm (ranks on two hosts), beta ocn, gamma the command line's
# program; delta's program= is that of a site without ranks at -n 6.
MPMD_MACHINES = """
nodeA1 cluster=alpha slots=1 program={prog} atm -x   # the rest of the line
gwA    cluster=alpha relay slots=1 wan=WAN1 local=WAN2
gwB    cluster=beta relay slots=3 wan=WAN3 program={prog} ocn
gwC    cluster=gamma relay slots=2 wan=WAN4
gwD    cluster=delta relay slots=1 wan=WAN5 program=/nonexistent
"""


def machinefile():
    for prog, extra in ((APPNUM, []), (APPNUM_PLAIN, ["--preload"])):
        d, path = machine_file(MPMD_MACHINES.format(prog=prog))
        try:
            mf = ["-f", path, "--rsh", FAKE_RSH, "--plaintext-wan"] + extra
            appnums(mf + ["-n", "6"], [prog, "cmd"],
                    ranks([(2, ["atm", "-x"]), (3, ["ocn"]), (1, ["cmd"])]))
            # Consecutive sites with the same command are one application;
            # without a program after '--', every site needs program=.
            appnums(mf + ["-n", "4"], [], ranks([(2, ["atm", "-x"]),
                                                 (2, ["ocn"])]))
        finally:
            shutil.rmtree(d, ignore_errors=True)


# Segments on the command line in machine-file mode: alpha's hosts run
# application 0 and the first rank of application 1 (hydra fills the
# hosts across its own segments as the grid numbers ranks).
HOSTS_MACHINES = """
nodeA1 cluster=alpha slots=1
gwA    cluster=alpha relay wan=WAN1 local=WAN2
nodeA2 cluster=alpha slots=2
gwB    cluster=beta relay slots=2 wan=WAN3
"""
WHERE = ('echo "%s $GRIDCOLL_SITE_NAME $GRIDRUN_TEST_HOST $PMI_RANK '
         '$GRIDCOLL_APPNUM"')


def machinefile_hosts():
    d, path = machine_file(HOSTS_MACHINES)
    try:
        rc, out, err = gridrun(
            ["-f", path, "--rsh", FAKE_RSH, "--plaintext-wan",
             "--no-join-check"],
            ["-n", "2", "sh", "-c", WHERE % "a", ":", "-n", "3", "sh", "-c",
             WHERE % "b"], timeout=60)
        check(rc == 0, "exit %d: %s" % (rc, err))
        want = ["a alpha nodeA1 0 0", "a alpha nodeA2 1 0",
                "b alpha nodeA2 2 1", "b beta gwB 0 1", "b beta gwB 1 1"]
        check(sorted(out.splitlines()) == want, "got\n%s" % out)
    finally:
        shutil.rmtree(d, ignore_errors=True)


def refused(args, text, program_words=True):
    """gridrun must stop before it starts anything: exit 2, `text` in its
    message, no job directory made and no process of ours left."""
    marker = "mpmd-" + uuid.uuid4().hex
    tmp = tempfile.mkdtemp(prefix="gr-")
    try:
        r = subprocess.run([GRIDRUN] + args + ([marker] if program_words
                                               else []),
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True, timeout=30,
                           env=dict(os.environ, TMPDIR=tmp))
        check(r.returncode == 2 and text in r.stderr,
              "%r: exit %d, %r (want %r)" % (args, r.returncode, r.stderr,
                                             text))
        check(os.listdir(tmp) == [], "%r: started a job: %r" %
              (args, os.listdir(tmp)))
        left = subprocess.run(["pgrep", "-af", marker],
                              stdout=subprocess.PIPE, text=True).stdout
        check([l for l in left.splitlines() if "pgrep" not in l] == [],
              "left behind: " + left)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def bad_input():
    s22 = ["--site-sizes", "2,2", "--"]
    # Segments that do not match the sites.
    refused(s22 + [APPNUM, ":", APPNUM, ":", APPNUM],
            "3 segments without -n but 2 sites: give one segment per site")
    refused(s22 + ["-n", "1", APPNUM, ":", "-n", "2", APPNUM],
            "the segments' -n add up to 3 ranks but the job has 4")
    refused(["--sites", "2", "-n", "5", "--", "-n", "1", APPNUM, ":", "-n",
             "3", APPNUM], "the segments' -n add up to 4 ranks but the job "
            "has 5")
    refused(s22 + ["-n", "2", APPNUM, ":", APPNUM],
            "segment 2 has no -n but segment 1 has one")
    refused(["--sites", "3", "--", "-n", "2", APPNUM, ":", "-n", "0",
             APPNUM], "segment 2: -n must be 1..16777216, not '0'")
    # ':' with nothing after it, or before it; -n without a program.
    refused(s22 + [APPNUM, ":"], "segment 2 has no program", False)
    refused(s22 + [":", APPNUM], "segment 1 has no program")
    refused(s22 + [APPNUM, ":", "-n", "2"], "segment 2 has no program",
            False)
    refused(s22 + ["-np", "2", APPNUM], "segment 1: '-np' is not a program")
    # A program that does not exist, found before the relays start.
    refused(s22 + [APPNUM, ":", "/nonexistent/ocn"],
            "/nonexistent/ocn: program not found or not executable "
            "(segment 2)")
    refused(["--site-sizes", "2,2", "--"], "no program given", False)
    # Machine files: a site without a program, program= twice, program=
    # with segments.
    d, path = machine_file(MPMD_MACHINES.format(prog=APPNUM))
    try:
        mf = ["-f", path, "--rsh", FAKE_RSH, "--plaintext-wan"]
        refused(mf + ["-n", "6", "--"], "site 'gamma' has no program: give "
                "its lines a program=PATH, or a program after '--'", False)
        refused(mf + ["-n", "6", "--", APPNUM, ":", APPNUM],
                "program= in the machine file and ':' segments")
        with open(path, "a") as f:
            f.write("nodeB2 cluster=beta program=%s again\n"
                    "nodeB3 cluster=beta program=\n" % APPNUM)
        refused(mf + ["-n", "6", "--", APPNUM],
                "site 'beta' already has program= (line 4)")
        refused(mf + ["-n", "6", "--", APPNUM],
                "key 'program' needs a value (program=PATH ARGS...)")
    finally:
        shutil.rmtree(d, ignore_errors=True)


def coupled_checksum(model, steps, points):
    """What the other model's ranks add up (coupler.c, check_field): the
    sum, mod 2^64, of 4 x every value `model` sends."""
    total = 0
    for step in range(steps):
        total += points * (((model + 1) << 32) + step * 1000003)
        total += points * (points - 1) // 2
    return total % (1 << 64)


def coupled(layout, program, sizes, steps, points):
    """The coupled example as `program`; atm and ocn with `sizes` ranks
    must each report every received value exact and the checksum of what
    the other sent."""
    rc, out, err = gridrun(layout, program, timeout=120)
    check(rc == 0, "exit %d: %s%s" % (rc, out, err))
    for model, name, other in ((0, "atm", "ocn"), (1, "ocn", "atm")):
        m = re.search(r"^%s: appnum (\d+), (\d+) ranks, coupled to %s "
                      r"\((\d+) ranks\): (\d+) steps x (\d+) points "
                      r"received, (\d+) wrong, checksum (\d+)," %
                      (name, other), out, re.M)
        check(m is not None, "no %s summary:\n%s" % (name, out))
        want = (model, sizes[model], sizes[1 - model], steps, points, 0,
                coupled_checksum(1 - model, steps, points))
        got = tuple(int(x) for x in m.groups())
        check(got == want, "%s: got %r want %r" % (name, got, want))


def coupled_one_site():
    """Both programs on one site (MPICH's own intercommunicators)."""
    coupled(["--site-sizes", "4"],
            ["-n", "3", ATM, "--steps", "7", "--points", "1001", ":", "-n",
             "1", OCN, "--steps", "7", "--points", "1001"],
            (3, 1), 7, 1001)


def coupled_mismatch():
    """The two programs started with different grids stop with a message
    that says so, and nothing is left behind."""
    rc, out, err = gridrun(["--site-sizes", "2"],
                           ["-n", "1", ATM, "--points", "10", ":", "-n", "1",
                            OCN, "--points", "11"], timeout=60)
    check(rc == 1 and "started with --points 10 --steps 10 but ocn with "
          "--points 11 --steps 10" in err, "exit %d: %s" % (rc, err))
    rc, out, err = gridrun(["--site-sizes", "2"],
                           ["-n", "1", ATM, ":", "-n", "1", ATM], timeout=60)
    check(rc == 1 and "the other program is atm as well" in err,
          "exit %d: %s" % (rc, err))


def coupled_2_sites():
    """atm on alpha, ocn on beta: the intercommunicator crosses the WAN."""
    coupled(["--site-sizes", "2,2"],
            [ATM, "--steps", "20", "--points", "999", ":", OCN, "--steps",
             "20", "--points", "999"], (2, 2), 20, 999)


def coupled_3_sites():
    """Uneven: atm on 2 of alpha's 3 ranks, ocn on alpha's third, beta's
    and gamma's (4 ranks on 3 sites)."""
    coupled(["--site-sizes", "3,1,2"],
            ["-n", "2", ATM, "--steps", "12", "--points", "1000", ":", "-n",
             "4", OCN, "--steps", "12", "--points", "1000"],
            (2, 4), 12, 1000)


def coupled_wan():
    """The README's command."""
    need_wan_devices((("ip", "iproute2"),))
    coupled(["--site-sizes", "2,2", "--wan", "delay=10ms,rate=1gbit"],
            [ATM, ":", OCN], (2, 2), 10, 1000)


GROUPS = {
    "local": [appnum_segments, appnum_sites, appnum_single, machinefile,
              machinefile_hosts, bad_input, coupled_one_site, coupled_mismatch],
    "intercomm": [coupled_2_sites, coupled_3_sites],
    "wan": [coupled_wan],
}

if __name__ == "__main__":
    group = GROUPS[sys.argv.pop(1)] if len(sys.argv) > 1 and \
        sys.argv[1] in GROUPS else sum(GROUPS.values(), [])
    main([(fn.__name__, fn) for fn in group])
