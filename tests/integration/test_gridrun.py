#!/usr/bin/env python3
"""gridrun local mode: rank environment, output forwarding, exit statuses,
failure handling and teardown (no process may outlive gridrun).

No MPI program exists yet, so the ranks are shell commands that mpiexec
launches; each carries a unique marker argument so leftovers can be found
with pgrep.
"""

import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
import uuid

from harness import BIN, SANITIZED, Skip, check, main

GRIDRUN = os.path.join(BIN, "gridrun")
ENV_LINE = ('echo "$GRIDCOLL_SITE_NAME $GRIDCOLL_SITE_INDEX '
            '$GRIDCOLL_SITE_OFFSET $GRIDCOLL_SITE_SIZE $PMI_RANK '
            '$GRIDCOLL_WORLD_SIZE $GRIDCOLL_SITES"; '
            'test -S "${GRIDCOLL_RELAY#unix:}" && '
            'test -f "$GRIDCOLL_TOKEN_FILE" && '
            'test -n "$GRIDCOLL_JOB_ID" && echo "ok $GRIDCOLL_SITE_NAME"')


class Job:
    """One gridrun run with its own TMPDIR, so its job directory is ours to
    inspect and remove."""

    def __init__(self, args, program):
        self.marker = "gridrun-test-" + uuid.uuid4().hex
        self.tmp = tempfile.mkdtemp(prefix="gr-")
        env = dict(os.environ, TMPDIR=self.tmp)
        # The marker is $0 of the shell, so it shows in every rank's
        # command line.
        self.proc = subprocess.Popen(
            [GRIDRUN] + args + ["--", "sh", "-c", program, self.marker],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            env=env, start_new_session=True)
        self.out = self.err = ""

    def wait(self, timeout=30):
        try:
            self.out, self.err = self.proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.out, self.err = self.proc.communicate()
            raise AssertionError("gridrun hung; stderr:\n" + self.err)
        return self.proc.returncode

    def job_dir(self):
        names = os.listdir(self.tmp)
        return os.path.join(self.tmp, names[0]) if names else None

    def leftovers(self):
        """Processes of this job still alive after gridrun exited."""
        found = []
        for pattern in (self.marker, "gridrelay -c " + self.tmp):
            r = subprocess.run(["pgrep", "-af", pattern],
                               stdout=subprocess.PIPE, text=True)
            found += [l for l in r.stdout.splitlines()
                      if "pgrep" not in l]
        return found

    def finish(self):
        # Give the kernel a moment to finish killing; then nothing may be
        # left, whatever else the test checked.
        deadline = time.time() + 2
        while self.leftovers() and time.time() < deadline:
            time.sleep(0.1)
        left = self.leftovers()
        shutil.rmtree(self.tmp, ignore_errors=True)
        check(not left, "processes left behind: %r" % left)


def run(args, program, timeout=30):
    job = Job(args, program)
    try:
        rc = job.wait(timeout)
        kept = job.job_dir()
    finally:
        job.finish()
    return rc, job.out, job.err, kept


def expect_env(args, sizes):
    rc, out, err, kept = run(args, ENV_LINE)
    check(rc == 0, "%r exited %d: %s" % (args, rc, err))
    check(kept is None, "job directory not removed after success")
    names = ["alpha", "beta", "gamma"]
    sites = []
    offset = 0
    for i, size in enumerate(sizes):
        sites.append((names[i], offset, size))
        offset += size
    sites_str = ",".join("%s:%d:%d" % s for s in sites)
    want = []
    for i, (name, off, size) in enumerate(sites):
        for r in range(size):
            want.append("%s %d %d %d %d %d %s" % (name, i, off, size, r,
                                                  offset, sites_str))
            want.append("ok " + name)
    got = sorted(out.splitlines())
    check(got == sorted(want), "%r: lines\n%s\nwant\n%s" %
          (args, "\n".join(got), "\n".join(sorted(want))))


def environment():
    expect_env(["--sites", "2", "-n", "4"], [2, 2])
    expect_env(["--sites", "2", "--site-sizes", "1,3"], [1, 3])
    expect_env(["--sites", "3", "-n", "5"], [2, 2, 1])


def prefix():
    rc, out, err, _ = run(["--site-sizes", "1,3", "--prefix"],
                          'echo "line of $PMI_RANK"; echo "e$PMI_RANK" >&2')
    check(rc == 0, "exit %d: %s" % (rc, err))
    want = ["[alpha/0] line of 0"] + ["[beta/%d] line of %d" % (r + 1, r)
                                      for r in range(3)]
    check(sorted(out.splitlines()) == want, "prefixed stdout:\n" + out)
    for r in range(4):
        check("[%s/%d] e" % ("alpha" if r == 0 else "beta", r) in err,
              "prefixed stderr:\n" + err)


def long_lines_stay_whole():
    # Many ranks writing long lines at once: every line arrives intact.
    prog = ('s=$(printf "%500s" "" | tr " " '
            '"$((GRIDCOLL_SITE_OFFSET + PMI_RANK))"); i=0; while [ $i -lt 50 ]; do '
            'printf "%s%04d\\n" "$s" $i; i=$((i+1)); done')
    rc, out, err, _ = run(["--sites", "2", "-n", "4"], prog)
    check(rc == 0, "exit %d: %s" % (rc, err))
    lines = out.splitlines()
    check(len(lines) == 200, "got %d lines" % len(lines))
    for line in lines:
        check(re.fullmatch(r"(\d)\1{499}\d{4}", line), "torn line %r" % line)
    for rank in range(4):
        check(sum(l.startswith(str(rank)) for l in lines) == 50,
              "lines of rank %d missing" % rank)


def exit_status():
    start = time.time()
    rc, out, err, kept = run(
        ["--site-sizes", "2,1"],
        'if [ "$GRIDCOLL_SITE_NAME" = beta ]; then exit 3; fi; sleep 60')
    check(rc == 3, "exit %d, stderr: %s" % (rc, err))
    check("gridrun: site beta: mpiexec exited with status 3" in err,
          "no failure message: " + err)
    check(kept is not None and "job directory kept" in err,
          "failed job's directory not kept")
    check(time.time() - start < 15, "teardown too slow")


def relay_dies():
    job = Job(["--sites", "2", "-n", "2", "--verbose"], "sleep 60")
    try:
        pid = None
        deadline = time.time() + 20
        while pid is None and time.time() < deadline:
            time.sleep(0.2)
            # --verbose goes to stderr, which we only read at the end: find
            # the relay through its config in the job directory instead.
            r = subprocess.run(["pgrep", "-f", "gridrelay -c " + job.tmp +
                                ".*/beta.conf"], stdout=subprocess.PIPE,
                               text=True)
            if r.stdout.strip() and job.job_dir() and any(
                    n.endswith(".sock") for n in os.listdir(job.job_dir())):
                pid = int(r.stdout.split()[0])
        check(pid is not None, "relay of beta not found")
        # Wait for the ranks: their shell is running once the marker shows.
        while (subprocess.run(["pgrep", "-f", job.marker],
                              stdout=subprocess.PIPE).returncode != 0
               and time.time() < deadline):
            time.sleep(0.1)
        os.kill(pid, signal.SIGKILL)
        rc = job.wait(20)
        check(rc == 1, "exit %d: %s" % (rc, job.err))
        check(re.search(r"gridrun: relay of site beta died .*; see "
                        r".*/beta\.log", job.err), "message: " + job.err)
        check("relay of site beta: pid %d" % pid in job.err,
              "--verbose does not name the relay pid: " + job.err)
    finally:
        job.finish()


def interrupted(sig, status):
    job = Job(["--sites", "2", "-n", "4"], "sleep 60")
    try:
        deadline = time.time() + 20
        while (subprocess.run(["pgrep", "-f", job.marker],
                              stdout=subprocess.PIPE).stdout.count(b"\n") < 4
               and time.time() < deadline):
            time.sleep(0.1)
        start = time.time()
        job.proc.send_signal(sig)
        rc = job.wait(15)
        check(rc == status, "exit %d: %s" % (rc, job.err))
        check("gridrun: interrupted" in job.err, "message: " + job.err)
        check(time.time() - start < 6, "teardown took %.1f s" %
              (time.time() - start))
    finally:
        job.finish()


def sigterm():
    interrupted(signal.SIGTERM, 143)


def sigint():
    interrupted(signal.SIGINT, 130)


def timeout():
    start = time.time()
    rc, out, err, _ = run(["--sites", "2", "-n", "2", "--timeout", "2"],
                          "sleep 60")
    check(rc == 124, "exit %d: %s" % (rc, err))
    check("gridrun: timeout after 2 s" in err, "message: " + err)
    check(time.time() - start < 6, "took %.1f s" % (time.time() - start))


def stubborn_ranks():
    # Ranks that ignore SIGTERM are killed after the grace period.
    start = time.time()
    rc, out, err, _ = run(["--sites", "2", "-n", "2", "--timeout", "1"],
                          "trap '' TERM; sleep 60 & wait; sleep 60")
    check(rc == 124, "exit %d: %s" % (rc, err))
    check(time.time() - start < 10, "took %.1f s" % (time.time() - start))


def preload():
    if SANITIZED:
        # The sanitizer runtime must be loaded before an instrumented
        # library; an uninstrumented rank program (sh) cannot preload it.
        raise Skip("instrumented libgridcoll.so cannot be preloaded into "
                   "uninstrumented programs; covered by the release build")
    lib = os.path.realpath(os.path.join(BIN, "..", "lib", "libgridcoll.so"))
    rc, out, err, _ = run(["--sites", "1", "-n", "1", "--preload"],
                          'echo "pre=$LD_PRELOAD"')
    check(rc == 0, "exit %d: %s" % (rc, err))
    check(("pre=" + lib) in out, "LD_PRELOAD: " + out)


def bad_flags():
    cases = [
        (["--sites", "0", "-n", "2", "--", "true"], "--sites"),
        (["--sites", "17", "-n", "20", "--", "true"], "--sites"),
        (["--sites", "2", "-n", "0", "--", "true"], "-n"),
        (["--sites", "3", "-n", "2", "--", "true"], "at least one rank"),
        (["--sites", "2", "-n", "5", "--site-sizes", "1,3", "--", "true"],
         "sum"),
        (["--site-sizes", "1,0", "--", "true"], "--site-sizes"),
        (["--sites", "2", "-n", "2", "true"], "--"),
        (["--sites", "2", "-n", "2", "--"], "program"),
        (["--sites", "2", "-n", "2"], "program"),
        (["--bogus", "--", "true"], "unknown option"),
        (["--sites", "2", "-n", "2", "--timeout", "x", "--", "true"],
         "--timeout"),
    ]
    for args, word in cases:
        r = subprocess.run([GRIDRUN] + args, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True, timeout=10)
        check(r.returncode == 2 and word in r.stderr,
              "%r: exit %d, %r" % (args, r.returncode, r.stderr))
    r = subprocess.run([GRIDRUN, "--help"], stdout=subprocess.PIPE,
                       text=True, timeout=10)
    check(r.returncode == 0 and "GRIDCOLL_SITES" in r.stdout and
          "124" in r.stdout, "--help incomplete")


if __name__ == "__main__":
    main([("environment", environment), ("prefix", prefix),
          ("long_lines_stay_whole", long_lines_stay_whole),
          ("exit_status", exit_status), ("relay_dies", relay_dies),
          ("sigterm", sigterm), ("sigint", sigint), ("timeout", timeout),
          ("stubborn_ranks", stubborn_ranks), ("preload", preload),
          ("bad_flags", bad_flags)])
