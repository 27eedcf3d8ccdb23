#!/usr/bin/env python3
"""libgridcoll's runtime through gridrun: the grid world (ranks and size),
a barrier that really waits across sites, unsupported calls that fail with
their name instead of running site-local, MPI_Abort, the single-site
pass-through, the same program built against plain MPICH with --preload,
and each site's fat tree (GRIDCOLL_FATTREE) as the ranks see it."""

import os
import re
import shutil
import signal
import subprocess
import time

from harness import BIN, SANITIZED, Skip, check, machine_file, main
from test_gridrun import FAKE_RSH, Job

GRIDRUN = os.path.join(BIN, "gridrun")
HELLO = os.path.join(BIN, "grid_hello")
HELLO_PLAIN = os.path.join(BIN, "grid_hello_plain")
SITE_FATTREE = os.path.join(BIN, "site_fattree")


def gridrun(args, program, timeout=45, env=None):
    # gridrun's own --timeout tears the job down cleanly; killing gridrun
    # from here instead would orphan its relays and ranks.
    r = subprocess.run([GRIDRUN, "--timeout", str(timeout)] + args + ["--"] +
                       program, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True, timeout=timeout + 30, env=env)
    check(r.returncode != 124, "job hung (gridrun timeout): " + r.stdout)
    return r.returncode, r.stdout, r.stderr


def lines(out, pattern):
    return sorted(l for l in out.splitlines() if re.match(pattern, l))


def grid_world_ranks():
    rc, out, err = gridrun(["--site-sizes", "1,3"], [HELLO])
    check(rc == 0, "exit %d: %s" % (rc, err))
    check(lines(out, r"rank \d+ of") ==
          ["rank %d of 4" % r for r in range(4)], "ranks: " + out)
    rc, out, err = gridrun(["--sites", "3", "-n", "5"], [HELLO])
    check(rc == 0 and lines(out, r"rank \d+ of") ==
          ["rank %d of 5" % r for r in range(5)], "3 sites: %s %s" % (out, err))


def barrier_spans_sites():
    # Rank 0 (site alpha) arrives 800 ms late: every rank of every site must
    # wait for it, which only a cross-site barrier can make happen.
    rc, out, err = gridrun(["--sites", "2", "-n", "4"], [HELLO, "late", "800"])
    check(rc == 0, "exit %d: %s" % (rc, err))
    waits = {int(m.group(1)): float(m.group(2))
             for m in re.finditer(r"rank (\d+) barrier_ms=(\d+)", out)}
    check(sorted(waits) == [0, 1, 2, 3], "barrier lines: " + out)
    for r in (1, 2, 3):
        check(waits[r] >= 700, "rank %d left the barrier after %.0f ms"
              % (r, waits[r]))


def unsupported_call_returns_error():
    """Each call's code names it; every unsupported call has GridColl's own
    error class (docs/gridcoll.md: MPICH 4.0.2 loses the string of a code
    added to a predefined class)."""
    rc, out, err = gridrun(["--sites", "2", "-n", "2"], [HELLO, "unsupported"])
    check(rc == 0, "exit %d: %s" % (rc, err))
    want = []
    for r in (0, 1):
        for call in ("MPI_Win_create", "MPI_Win_allocate"):
            want += ["rank %d %s rc=error: %s is not supported on a "
                     "communicator that spans sites (GridColl)" % (r, call, call),
                     "rank %d %s class: MPI call not supported across "
                     "sites (GridColl)" % (r, call)]
    check(lines(out, r"rank \d MPI_Win") == sorted(want),
          "errors:\n%s\nwant:\n%s" % (out, "\n".join(sorted(want))))


def unsupported_call_fatal_by_default():
    rc, out, err = gridrun(["--sites", "2", "-n", "2"], [HELLO, "fatal"])
    check(rc != 0, "job survived a fatal error")
    check("MPI_Win_create is not supported on a communicator that spans sites"
          in out + err, "fatal message does not name the call: " + err)
    check("survived" not in out, "a rank went on after MPI_Win_create")


def abort_ends_the_grid_job():
    rc, out, err = gridrun(["--sites", "2", "-n", "3"], [HELLO, "abort", "7"])
    check(rc == 7, "exit status %d, want 7: %s" % (rc, err))
    check("grid rank 2 called MPI_Abort(7)" in err, "no abort message: " + err)


def pids(pattern):
    r = subprocess.run(["pgrep", "-f", pattern], stdout=subprocess.PIPE,
                       text=True)
    return [int(p) for p in r.stdout.split()]


def relay_pid(job, site):
    found = pids("gridrelay -c " + job.tmp + ".*/" + site + ".conf")
    return found[0] if found else None


def rank_exits_with_status_3():
    # The last rank (site beta) leaves without MPI_Finalize while every
    # other rank waits for it across the relays: the job must end with its
    # status, say where, and leave nothing behind.
    start = time.time()
    # exec: the rank is grid_hello itself, not a shell that a signal may
    # end before it reports its child's status.
    job = Job(["--site-sizes", "2,2"], "exec " + HELLO + ' die 3 "$0"',
              mpi=True)
    try:
        rc = job.wait(30)
        # mpiexec's own status is 3, or 9 when the SIGKILL hydra sends the
        # rank's site-mates wins the race; gridrun reports the rank's.
        check(rc == 3, "exit %d: %s" % (rc, job.err))
        check(re.search(r"gridrun: site beta: rank 3 exited with status 3"
                        r"( \(mpiexec exited with status [39]\))?\n",
                        job.err), "message does not say where: " + job.err)
        check(time.time() - start < 20, "teardown took %.0f s"
              % (time.time() - start))
    finally:
        job.finish()


def relay_stopped_mid_job(sig):
    """Every rank waits in MPI_Recv when site beta's relay is stopped from
    outside gridrun (SIGKILL: it dies; SIGTERM: it drains and ends every
    session): the ranks of alpha lose their peer site, beta's their relay.
    gridrun must exit 1 within 10 s with no process left, naming beta's
    relay and its log; a rank of beta that reports it first names the
    relay it lost and where it was."""
    job = Job(["--site-sizes", "2,2"], HELLO + ' hang "$0"', mpi=True)
    try:
        deadline = time.time() + 30
        while (len(pids(HELLO + " hang " + job.marker)) < 4 and
               time.time() < deadline):
            time.sleep(0.2)
        time.sleep(1.5)  # past MPI_Init, into MPI_Recv
        pid = relay_pid(job, "beta")
        check(pid is not None, "relay of beta not found")
        jobdir = job.job_dir()
        os.kill(pid, sig)
        killed = time.time()
        rc = job.wait(30)
        check(rc == 1, "exit %d: %s" % (rc, job.err))
        check(time.time() - killed < 10, "gridrun took %.1f s to stop"
              % (time.time() - killed))
        log = os.path.join(jobdir, "beta.log")
        # SIGTERM: gridrun finds the relay still draining, or (under ASan,
        # where the ranks fail later) already exited after its drain.
        want = (re.escape("gridrun: relay of site beta died while ranks ran "
                          "(killed by signal SIGKILL); see %s\n" % log)
                if sig == signal.SIGKILL else
                re.escape("gridrun: relay of site beta was stopped while "
                          "ranks ran (it ") +
                r"(is draining|drained and exited)" +
                re.escape(": a signal from outside gridrun); see %s\n" % log))
        check(re.search(want, job.err), "gridrun's message: " + job.err)
        why = (r"(connection closed|Connection reset by peer)"
               if sig == signal.SIGKILL else r"relay is shutting down")
        for line in job.err.splitlines():
            if re.match(r"gridcoll: grid rank [23] ", line):
                check(re.fullmatch(
                    r"gridcoll: grid rank [23] \(site beta\): [a-z ]+: lost "
                    r"the connection to site beta's relay \(unix:%s\): %s"
                    % (re.escape(os.path.join(jobdir, "beta.sock")), why),
                    line), "rank's message: %r" % line)
        if sig == signal.SIGTERM:
            check("lost the connection to site beta's relay" in job.err,
                  "no rank of beta named its relay: " + job.err)
    finally:
        job.finish()


def relay_killed_mid_job():
    relay_stopped_mid_job(signal.SIGKILL)


def relay_stopped_from_outside():
    relay_stopped_mid_job(signal.SIGTERM)


def single_site_passes_through():
    rc, out, err = gridrun(["--sites", "1", "-n", "2"], [HELLO, "unsupported",
                                                         "thread"])
    check(rc == 0, "exit %d: %s" % (rc, err))
    check(lines(out, r"rank \d+ of") == ["rank 0 of 2", "rank 1 of 2"], out)
    check("rank 0 MPI_Win_create rc=success" in out,
          "MPI_Win_create not passed through")
    check("rank 0 thread level multiple" in out, "thread level capped: " + out)


def thread_level_is_honest():
    # MPI_THREAD_MULTIPLE across sites is what MPICH gives (integration.
    # mpi_thread checks that it is kept).
    rc, out, err = gridrun(["--sites", "2", "-n", "2"], [HELLO, "thread"])
    check(rc == 0, "exit %d: %s" % (rc, err))
    check(lines(out, r"rank \d thread") ==
          ["rank 0 thread level multiple", "rank 1 thread level multiple"],
          "thread level: " + out)


def preload_into_plain_mpich_program():
    if SANITIZED:
        raise Skip("instrumented libgridcoll.so cannot be preloaded into "
                   "uninstrumented programs; covered by the release build")
    rc, out, err = gridrun(["--sites", "2", "-n", "3", "--preload"],
                           [HELLO_PLAIN, "late", "500", "unsupported"])
    check(rc == 0, "exit %d: %s" % (rc, err))
    check(lines(out, r"rank \d+ of") == ["rank %d of 3" % r for r in range(3)],
          "preloaded ranks: " + out)
    check("rank 2 MPI_Win_create rc=error: MPI_Win_create is not supported"
          in out,
          "preloaded library does not interpose: " + out)
    # Without --preload the plain binary never joins the grid: gridrun
    # stops the job and names the ranks of the site that ended first (or
    # of both) ...
    rc, out, err = gridrun(["--sites", "2", "-n", "3"], [HELLO_PLAIN])
    check(rc == 125 and re.search(r"^gridrun: site (alpha: ranks 0-1|beta: "
                                  r"rank 2) never joined the grid", err,
                                  re.M), "plain run: exit %d: %s" % (rc, err))
    # ... and with --no-join-check it runs as one MPICH job per site, each
    # seeing only its own world.
    rc, out, err = gridrun(["--sites", "2", "-n", "3", "--no-join-check"],
                           [HELLO_PLAIN])
    check(rc == 0 and "rank 0 of 2" in out and "rank 0 of 1" in out,
          "plain run: " + out)


def fattree_env():
    """gridrun's environment without a GRIDCOLL_FATTREE of the caller's."""
    env = dict(os.environ)
    env.pop("GRIDCOLL_FATTREE", None)
    return env


def expect_fattrees(args, env, want):
    """Every rank of the job prints its site's fat tree: `want` lists
    (site, tree) per grid rank, tree "none" when the rank has none."""
    rc, out, err = gridrun(args, [SITE_FATTREE], env=env)
    check(rc == 0, "%r: exit %d: %s" % (args, rc, err))
    check(lines(out, r"rank \d+ site ") ==
          sorted("rank %d site %s fattree %s" % (rank, site, tree)
                 for rank, (site, tree) in enumerate(want)),
          "%r: %s" % (args, out))


def fattree_local_mode():
    # --fattree is every site's; it outranks gridrun's own environment,
    # which otherwise reaches every site.
    env = fattree_env()
    expect_fattrees(["--sites", "2", "-n", "3", "--fattree", "4,2"], env,
                    [("alpha", "4,2"), ("alpha", "4,2"), ("beta", "4,2")])
    expect_fattrees(["--site-sizes", "1,2"], env,
                    [("alpha", "none"), ("beta", "none"), ("beta", "none")])
    env["GRIDCOLL_FATTREE"] = "8"
    expect_fattrees(["--site-sizes", "1,1"], env,
                    [("alpha", "8"), ("beta", "8")])
    expect_fattrees(["--site-sizes", "1,1", "--fattree", "2,3"], env,
                    [("alpha", "2,3"), ("beta", "2,3")])


# alpha gives its fat tree on two lines (the same), beta gives none.
FATTREE_SITES = """
nodeA1 cluster=alpha slots=1 fattree=2,2
gwA    cluster=alpha relay slots=1 wan=WAN1 local=WAN2 fattree=2,2
gwB    cluster=beta relay slots=2 wan=WAN3
"""


def fattree_machine_file():
    d, path = machine_file(FATTREE_SITES)
    args = ["-f", path, "-n", "4", "--rsh", FAKE_RSH, "--plaintext-wan"]
    try:
        env = fattree_env()
        expect_fattrees(args, env, [("alpha", "2,2"), ("alpha", "2,2"),
                                    ("beta", "none"), ("beta", "none")])
        # The user's own value reaches the site the machine file leaves
        # without one, and only that one.
        env["GRIDCOLL_FATTREE"] = "3"
        expect_fattrees(args, env, [("alpha", "2,2"), ("alpha", "2,2"),
                                    ("beta", "3"), ("beta", "3")])
    finally:
        shutil.rmtree(d, ignore_errors=True)


def fattree_malformed_is_fatal():
    rc, out, err = gridrun(["--sites", "2", "-n", "2"], [SITE_FATTREE],
                           env=dict(os.environ, GRIDCOLL_FATTREE="4,0"))
    check(rc != 0, "job ran with GRIDCOLL_FATTREE=4,0: " + out)
    check("gridcoll: GRIDCOLL_FATTREE='4,0' is not a fat tree M1,...,ML: "
          "arity M2 = 0 is not positive" in err, "message: " + err)
    check("fattree" not in out, "a rank got past MPI_Init: " + out)


if __name__ == "__main__":
    main([("grid_world_ranks", grid_world_ranks),
          ("barrier_spans_sites", barrier_spans_sites),
          ("unsupported_call_returns_error", unsupported_call_returns_error),
          ("unsupported_call_fatal_by_default",
           unsupported_call_fatal_by_default),
          ("abort_ends_the_grid_job", abort_ends_the_grid_job),
          ("rank_exits_with_status_3", rank_exits_with_status_3),
          ("relay_killed_mid_job", relay_killed_mid_job),
          ("relay_stopped_from_outside", relay_stopped_from_outside),
          ("single_site_passes_through", single_site_passes_through),
          ("thread_level_is_honest", thread_level_is_honest),
          ("preload_into_plain_mpich_program",
           preload_into_plain_mpich_program),
          ("fattree_local_mode", fattree_local_mode),
          ("fattree_machine_file", fattree_machine_file),
          ("fattree_malformed_is_fatal", fattree_malformed_is_fatal)])
