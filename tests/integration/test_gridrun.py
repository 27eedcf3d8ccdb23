#!/usr/bin/env python3
"""gridrun local mode: rank environment, output forwarding, exit statuses,
failure handling and teardown (no process may outlive gridrun).

The ranks are shell commands that mpiexec launches; each carries a unique
marker argument so leftovers can be found with pgrep.  Shell commands never
join the grid (no MPI_Init), so they run with --no-join-check; the check
itself is integration.join_check's.
"""

import fcntl
import glob
import os
import re
import shutil
import signal
import socket
import ssl
import subprocess
import tempfile
import threading
import time
import uuid

from harness import (BIN, SANITIZED, SOURCE_DIR, Skip, check, free_port,
                     gridrun_usage_errors, machine_file, main, make_certs)

GRIDRUN = os.path.join(BIN, "gridrun")
ENV_LINE = ('echo "$GRIDCOLL_SITE_NAME $GRIDCOLL_SITE_INDEX '
            '$GRIDCOLL_SITE_OFFSET $GRIDCOLL_SITE_SIZE $PMI_RANK '
            '$GRIDCOLL_WORLD_SIZE $GRIDCOLL_SITES"; '
            'test -S "${GRIDCOLL_RELAY#unix:}" && '
            'test -f "$GRIDCOLL_TOKEN_FILE" && '
            'test -n "$GRIDCOLL_JOB_ID" && echo "ok $GRIDCOLL_SITE_NAME"')


class Job:
    """One gridrun run with its own TMPDIR, so its job directory is ours to
    inspect and remove.  `program` is a shell command; one that execs an
    MPI program which joins the grid passes mpi=True, so that gridrun checks
    that every rank joined, as it does by default."""

    def __init__(self, args, program, mpi=False):
        self.marker = "gridrun-test-" + uuid.uuid4().hex
        self.tmp = tempfile.mkdtemp(prefix="gr-")
        env = dict(os.environ, TMPDIR=self.tmp)
        # The marker is $0 of the shell, so it shows in every rank's
        # command line.
        self.proc = subprocess.Popen(
            [GRIDRUN] + args + ([] if mpi else ["--no-join-check"]) +
            ["--", "sh", "-c", program, self.marker],
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
    check("gridrun: site beta: rank 2 exited with status 3\n" in err,
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
        (["--sites", "2", "-n", "2", "--fattree", "4,,2", "--", "true"],
         "--fattree: '4,,2' is not a comma-separated list"),
        (["--sites", "2", "-n", "2", "--fattree", "4,0", "--", "true"],
         "--fattree: arity M2 = 0 is not positive"),
        (["--markdown"], "gridrun: --markdown goes with --env"),
    ]
    gridrun_usage_errors(cases)
    r = subprocess.run([GRIDRUN, "--help"], stdout=subprocess.PIPE,
                       text=True, timeout=10)
    check(r.returncode == 0 and "GRIDCOLL_SITES" in r.stdout and
          "124" in r.stdout, "--help incomplete")

# The variables of gridrun's own environment (launcher/gridrun_env.c).
LAUNCHER_VARS = ["GRIDCOLL_RELAY_BIN", "GRIDCOLL_MPIEXEC", "GRIDCOLL_WAN_BIN",
                 "GRIDCOLL_PROBE_BIN", "GRIDCOLL_MODEL", "GRIDCOLL_MODEL_DIR",
                 "GRIDCOLL_KEEP_FAILED", "GRIDCOLL_SERVICE_CERT",
                 "GRIDCOLL_SERVICE_KEY", "GRIDCOLL_SERVICE_CA"]
# What the launcher's files other than the table may read.
OTHER_READS = {'"TMPDIR"', '"PATH"', '"HOME"', '"XDG_CACHE_HOME"'}
# The files that spell out the ranks' variables (ENVIRONMENT CONTRACT).
RANK_ENV_FILES = {"gridrun_mpiexec.c", "gridrun_apps.c"}


def env_table():
    """`gridrun --env` lists every variable of gridrun's own environment,
    with the value of one that is set; docs/gridrun.md's ENVIRONMENT table
    is its --markdown form; only the table (gridrun_env.c) reads a
    GRIDCOLL_* variable, and names one other than the ranks'."""
    env = dict(os.environ, GRIDCOLL_KEEP_FAILED="7", GRIDCOLL_WAN_BIN="")
    r = subprocess.run([GRIDRUN, "--env"], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, timeout=10, env=env)
    check(r.returncode == 0 and r.stderr == "",
          "--env: exit %d: %s" % (r.returncode, r.stderr))
    rows = re.findall(r"^(GRIDCOLL_[A-Z_]+) \(", r.stdout, re.M)
    check(rows == LAUNCHER_VARS, "--env lists %r" % rows)
    check(re.search(r"^GRIDCOLL_KEEP_FAILED \(int 0\.\.100000, default 5\)\n"
                    r"    current: GRIDCOLL_KEEP_FAILED=7\n", r.stdout, re.M),
          "GRIDCOLL_KEEP_FAILED's row: " + r.stdout)
    check("current: GRIDCOLL_WAN_BIN" not in r.stdout,
          "an empty GRIDCOLL_WAN_BIN shown as set: " + r.stdout)

    md = subprocess.run([GRIDRUN, "--env", "--markdown"],
                        stdout=subprocess.PIPE, text=True, check=True,
                        timeout=10).stdout
    check(re.findall(r"^\| `(GRIDCOLL_[A-Z_]+)` \|", md, re.M) ==
          LAUNCHER_VARS, "--env --markdown:\n" + md)
    with open(os.path.join(SOURCE_DIR, "docs", "gridrun.md")) as f:
        doc = f.read()
    m = re.search(r"<!-- begin: gridrun --env --markdown -->\n(.*?)"
                  r"<!-- end: gridrun --env --markdown -->", doc, re.S)
    check(m is not None, "docs/gridrun.md has no generated ENVIRONMENT table")
    check(m.group(1) == md,
          "docs/gridrun.md's ENVIRONMENT table differs from the table: "
          "regenerate it with build/bin/gridrun --env --markdown")

    sources = glob.glob(os.path.join(SOURCE_DIR, "launcher", "*.c"))
    check(len(sources) > 10, "no launcher sources in %s" % SOURCE_DIR)
    for path in sources:
        name = os.path.basename(path)
        if name == "gridrun_env.c":
            continue
        with open(path) as f:
            text = f.read()
        for arg in re.findall(r"\bgetenv\s*\(([^)]*)\)", text):
            check(arg.strip() in OTHER_READS,
                  "%s calls getenv(%s): read gridrun's GRIDCOLL_* variables "
                  "through gridrun_env.h" % (name, arg))
        if name not in RANK_ENV_FILES:
            names = re.findall(r'"(GRIDCOLL_[A-Z][A-Z_]*)"', text)
            check(not names, "%s names %s: use gr_env_name()" %
                  (name, ", ".join(names)))


def keep_failed():
    """Failed jobs keep their directories, but only the last --keep-failed
    (GRIDCOLL_KEEP_FAILED) of them: older failed ones are removed, never
    one a running gridrun holds (its gridrun.lock), one kept with
    --keep-job-dir (no gridrun.failed), a directory of an older gridrun
    (no lock file), or what a symbolic link points to."""
    t = tempfile.mkdtemp(prefix="gr-kf-")
    outside = tempfile.mkdtemp(prefix="gr-kf-out-")
    try:
        def fake(name, age, lock=True, failed=True, where=t):
            d = os.path.join(where, name)
            os.mkdir(d)
            for f, want in (("gridrun.lock", lock), ("gridrun.failed", failed)):
                if want:
                    open(os.path.join(d, f), "w").close()
                    then = time.time() - age
                    os.utime(os.path.join(d, f), (then, then))
            return d

        newer = fake("gridrun-newer1", 1000)
        older = fake("gridrun-older1", 2000)
        busy = fake("gridrun-busy01", 3000)
        kept = fake("gridrun-keep01", 4000, failed=False)
        legacy = fake("gridrun-legacy", 5000, lock=False)
        target = fake("gridrun-target", 6000, where=outside)
        os.symlink(target, os.path.join(t, "gridrun-link01"))
        lock = open(os.path.join(busy, "gridrun.lock"))
        fcntl.flock(lock, fcntl.LOCK_EX)  # as the gridrun running it would

        def fail(args, env=None):
            r = subprocess.run(
                [GRIDRUN, "--sites", "1", "-n", "1", "--no-join-check"] +
                args + ["--", "sh", "-c", "exit 3"], stdout=subprocess.PIPE,
                stderr=subprocess.PIPE, text=True, timeout=30,
                env=dict(os.environ, TMPDIR=t, **(env or {})))
            m = re.search(r"^gridrun: job directory kept: (.*)$", r.stderr,
                          re.M)
            check(r.returncode == 3 and m is not None,
                  "exit %d: %s" % (r.returncode, r.stderr))
            return m.group(1), r.stderr

        untouched = {"gridrun-busy01", "gridrun-keep01", "gridrun-legacy",
                     "gridrun-link01"}
        own, err = fail(["--keep-failed", "2"])
        check("gridrun: removed 1 older failed jobs' directories from %s; "
              "the last 2 stay there (--keep-failed N, GRIDCOLL_KEEP_FAILED)"
              "\n" % t in err, "message: " + err)
        names = set(os.listdir(t))
        check(names == untouched | {os.path.basename(own), "gridrun-newer1"},
              "after --keep-failed 2: %r" % sorted(names))
        check(os.path.isfile(os.path.join(target, "gridrun.failed")),
              "followed the symbolic link")
        own2, err = fail([], {"GRIDCOLL_KEEP_FAILED": "1"})
        check("gridrun: removed 2 older failed jobs' directories from %s; "
              "the last 1 stay there (--keep-failed N, GRIDCOLL_KEEP_FAILED)"
              "\n" % t in err, "message: " + err)
        names = set(os.listdir(t))
        check(names == untouched | {os.path.basename(own2)},
              "after GRIDCOLL_KEEP_FAILED=1: %r" % sorted(names))
        # --keep-failed 0: not even this job's; the option wins over the
        # environment.
        r = subprocess.run(
            [GRIDRUN, "--sites", "1", "-n", "1", "--no-join-check",
             "--keep-failed", "0", "--", "sh", "-c", "exit 3"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            timeout=30, env=dict(os.environ, TMPDIR=t,
                                 GRIDCOLL_KEEP_FAILED="7"))
        check(r.returncode == 3 and
              "gridrun: job directory removed (--keep-failed 0)\n" in r.stderr
              and "gridrun: removed 1 older failed jobs' directories from %s "
              "(--keep-failed 0)\n" % t in r.stderr
              and set(os.listdir(t)) == untouched,
              "--keep-failed 0: exit %d, %r, %r" % (
                  r.returncode, r.stderr, sorted(os.listdir(t))))
        # A successful job's directory is removed, as before.
        r = subprocess.run([GRIDRUN, "--sites", "1", "-n", "1",
                            "--no-join-check", "--", "true"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True, timeout=30,
                           env=dict(os.environ, TMPDIR=t))
        check(r.returncode == 0 and set(os.listdir(t)) == untouched,
              "success: exit %d, %r: %s" % (r.returncode,
                                            sorted(os.listdir(t)), r.stderr))
        lock.close()
        for d in (kept, legacy):
            check(os.path.isdir(d), "%s removed" % d)
        gridrun_usage_errors([
            (["--sites", "1", "-n", "1", "--keep-failed", "-1", "--", "true"],
             "gridrun: --keep-failed must be 0..100000, not '-1'")])
        r = subprocess.run([GRIDRUN, "--sites", "1", "-n", "1", "--", "true"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True, timeout=10,
                           env=dict(os.environ, GRIDCOLL_KEEP_FAILED="x"))
        check(r.returncode == 2 and "gridrun: GRIDCOLL_KEEP_FAILED must be "
              "0..100000, not 'x'" in r.stderr, "env: %r" % r.stderr)
    finally:
        shutil.rmtree(t, ignore_errors=True)
        shutil.rmtree(outside, ignore_errors=True)


def relay_set():
    """--relay-set: keys land in every relay's configuration (the relays
    start with them and every link comes up with the streams asked for);
    keys and values the relay's table rejects are its FILE:LINE errors,
    exit 2, nothing started; keys gridrun owns and malformed items are
    usage errors."""
    sets = ["wan.streams=6", "tcp.congestion=reno", "wan.chunk_size=1M",
            "flow.rank_credit=16M", "wan.streams=3"]
    args = ["--sites", "2", "-n", "2", "--keep-job-dir", "--verbose"]
    for item in sets:
        args += ["--relay-set", item]
    rc, _, err, kept, _, files = run_kept(
        args, 'echo "ok $PMI_RANK"', ["alpha.conf", "beta.conf"])
    check(rc == 0 and kept is not None, "exit %d: %s" % (rc, err))
    for name in ("alpha.conf", "beta.conf"):
        conf = files.get(name, "")
        for text in ("streams = 3;", 'chunk_size = "1M";',
                     'tcp = { congestion = "reno"; };',
                     'flow = { rank_credit = "16M"; };'):
            check(text in conf, "%s lacks %r:\n%s" % (name, text, conf))
        check("streams = 6" not in conf, "%s: the first wan.streams "
              "stayed:\n%s" % (name, conf))
    check("all relays up" in err, "relays with --relay-set: %s" % err)
    cases = [
        (["wan.streams=99"], r"alpha\.conf:\d+: wan\.streams: 99 is out of "
         r"range 1\.\.64"),
        (["flow.bogus=1", "tcp.congestion=nope"],
         r"alpha\.conf:\d+: unknown key 'flow\.bogus'(.|\n)*alpha\.conf:\d+: "
         r"tcp\.congestion: congestion control 'nope' is not available"),
        (["wan.listen=127.0.0.1:1"], r"gridrun sets wan\.listen itself"),
        (["local.unix=/x"], r"gridrun sets local\.unix itself"),
        (["streams=4"], r"'streams=4' is not GROUP\.NAME=VALUE"),
        (["wan.streams"], r"'wan\.streams' is not GROUP\.NAME=VALUE"),
    ]
    for items, pattern in cases:
        job = Job(["--sites", "2", "-n", "2"] +
                  [w for i in items for w in ("--relay-set", i)], "true")
        try:
            rc = job.wait()
        finally:
            job.finish()
        check(rc == 2 and re.search(pattern, job.err),
              "%r: exit %d, %r" % (items, rc, job.err))


def local_tls():
    """--tls-dir in local mode: TLS between the loopback relays, the files
    checked before anything starts; not with --native."""
    if shutil.which("openssl") is None:
        raise Skip("openssl not installed (needed by make-certs.sh)")
    d = tempfile.mkdtemp(prefix="gr-tls-")
    try:
        tls = os.path.join(d, "tls")
        subprocess.run(["bash", MAKE_CERTS, tls, "alpha", "beta"],
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                       check=True, timeout=60)
        rc, out, err, kept, _, files = run_kept(
            ["--sites", "2", "-n", "2", "--tls-dir", tls, "--verbose",
             "--keep-job-dir"], 'echo "ok $PMI_RANK"', ["beta.conf"])
        check(rc == 0 and "gridrun: all relays up" in err,
              "exit %d: %s" % (rc, err))
        conf = files.get("beta.conf", "")
        check("plaintext = false" in conf and
              os.path.join(tls, "beta.key") in conf, "beta.conf:\n" + conf)
        os.remove(os.path.join(tls, "alpha.crt"))
        gridrun_usage_errors([
            (["--sites", "2", "-n", "2", "--tls-dir", tls, "--", "true"],
             os.path.join(tls, "alpha.crt")),
            (["--sites", "2", "-n", "2", "--wan", "delay=1ms", "--native",
              "--tls-dir", tls, "--", "true"], "--native runs no relays")])
    finally:
        shutil.rmtree(d, ignore_errors=True)


# ---- machine-file mode (-f) ------------------------------------------------
#
# The hosts are fake names: --rsh runs fake-rsh.sh, which runs every command
# on this machine and tells it the host in $GRIDRUN_TEST_HOST; hydra's ssh
# launcher uses the same script.  Relays listen on 127.0.0.1.

HERE = os.path.dirname(os.path.abspath(__file__))
FAKE_RSH = os.path.join(HERE, "gridrun", "fake-rsh.sh")
MAKE_CERTS = os.path.join(HERE, "..", "..", "conf", "tls", "make-certs.sh")
MF_LINE = ('echo "$GRIDCOLL_SITE_NAME $GRIDCOLL_SITE_INDEX '
           '$GRIDCOLL_SITE_OFFSET $GRIDCOLL_SITE_SIZE $PMI_RANK '
           '$GRIDCOLL_WORLD_SIZE $GRIDCOLL_SITES $GRIDRUN_TEST_HOST '
           '$GRIDCOLL_RELAY"; test -f "$GRIDCOLL_TOKEN_FILE" && '
           'case $GRIDCOLL_RELAY in unix:*) test -S "${GRIDCOLL_RELAY#unix:}"'
           ';; esac && echo "ok $GRIDCOLL_SITE_NAME"')


def run_kept(args, program, read=()):
    """run() for a job that keeps its directory: also returns the names in
    it and the contents of the files named in `read`, taken before the
    directory is removed."""
    job = Job(args, program)
    names, files = [], {}
    try:
        rc = job.wait()
        kept = job.job_dir()
        if kept is not None:
            names = sorted(os.listdir(kept))
            for name in read:
                if name in names:
                    with open(os.path.join(kept, name)) as f:
                        files[name] = f.read()
    finally:
        job.finish()
    return rc, job.out, job.err, kept, names, files


# alpha: 3 slots on two hosts, ranks reach the relay over TCP (local=);
# beta: ranks on the relay host itself, so the relay's local endpoint is a
# Unix socket in the job directory; gamma: gets no rank with -n 4.
THREE_SITES = """
nodeA1 cluster=alpha slots=1
gwA    cluster=alpha relay wan=WAN1 local=WAN2
nodeA2 cluster=alpha slots=2
gwB    cluster=beta relay slots=2 wan=WAN3
nodeC1 cluster=gamma slots=4
gwC    cluster=gamma relay wan=WAN4 connect=listen
"""


def mf_environment():
    d, path = machine_file(THREE_SITES)
    try:
        local_a = re.search(r"local=(\S+)", open(path).read()).group(1)
        # A multi-word --rsh makes gridrun write a wrapper for hydra.
        rc, out, err, kept, names, files = run_kept(
            ["-f", path, "-n", "4", "--rsh", FAKE_RSH + " -o BatchMode=yes",
             "--plaintext-wan", "--keep-job-dir"], MF_LINE, ["beta.conf"])
        check(rc == 0, "exit %d: %s" % (rc, err))
        check(kept is not None, "--keep-job-dir: no job directory")
        sites = "alpha:0:3,beta:3:1"
        want = [
            "alpha 0 0 3 0 4 %s nodeA1 %s" % (sites, local_a),
            "alpha 0 0 3 1 4 %s nodeA2 %s" % (sites, local_a),
            "alpha 0 0 3 2 4 %s nodeA2 %s" % (sites, local_a),
            "beta 1 3 1 0 4 %s gwB unix:%s/beta.sock" % (sites, kept),
            "ok alpha", "ok alpha", "ok alpha", "ok beta"]
        got = sorted(out.splitlines())
        check(got == sorted(want), "lines\n%s\nwant\n%s" %
              ("\n".join(got), "\n".join(sorted(want))))
        # gamma has no rank, so it has no relay either.
        check("gamma.conf" not in names and "alpha.conf" in names and
              "beta.conf" in names and "rsh.sh" in names,
              "job directory: %r" % names)
        beta = files.get("beta.conf", "")
        check("plaintext = true" in beta and 'connect = "listen"' in beta,
              "beta.conf:\n" + beta)
    finally:
        shutil.rmtree(d, ignore_errors=True)


def mf_rank_failure():
    d, path = machine_file(THREE_SITES)
    try:
        start = time.time()
        rc, out, err, kept = run(
            ["-f", path, "-n", "5", "--rsh", FAKE_RSH, "--plaintext-wan"],
            'if [ "$GRIDCOLL_SITE_NAME" = beta ]; then exit 3; fi; sleep 60')
        check(rc == 3, "exit %d: %s" % (rc, err))
        check(re.search(r"gridrun: site beta: rank \d exited with status 3\n",
                        err), "no failure message: " + err)
        check(kept is not None, "failed job's directory not kept")
        check(time.time() - start < 15, "teardown too slow")
    finally:
        shutil.rmtree(d, ignore_errors=True)


def mf_tls():
    if shutil.which("openssl") is None:
        raise Skip("openssl not installed (needed by make-certs.sh)")
    d, path = machine_file(THREE_SITES)
    try:
        tls = os.path.join(d, "tls")
        subprocess.run(["bash", MAKE_CERTS, tls, "alpha", "beta"],
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                       check=True, timeout=60)
        rc, out, err, kept, names, files = run_kept(
            ["-f", path, "-n", "4", "--rsh", FAKE_RSH, "--tls-dir", tls,
             "--verbose", "--keep-job-dir"], 'echo "ok $PMI_RANK"',
            ["alpha.conf"])
        check(rc == 0, "exit %d: %s" % (rc, err))
        check("gridrun: all relays up" in err, "relays: " + err)
        check(sorted(out.splitlines()) == ["ok 0", "ok 0", "ok 1", "ok 2"],
              "output: " + out)
        conf = files.get("alpha.conf", "")
        check("plaintext = false" in conf and
              os.path.join(tls, "alpha.key") in conf, "alpha.conf:\n" + conf)
        # A missing file is named before anything starts.
        os.remove(os.path.join(tls, "beta.key"))
        gridrun_usage_errors(
            [(["-f", path, "-n", "4", "--tls-dir", tls, "--", "true"],
              os.path.join(tls, "beta.key"))])
    finally:
        shutil.rmtree(d, ignore_errors=True)


# One host per site, so which host a message names is known.
TWO_HOSTS = """
gwA cluster=alpha relay slots=1 wan=WAN1
gwB cluster=beta relay slots=1 wan=WAN2
"""


def mf_program_cannot_start():
    """A program the hosts cannot start is reported as a shell would (127
    not found, 126 not executable), naming the site, program and host,
    not as ranks that never joined the grid."""
    d, path = machine_file(TWO_HOSTS)
    try:
        noexec = os.path.join(d, "noexec.sh")
        with open(noexec, "w") as f:
            f.write("#!/bin/sh\necho never\n")
        os.chmod(noexec, 0o644)
        missing = os.path.join(d, "no-such-program")
        for prog, status, why in ((missing, 127, "not found"),
                                  (noexec, 126, "not executable")):
            r = subprocess.run(
                [GRIDRUN, "-f", path, "-n", "2", "--rsh", FAKE_RSH,
                 "--plaintext-wan", "--job-dir", d, "--", prog],
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                timeout=30)
            # The site whose mpiexec fails first is named; the other may be
            # torn down before its proxy says anything.
            mine = [l for l in r.stderr.splitlines()
                    if l.startswith("gridrun: site ")]
            want = ["gridrun: site %s: cannot start program %s on host %s: %s"
                    % (site, prog, host, why)
                    for site, host in (("alpha", "gwA"), ("beta", "gwB"))]
            check(r.returncode == status and mine and
                  all(l in want for l in mine) and
                  "never joined" not in r.stderr,
                  "%s: exit %d, %r" % (prog, r.returncode, r.stderr))
        # Without --rsh, hydra starts the ranks of hosts that are this
        # machine here: those are checked before anything starts.
        here = os.path.join(d, "here.machines")
        with open(here, "w") as f:
            f.write("localhost cluster=alpha relay slots=1 wan=127.0.0.1:%d\n"
                    "127.0.0.1 cluster=beta relay slots=1 wan=127.0.0.1:%d\n"
                    % (free_port(), free_port()))
        for prog, status, why in ((missing, 127, "not found"),
                                  (noexec, 126, "not executable"),
                                  ("no-such-command-xyz", 127, "not found"),
                                  (d, 126, "not executable")):
            jobs = tempfile.mkdtemp(prefix="gr-jobs-")
            r = subprocess.run(
                [GRIDRUN, "-f", here, "-n", "2", "--plaintext-wan",
                 "--job-dir", jobs, "--", prog], stdout=subprocess.PIPE,
                stderr=subprocess.PIPE, text=True, timeout=30)
            started = os.listdir(jobs)
            os.rmdir(jobs)
            check(r.returncode == status and r.stderr ==
                  "gridrun: site alpha: cannot start program %s on host "
                  "localhost: %s\n" % (prog, why) and not started,
                  "%s here: exit %d, %r, job dirs %r" % (
                      prog, r.returncode, r.stderr, started))
    finally:
        shutil.rmtree(d, ignore_errors=True)


class FakeServices:
    """Stand-ins for two sites' gridrelay services (docs/gridrelay.md,
    "Service mode"): the control endpoint's HTTPS requests on a Unix
    socket per site, with the site's certificate.  Registration answers
    are the test's: `answer(site, job_id)` returns (HTTP status, error
    text) for each POST /jobs, or (None, BYTES) to send BYTES instead of
    an HTTP reply; every other request succeeds, and a job is ready at
    once.  What gridrun asked is recorded in `requests`, as
    (site, method, path, job_id)."""

    def __init__(self, answer):
        self.dir = tempfile.mkdtemp(prefix="gr-fsvc-")
        make_certs(os.path.join(self.dir, "tls"), ["alpha", "beta", "alice"])
        self.answer = answer
        self.requests = []
        self.lock = threading.Lock()
        self.servers = []
        for site in ("alpha", "beta"):
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.load_cert_chain(self.path(site + ".crt"),
                                self.path(site + ".key"))
            srv = socket.socket(socket.AF_UNIX)
            srv.bind(os.path.join(self.dir, site + "-control.sock"))
            srv.listen(16)
            self.servers.append(srv)
            threading.Thread(target=self._serve, args=(site, srv, ctx),
                             daemon=True).start()

    def path(self, name):
        return os.path.join(self.dir, "tls", name)

    def machine_file(self):
        path = os.path.join(self.dir, "job.machines")
        with open(path, "w") as f:
            for site in ("alpha", "beta"):
                f.write("gw-%s cluster=%s relay slots=1 service=unix:%s\n"
                        % (site, site, os.path.join(
                            self.dir, site + "-control.sock")))
        return path

    def _serve(self, site, srv, ctx):
        while True:
            try:
                conn, _ = srv.accept()
            except OSError:
                return  # closed
            try:
                with ctx.wrap_socket(conn, server_side=True) as c:
                    self._one(site, c)
            except (OSError, ssl.SSLError):
                pass

    def _one(self, site, c):
        data = b""
        while b"\r\n\r\n" not in data:
            part = c.recv(65536)
            if not part:
                return
            data += part
        head, _, body = data.partition(b"\r\n\r\n")
        length = int(re.search(rb"Content-Length: (\d+)", head).group(1))
        while len(body) < length:
            body += c.recv(65536)
        method, path = head.split(b" ")[:2]
        method, path = method.decode(), path.decode()
        if method == "POST" and path == "/jobs":
            job_id = int(re.search(rb"job_id = (\d+)L;", body).group(1))
            code, error = self.answer(site, job_id)
            if code is None:
                c.sendall(error)
                return
        else:
            job_id = int(re.match(r"/jobs/(\d+)", path).group(1))
            code, error = 200, None
        with self.lock:
            self.requests.append((site, method, path, job_id))
        reason = {200: "OK", 201: "Created", 409: "Conflict",
                  503: "Service Unavailable"}[code]
        reply = ('{"error":"%s"}' % error if error is not None else
                 '{"job_id":%d,"state":"ready","local":"unix:%s/%s.sock"}'
                 % (job_id, self.dir, site))
        c.sendall(("HTTP/1.1 %d %s\r\nContent-Length: %d\r\n"
                   "Connection: close\r\n\r\n%s"
                   % (code, reason, len(reply), reply)).encode())

    def gridrun(self, program):
        return subprocess.run(
            [GRIDRUN, "-f", self.machine_file(), "-n", "2", "--rsh", FAKE_RSH,
             "--service-cert", self.path("alice.crt"), "--service-key",
             self.path("alice.key"), "--service-ca", self.path("ca.crt"),
             "--job-dir", self.dir, "--no-join-check", "--", "sh", "-c",
             program], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True, timeout=30)

    def posted(self, site):
        return [j for s, m, p, j in self.requests
                if s == site and m == "POST" and p == "/jobs"]

    def stop(self, site):
        """Stop listening (a blocked accept() would keep the socket
        listening past a mere close)."""
        srv = self.servers[("alpha", "beta").index(site)]
        try:
            srv.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass  # stopped already
        srv.close()

    def close(self):
        for site in ("alpha", "beta"):
            self.stop(site)
        shutil.rmtree(self.dir, ignore_errors=True)


IN_USE = ("job id %d is in use at site beta by another job (owner bob): "
          "register under another id")


def mf_service_job_id_in_use():
    """A job id another job holds at a site (HTTP 409): gridrun withdraws
    the job where it got in, registers it under a fresh id and says so, up
    to 3 ids; any other refusal ends the job with the service's message."""
    if shutil.which("openssl") is None:
        raise Skip("openssl not installed (needed by make-certs.sh)")
    first = []

    def once(site, job_id):
        if site == "beta" and not first:
            first.append(job_id)
            return 409, IN_USE % job_id
        return 201, None

    svc = FakeServices(once)
    try:
        r = svc.gridrun('echo "id $GRIDCOLL_JOB_ID"')
        check(r.returncode == 0, "exit %d: %s" % (r.returncode, r.stderr))
        a, b = svc.posted("alpha"), svc.posted("beta")
        check(len(a) == 2 and a == b and a[0] != a[1],
              "registrations: alpha %r, beta %r" % (a, b))
        old, new = a
        check(("gridrun: job id %d is in use at site beta (HTTP 409: %s); "
               "registering under job id %d instead (attempt 2 of 3)\n"
               % (old, IN_USE % old, new)) in r.stderr,
              "message: " + r.stderr)
        check(("alpha", "DELETE", "/jobs/%d" % old, old) in svc.requests,
              "the first id was not withdrawn at alpha: %r" % svc.requests)
        check(sorted(r.stdout.splitlines()) == ["id %d" % new] * 2,
              "the ranks' job id: " + r.stdout)
    finally:
        svc.close()

    svc = FakeServices(lambda site, job_id: (409, IN_USE % job_id)
                       if site == "beta" else (201, None))
    try:
        r = svc.gridrun("true")
        ids = svc.posted("beta")
        check(r.returncode == 1 and len(set(ids)) == 3 and
              svc.posted("alpha") == ids, "exit %d, ids %r: %s"
              % (r.returncode, ids, r.stderr))
        sock = os.path.join(svc.dir, "beta-control.sock")
        check(("gridrun: site beta's service (unix:%s) refused the job: HTTP "
               "409: %s\ngridrun: giving up after 3 job ids, each in use at "
               "some site\n" % (sock, IN_USE % ids[2])) in r.stderr,
              "message: " + r.stderr)
        check(r.stderr.count("registering under job id") == 2,
              "retries: " + r.stderr)
    finally:
        svc.close()

    svc = FakeServices(lambda site, job_id: (503, "out of memory")
                       if site == "beta" else (201, None))
    try:
        r = svc.gridrun("true")
        sock = os.path.join(svc.dir, "beta-control.sock")
        check(r.returncode == 1 and len(svc.posted("beta")) == 1 and
              ("gridrun: site beta's service (unix:%s) refused the job: HTTP "
               "503: out of memory\n" % sock) in r.stderr and
              "registering under" not in r.stderr,
              "exit %d, %r: %s" % (r.returncode, svc.requests, r.stderr))
    finally:
        svc.close()


def mf_service_bad_reply():
    """A service whose answer is not HTTP, or that closes without one (as
    it does when it refuses gridrun's certificate), ends the job with the
    reason gridrun's HTTP client gives."""
    if shutil.which("openssl") is None:
        raise Skip("openssl not installed (needed by make-certs.sh)")
    for raw, reason in ((b"SSH-2.0-OpenSSH_9.2\r\n", "not an HTTP reply"),
                        (b"HTTP/1.0 2x\r\n\r\n", "not an HTTP reply"),
                        (b"", "no reply (refused our certificate?)")):
        svc = FakeServices(lambda site, job_id: (None, raw)
                           if site == "beta" else (201, None))
        try:
            r = svc.gridrun("true")
            sock = os.path.join(svc.dir, "beta-control.sock")
            check(r.returncode == 1 and
                  ("gridrun: site beta's service (unix:%s): %s\n"
                   % (sock, reason)) in r.stderr,
                  "%r: exit %d: %s" % (raw, r.returncode, r.stderr))
        finally:
            svc.close()


def mf_service_gone():
    """A site's service that stops answering while ranks run is named in
    gridrun's summary, before the rank failure it explains."""
    if shutil.which("openssl") is None:
        raise Skip("openssl not installed (needed by make-certs.sh)")
    svc = FakeServices(lambda site, job_id: (201, None))
    try:
        def stop_beta():
            deadline = time.time() + 20
            while (not any(m == "GET" for _, m, _, _ in svc.requests) and
                   time.time() < deadline):
                time.sleep(0.05)
            svc.stop("beta")  # the socket file stays: refused

        t = threading.Thread(target=stop_beta)
        t.start()
        r = svc.gridrun('sleep 1; [ "$GRIDCOLL_SITE_NAME" = beta ] && '
                        'exit 1; exit 0')
        t.join()
        sock = os.path.join(svc.dir, "beta-control.sock")
        want = ("gridrun: site beta's service (unix:%s) is gone while ranks "
                "ran: connect: Connection refused\n"
                "gridrun: site beta: rank 1 exited with status 1\n" % sock)
        check(r.returncode == 1 and want in r.stderr,
              "exit %d: %s" % (r.returncode, r.stderr))
    finally:
        svc.close()


def mf_errors():
    d, path = machine_file(THREE_SITES)
    bad = os.path.join(d, "bad.machines")
    with open(bad, "w") as f:
        f.write("nodeX slots=2\n")
    no_local = os.path.join(d, "nolocal.machines")
    with open(no_local, "w") as f:
        f.write("node1 cluster=a slots=2\n"
                "gw cluster=a relay wan=127.0.0.1:9\n")
    both_dial = os.path.join(d, "dial.machines")
    with open(both_dial, "w") as f:
        f.write("gw1 cluster=a relay slots=1 wan=127.0.0.1:9 connect=dial\n"
                "gw2 cluster=b relay slots=1 wan=127.0.0.1:8 connect=dial\n")
    two_trees = os.path.join(d, "trees.machines")
    with open(two_trees, "w") as f:
        f.write("gw cluster=a relay slots=1 wan=127.0.0.1:9 fattree=4,2\n"
                "n1 cluster=a fattree=2,4\n")
    cases = [
        (["-f", path, "-n", "4"],
         "machine-file mode needs --tls-dir DIR (certificates per site) or "
         "--plaintext-wan"),
        (["-f", bad, "-n", "1", "--plaintext-wan"],
         bad + ":1: missing cluster=NAME"),
        (["-f", path, "-n", "10", "--plaintext-wan"],
         "10 ranks requested but the machine file has only 9 slots"),
        (["-f", path, "-n", "2", "--sites", "2", "--plaintext-wan"],
         "cannot be combined"),
        (["-f", path, "--plaintext-wan"], "-n NP is required"),
        (["-f", no_local, "-n", "1", "--plaintext-wan"], "local="),
        (["-f", both_dial, "-n", "2", "--plaintext-wan"], "connect=dial"),
        (["--sites", "2", "-n", "2", "--plaintext-wan"], "only valid with -f"),
        (["-f", two_trees, "-n", "1", "--plaintext-wan"],
         two_trees + ":2: site 'a' already has fattree=4,2 (line 1)"),
        (["-f", path, "-n", "2", "--fattree", "4", "--plaintext-wan"],
         "--fattree is for local mode"),
    ]
    try:
        gridrun_usage_errors([(args + ["--", "true"], text)
                              for args, text in cases])
    finally:
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    main([("environment", environment), ("prefix", prefix),
          ("long_lines_stay_whole", long_lines_stay_whole),
          ("exit_status", exit_status), ("relay_dies", relay_dies),
          ("sigterm", sigterm), ("sigint", sigint), ("timeout", timeout),
          ("stubborn_ranks", stubborn_ranks), ("preload", preload),
          ("bad_flags", bad_flags), ("env_table", env_table),
          ("keep_failed", keep_failed),
          ("relay_set", relay_set),
          ("local_tls", local_tls),
          ("mf_environment", mf_environment),
          ("mf_rank_failure", mf_rank_failure), ("mf_tls", mf_tls),
          ("mf_program_cannot_start", mf_program_cannot_start),
          ("mf_service_job_id_in_use", mf_service_job_id_in_use),
          ("mf_service_bad_reply", mf_service_bad_reply),
          ("mf_service_gone", mf_service_gone),
          ("mf_errors", mf_errors)])
