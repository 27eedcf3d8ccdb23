#!/usr/bin/env python3
"""Ranks that never join the grid (issue 12).

A rank joins the grid in MPI_Init, when libgridcoll's session with its
site's relay authenticates; the relay records every rank that ever did
(/status ranks_joined, ranks_never_joined; /metrics
gridrelay_job_ranks_joined).
When a site's mpiexec ends and some of its ranks never joined, the job ran
as separate per-site MPI jobs: gridrun names the site and the ranks, lists
the likely causes, tears the whole job down and exits 125, in local and in
machine-file mode; --no-join-check is for commands that are not MPI
programs.

And the documented ways of linking keep libgridcoll in the executable even
under the linker's --as-needed: a Fortran `use mpi` program, which
references no symbol of libgridcoll, built with pkg-config's line or the
CMake package runs across two sites as one world of 4; a `use mpi_f08`
program (whose bindings bypass libgridcoll) is stopped by libgridcoll at
start-up, and gridrun ends the job.
"""

import os
import re
import shutil
import subprocess
import tempfile
import time
import uuid

from harness import (BIN, BUILD_DIR, SANITIZED, SOURCE_DIR, Grid, Skip,
                     check, finish, machine_file, main, spawn)
from test_gridrun import FAKE_RSH

GRIDRUN = os.path.join(BIN, "gridrun")
HELLO = os.path.join(BIN, "grid_hello")
HELLO_PLAIN = os.path.join(BIN, "grid_hello_plain")
MPI_SOURCES = os.path.join(SOURCE_DIR, "tests", "mpi")
EXIT_NOT_JOINED = 125

CAUSES = [
    "gridrun:   - the program uses the Fortran module mpi_f08: MPICH's "
    "Fortran 2008 bindings bypass libgridcoll (not supported yet; 'use mpi' "
    "and mpif.h work)",
    "gridrun:   - libgridcoll is not linked into the executable (check "
    "'ldd {prog}'): link it as docs/gridcoll.md says (pkg-config gridcoll, "
    "CMake GridColl::gridcoll), or run with 'gridrun --preload'",
    "gridrun:   - the program starts MPI with MPI-4 sessions "
    "(MPI_Session_init) instead of MPI_Init",
    "gridrun:   - the program does not call MPI_Init at all (not an MPI "
    "program: run it with 'gridrun --no-join-check')",
]


def never_joined(site, ranks):
    return ("gridrun: site %s: %s never joined the grid (no session with the "
            "site's relay from MPI_Init)" % (site, ranks))


def causes(prog, failed=False):
    head = ("gridrun: likely causes (unless the ranks' own messages above say "
            "why they stopped):" if failed else "gridrun: likely causes:")
    return [head] + [c.format(prog=prog) for c in CAUSES]


def gridrun_lines(err):
    """gridrun's own lines of stderr, without the kept job directory."""
    return [l for l in err.splitlines() if l.startswith("gridrun:") and
            not l.startswith("gridrun: job directory kept: ")]


def run(args, program, timeout=60, env=None):
    """gridrun ARGS -- PROGRAM under --timeout with a TMPDIR of its own;
    (rc, out, err, leftovers): leftovers are this job's processes (relays,
    or anything carrying the job's marker) still alive after gridrun
    exited."""
    marker = "join-check-" + uuid.uuid4().hex
    tmp = tempfile.mkdtemp(prefix="gr-join-")
    try:
        r = subprocess.run(
            [GRIDRUN, "--timeout", str(timeout)] + args + ["--"] +
            [a.replace("MARKER", marker) for a in program],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            timeout=timeout + 30,
            env=dict(env or os.environ, TMPDIR=tmp))
        check(r.returncode != 124, "job hung (gridrun timeout):\n" + r.stderr)
        left = []
        deadline = time.time() + 2
        while True:
            left = []
            for pattern in (marker, "gridrelay -c " + tmp):
                p = subprocess.run(["pgrep", "-af", pattern],
                                   stdout=subprocess.PIPE, text=True)
                left += [l for l in p.stdout.splitlines() if "pgrep" not in l]
            if not left or time.time() > deadline:
                break
            time.sleep(0.1)
        return r.returncode, r.stdout, r.stderr, left
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


# alpha's ranks join the grid and wait in MPI_Recv for ever; beta's never
# call MPI_Init and end at once (exit status $1): beta's mpiexec ends
# first, whatever the scheduling.
MIXED = ('if [ "$GRIDCOLL_SITE_NAME" = alpha ]; then exec %s hang "$0"; fi; '
         'echo "beta rank $PMI_RANK ran alone"; exit $1' % HELLO)


def mixed(code):
    return ["sh", "-c", MIXED, "MARKER", str(code)]


def expect_mixed(args, code, ranks, world):
    start = time.time()
    rc, out, err, left = run(args, mixed(code))
    check(rc == EXIT_NOT_JOINED, "%r: exit %d, want %d:\n%s"
          % (args, rc, EXIT_NOT_JOINED, err))
    want = ([] if code == 0 else
            ["gridrun: site beta: rank %d exited with status %d"
             % (world - 1, code)])
    want += [never_joined("beta", ranks)] + causes("sh", failed=code != 0)
    check(gridrun_lines(err) == want, "%r: gridrun's lines:\n%s\nwant:\n%s"
          % (args, "\n".join(gridrun_lines(err)), "\n".join(want)))
    check("never joined" not in err.replace(never_joined("beta", ranks), ""),
          "alpha, whose ranks joined, is named:\n" + err)
    check(len(re.findall(r"^beta rank \d ran alone$", out, re.M)) ==
          world - (2 if world == 4 else 1), "beta's output: " + out)
    check(not left, "processes left behind: %r" % left)
    check(time.time() - start < 20, "took %.0f s" % (time.time() - start))


def site_that_never_joins_ends_the_job():
    """The sites' ranks joined but another site's never did: the job ends
    with 125 as soon as that site's mpiexec ends (with 0 or not), naming
    only that site, and nothing of the job is left."""
    expect_mixed(["--site-sizes", "2,2"], 0, "ranks 2-3", 4)
    expect_mixed(["--site-sizes", "1,1"], 0, "rank 1", 2)
    # Exited non-zero, and none of its ranks joined: named as both.
    expect_mixed(["--site-sizes", "1,1"], 3, "rank 1", 2)


def machine_file_mode():
    """-f with relays and ranks through --rsh: the same check."""
    d, path = machine_file("""
gwA cluster=alpha relay slots=2 wan=WAN1
gwB cluster=beta relay slots=2 wan=WAN2
""")
    try:
        expect_mixed(["-f", path, "-n", "4", "--rsh", FAKE_RSH,
                      "--plaintext-wan"], 0, "ranks 2-3", 4)
        # A program that joins passes the check.
        rc, out, err, left = run(["-f", path, "-n", "4", "--rsh", FAKE_RSH,
                                  "--plaintext-wan", "--verbose"], [HELLO])
        check(rc == 0 and sorted(re.findall(r"^rank \d of 4$", out, re.M)) ==
              ["rank %d of 4" % r for r in range(4)], "exit %d:\n%s%s"
              % (rc, out, err))
        for site in ("alpha", "beta"):
            check("gridrun: site %s: 2 of 2 ranks joined the grid" % site
                  in err, "--verbose: " + err)
        check(not left, "processes left behind: %r" % left)
    finally:
        shutil.rmtree(d, ignore_errors=True)


def unlinked_program_is_stopped():
    """A program built against plain MPICH (libgridcoll not linked) used to
    run as one MPICH job per site and exit 0."""
    rc, out, err, left = run(["--site-sizes", "2,2"], [HELLO_PLAIN])
    check(rc == EXIT_NOT_JOINED, "exit %d:\n%s" % (rc, err))
    lines = gridrun_lines(err)
    named = [l for l in lines if "never joined" in l]
    check(named and all(l in (never_joined("alpha", "ranks 0-1"),
                              never_joined("beta", "ranks 2-3"))
                        for l in named), "lines: %r" % lines)
    check(lines[len(named):] == causes(HELLO_PLAIN), "lines: %r" % lines)
    check(not left, "processes left behind: %r" % left)


def non_mpi_command():
    """A command that is not an MPI program fails the check, and the
    message says what to do; --no-join-check runs it."""
    rc, out, err, _ = run(["--sites", "2", "-n", "2"],
                          ["sh", "-c", 'sleep 0.$((GRIDCOLL_SITE_INDEX * 5)); '
                           'echo "host of $GRIDCOLL_SITE_NAME"'])
    check(rc == EXIT_NOT_JOINED and
          gridrun_lines(err) == [never_joined("alpha", "rank 0")] +
          causes("sh"), "exit %d:\n%s" % (rc, err))
    rc, out, err, _ = run(["--sites", "2", "-n", "2", "--no-join-check"],
                          ["sh", "-c", 'echo "host of $GRIDCOLL_SITE_NAME"'])
    check(rc == 0 and sorted(out.splitlines()) ==
          ["host of alpha", "host of beta"] and not gridrun_lines(err),
          "--no-join-check: exit %d:\n%s%s" % (rc, out, err))
    # One site: libgridcoll never calls the relay, and nothing is checked.
    rc, out, err, _ = run(["--sites", "1", "-n", "2"], ["true"])
    check(rc == 0 and not gridrun_lines(err), "one site: exit %d:\n%s"
          % (rc, err))


def relay_records_joins():
    """The relay's record: every rank that ever authenticated a session,
    also after the session closed; a refused session does not count."""
    with Grid(sizes=(3, 1), tls=False) as g:
        g.start()
        alpha, beta = g.sites
        st = alpha.status()
        check(st["ranks_joined"] == 0 and st["ranks_never_joined"] == "0-2",
              "before: %r" % st)
        for rank in (0, 2, 0):
            finish(g.tool("send", alpha, rank))
        bad = os.path.join(g.dir, "wrong.token")
        with open(bad, "w") as f:
            f.write(os.urandom(32).hex() + "\n")
        out = finish(spawn([os.path.join(BIN, "relay_tool"), "send",
                            alpha.endpoint, bad, str(g.job_id), "1"]),
                     expect_ok=False)
        check("FAIL" in out, "wrong token accepted: " + out)
        st = alpha.status()
        check(st["sessions"] == 0 and st["ranks_joined"] == 2 and
              st["ranks_never_joined"] == "1", "alpha: %r" % st)
        st = beta.status()
        check(st["ranks_joined"] == 0 and st["ranks_never_joined"] == "3",
              "beta: %r" % st)
        metrics = alpha.http("/metrics")
        check('\ngridrelay_job_ranks{job="%d"} 3\n' % g.job_id in metrics and
              '\ngridrelay_job_ranks_joined{job="%d"} 2\n' % g.job_id
              in metrics, metrics)


# ---- Fortran, linked the documented ways -----------------------------------

class Install:
    """The build tree installed into a temporary prefix, as a user would
    (once per run)."""

    _instance = None

    @classmethod
    def get(cls):
        if SANITIZED:
            raise Skip("the sanitized (ASan) libgridcoll cannot be linked "
                       "into uninstrumented programs; covered by the release "
                       "build")
        if shutil.which("mpifort") is None:
            raise Skip("mpifort is not installed (Debian packages gfortran, "
                       "libmpich-dev)")
        if cls._instance is None:
            cls._instance = cls()
        return cls._instance

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="gridcoll-join-")
        self.prefix = os.path.join(self.dir, "prefix")
        r = subprocess.run(["cmake", "--install", BUILD_DIR, "--prefix",
                            self.prefix], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True, timeout=120)
        check(r.returncode == 0, "cmake --install failed:\n" + r.stdout)
        self.lib = os.path.join(self.prefix, "lib")
        self.env = dict(os.environ)
        self.env["PKG_CONFIG_PATH"] = os.path.join(self.lib, "pkgconfig")
        self.env["LD_LIBRARY_PATH"] = os.pathsep.join(
            [self.lib] + [p for p in [os.environ.get("LD_LIBRARY_PATH")]
                          if p])

    def build(self, name, source):
        """mpifort -o NAME SOURCE $(pkg-config --cflags --libs gridcoll), as
        docs/gridcoll.md says."""
        r = subprocess.run(["pkg-config", "--cflags", "--libs", "gridcoll"],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           text=True, env=self.env)
        check(r.returncode == 0, "pkg-config: " + r.stdout)
        exe = os.path.join(self.dir, name)
        r = subprocess.run(["mpifort", "-o", exe,
                            os.path.join(MPI_SOURCES, source)] +
                           r.stdout.split(), cwd=self.dir,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           text=True, env=self.env, timeout=120)
        check(r.returncode == 0, "mpifort %s failed:\n%s" % (source, r.stdout))
        return exe

    def loads_libgridcoll(self, exe):
        r = subprocess.run(["ldd", exe], stdout=subprocess.PIPE, text=True,
                           env=self.env)
        m = re.search(r"libgridcoll\.so\S* => (\S+)", r.stdout)
        return m is not None and os.path.realpath(m.group(1)) == \
            os.path.realpath(os.path.join(self.lib, "libgridcoll.so"))


def expect_world_of_4(inst, exe, what):
    rc, out, err, left = run(["--site-sizes", "2,2"], [exe], env=inst.env)
    check(rc == 0, "%s: exit %d:\n%s%s" % (what, rc, out, err))
    check(sorted(re.findall(r"^rank \d+ of \d+$", out, re.M)) ==
          ["rank %d of 4" % r for r in range(4)], "%s:\n%s" % (what, out))
    check(not left, "processes left behind: %r" % left)


def fortran_use_mpi_pkg_config():
    inst = Install.get()
    exe = inst.build("f_hello", "f_hello.f90")
    check(inst.loads_libgridcoll(exe), "ldd: the linker dropped libgridcoll")
    expect_world_of_4(inst, exe, "use mpi, pkg-config")


FORTRAN_PROJECT = r"""
cmake_minimum_required(VERSION 3.20)
project(join_check_consumer LANGUAGES C Fortran)
find_package(MPI REQUIRED COMPONENTS Fortran)
find_package(GridColl REQUIRED)
add_executable(f_hello {src}/f_hello.f90)
target_link_libraries(f_hello PRIVATE GridColl::gridcoll MPI::MPI_Fortran)
"""


def fortran_use_mpi_cmake_package():
    inst = Install.get()
    src = os.path.join(inst.dir, "cmake-src")
    build = os.path.join(inst.dir, "cmake-build")
    os.makedirs(src, exist_ok=True)
    with open(os.path.join(src, "CMakeLists.txt"), "w") as f:
        f.write(FORTRAN_PROJECT.format(src=MPI_SOURCES))
    for cmd in (["cmake", "-S", src, "-B", build,
                 "-DCMAKE_PREFIX_PATH=" + inst.prefix],
                ["cmake", "--build", build]):
        r = subprocess.run(cmd, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True,
                           env=inst.env, timeout=300)
        check(r.returncode == 0, "%s failed:\n%s" % (" ".join(cmd), r.stdout))
    exe = os.path.join(build, "f_hello")
    check(inst.loads_libgridcoll(exe), "ldd: the linker dropped libgridcoll")
    expect_world_of_4(inst, exe, "use mpi, GridColl::gridcoll")


def fortran_mpi_f08_is_stopped():
    inst = Install.get()
    r = subprocess.run(["mpifort", "-show"], stdout=subprocess.PIPE,
                       text=True)
    dirs = re.findall(r"-I(\S+)", r.stdout)
    if not any(os.path.exists(os.path.join(d, "mpi_f08.mod")) for d in dirs):
        raise Skip("MPICH's mpi_f08 module is not installed")
    exe = inst.build("f08_hello", "f08_hello.f90")
    check(inst.loads_libgridcoll(exe), "ldd: no libgridcoll")
    rc, out, err, left = run(["--site-sizes", "2,2"], [exe], env=inst.env)
    check(rc == EXIT_NOT_JOINED, "exit %d:\n%s%s" % (rc, out, err))
    # libgridcoll's mpi_init_f08_ stops the ranks, naming the cause
    # (tests/integration/test_fortran.py has the message).
    check("the program uses the Fortran module mpi_f08" in err,
          "no message from the ranks:\n" + err)
    lines = gridrun_lines(err)
    exited = [l for l in lines if re.match(
        r"gridrun: site (alpha|beta): rank \d exited with status 1$", l)]
    named = [l for l in lines if "never joined" in l]
    check(exited and named and all(l in (never_joined("alpha", "ranks 0-1"),
                                         never_joined("beta", "ranks 2-3"))
                                   for l in named), "lines: %r" % lines)
    check(lines[len(exited) + len(named):] == causes(exe, failed=True),
          "lines: %r" % lines)
    check(not left, "processes left behind: %r" % left)


if __name__ == "__main__":
    try:
        main([("site_that_never_joins_ends_the_job",
               site_that_never_joins_ends_the_job),
              ("machine_file_mode", machine_file_mode),
              ("unlinked_program_is_stopped", unlinked_program_is_stopped),
              ("non_mpi_command", non_mpi_command),
              ("relay_records_joins", relay_records_joins),
              ("fortran_use_mpi_pkg_config", fortran_use_mpi_pkg_config),
              ("fortran_use_mpi_cmake_package",
               fortran_use_mpi_cmake_package),
              ("fortran_mpi_f08_is_stopped", fortran_mpi_f08_is_stopped)])
    finally:
        if Install._instance is not None:
            shutil.rmtree(Install._instance.dir, ignore_errors=True)
