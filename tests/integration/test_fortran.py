#!/usr/bin/env python3
"""Fortran programs across sites (issue 14), built with MPICH's Fortran
bindings (tests/mpi/fortran.cmake), linked with libgridcoll and plain
under gridrun --preload.

f_check in the `use mpi` and `mpif.h` styles on 2,1,2 and 1,3 sites:
point-to-point, bcast, allreduce, alltoall and a split, checked exactly
inside the program, and the predefined attributes it prints, which
MPICH's Fortran binding answers for one site unless libgridcoll replaces
it (MPI_UNIVERSE_SIZE is the grid's size, MPI_APPNUM 0, MPI_TAG_UB
MPICH's, MPI_WTIME_IS_GLOBAL 0).  f08_hello on `use mpi_f08`, whose
bindings bypass libgridcoll: stopped at start-up by the library with a
message naming the cause, also when gridrun's join check is off (a job
started some other way), and an ordinary MPICH program on one site.
"""

import os
import re

from harness import BIN, Skip, check, gridrun, main

STYLES = ("f_check_use_mpi", "f_check_mpif_h")
LAYOUTS = ((2, 1, 2), (1, 3))
F08_MESSAGE = re.compile(
    r"^gridcoll: site (alpha|beta|gamma): MPI_Init: the program uses the "
    r"Fortran module mpi_f08, whose MPICH bindings bypass libgridcoll: its "
    r"ranks would run as one MPI job per site\. Not supported across "
    r"sites; use 'use mpi' or mpif\.h \(docs/gridcoll\.md, Fortran\)$", re.M)


def program(name):
    path = os.path.join(BIN, name)
    if not os.path.exists(path):
        raise Skip("%s not built (no Fortran compiler or mpifort)" % name)
    return path


def attributes(out):
    """Rank -> its attribute line's values, after every rank's "ok"."""
    found = {}
    for m in re.finditer(r"^rank (\d+) of (\d+) (universe=.*)$", out, re.M):
        found[int(m.group(1))] = (int(m.group(2)), m.group(3))
    return found


def mpich_tag_ub():
    """MPI_TAG_UB from MPICH alone (one site, plain build)."""
    rc, out, err = gridrun(["--sites", "1", "-n", "1"],
                           [program("f_check_use_mpi_plain")])
    check(rc == 0 and "f_check ok" in out, "one site: exit %d:\n%s%s"
          % (rc, out, err))
    m = re.search(r"universe=(-?\d+) appnum=0 wtime_is_global=0 "
                  r"tag_ub=(\d+)$", out, re.M)
    # MPICH's mpiexec leaves MPI_UNIVERSE_SIZE unset: the grid's value
    # below cannot be MPICH's.
    check(m is not None and m.group(1) == "-1",
          "MPICH's attributes: " + out)
    return int(m.group(2))


def expect_grid(name, sizes, preload, tag_ub):
    exe = program(name + ("_plain" if preload else ""))
    layout = ["--site-sizes", ",".join(map(str, sizes))]
    rc, out, err = gridrun(layout + (["--preload"] if preload else []), [exe])
    what = "%s on %s%s" % (name, layout[1], " --preload" if preload else "")
    world = sum(sizes)
    check(rc == 0 and "FAIL" not in out, "%s: exit %d:\n%s%s"
          % (what, rc, out, err))
    check(out.count("f_check ok\n") == world, "%s: output:\n%s" % (what, out))
    want = {r: (world, "universe=%d appnum=0 wtime_is_global=0 tag_ub=%d"
                % (world, tag_ub)) for r in range(world)}
    check(attributes(out) == want, "%s: attributes:\n%s" % (what, out))


def fortran_programs_across_sites():
    tag_ub = mpich_tag_ub()
    for name in STYLES:
        for sizes in LAYOUTS:
            for preload in (False, True):
                expect_grid(name, sizes, preload, tag_ub)


def mpi_f08_is_stopped():
    for preload in (False, True):
        exe = program("f08_hello" + ("_plain" if preload else ""))
        for extra in ([], ["--no-join-check"]):
            args = (["--site-sizes", "2,1,2"] + extra +
                    (["--preload"] if preload else []))
            rc, out, err = gridrun(args, [exe])
            check(rc != 0 and not re.search(r"^rank \d", out, re.M),
                  "%r: exit %d:\n%s%s" % (args, rc, out, err))
            check(F08_MESSAGE.search(err) is not None,
                  "%r: no message naming mpi_f08:\n%s" % (args, err))
    # One site is MPICH's job alone: nothing to stop.
    rc, out, err = gridrun(["--sites", "1", "-n", "2", "--preload"],
                           [program("f08_hello_plain")])
    check(rc == 0 and sorted(re.findall(r"^rank \d of \d$", out, re.M)) ==
          ["rank 0 of 2", "rank 1 of 2"], "one site: exit %d:\n%s%s"
          % (rc, out, err))


if __name__ == "__main__":
    main([("fortran_programs_across_sites", fortran_programs_across_sites),
          ("mpi_f08_is_stopped", mpi_f08_is_stopped)])
