#!/usr/bin/env python3
"""The installed package: `cmake --install` of the build tree into a
temporary prefix, then an MPI program built against it the two documented
ways (pkg-config with mpicc, and a CMake project using find_package), run
under mpiexec and under the installed gridrun; the static library through
the CMake package; and the installed gridcoll.h on its own (strict C99, and
C++ with C linkage).

The programs include gridcoll.h but call only standard MPI: the GridColl_*
extension functions are declared by the header, not yet provided by every
build of the library."""

import os
import re
import shutil
import subprocess
import tempfile

from harness import BUILD_DIR, SANITIZED, Skip, check, main

PROGRAM = r"""
#include <gridcoll.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (rank == 0)
        printf("gridcoll version %s (%d.%d.%d)\n", GRIDCOLL_VERSION,
               GRIDCOLL_VERSION_MAJOR, GRIDCOLL_VERSION_MINOR,
               GRIDCOLL_VERSION_PATCH);
    printf("rank %d of %d\n", rank, size);
    MPI_Finalize();
    return 0;
}
"""

CMAKE_PROJECT = r"""
cmake_minimum_required(VERSION 3.20)
project(packaging_consumer LANGUAGES C)
find_package(GridColl REQUIRED COMPONENTS static)
add_executable(app app.c)
target_link_libraries(app PRIVATE GridColl::gridcoll)
add_executable(app_static app.c)
target_link_libraries(app_static PRIVATE GridColl::gridcoll_static)
file(WRITE ${CMAKE_BINARY_DIR}/gridcoll-version.txt "${GridColl_VERSION}")
"""

# Every declaration of the header used, so a wrong prototype fails to compile.
HEADER_USE = r"""
#include <gridcoll.h>

int use_gridcoll(MPI_Comm comm);
int use_gridcoll(MPI_Comm comm)
{
    char name[GRIDCOLL_MAX_SITE_NAME + 1];
    int count = 0, site = 0, len = 0;
    int rc = GridColl_Comm_site_count(comm, &count);
    if (rc == MPI_SUCCESS)
        rc = GridColl_Comm_site_of(comm, 0, &site);
    if (rc == MPI_SUCCESS)
        rc = GridColl_Site_name(site, name, &len);
    return rc;
}
"""

FUNCTIONS = ("GridColl_Comm_site_count", "GridColl_Comm_site_of",
             "GridColl_Site_name")


class Install:
    """The build tree installed into a temporary prefix (once per run)."""

    _instance = None

    @classmethod
    def get(cls):
        if cls._instance is None:
            cls._instance = cls()
        return cls._instance

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="gridcoll-packaging-")
        self.prefix = os.path.join(self.dir, "prefix")
        r = run(["cmake", "--install", BUILD_DIR, "--prefix", self.prefix])
        check(r.returncode == 0, "cmake --install failed:\n" + r.stdout)
        self.lib = os.path.join(self.prefix, "lib")
        self.include = os.path.join(self.prefix, "include")
        self.bin = os.path.join(self.prefix, "bin")
        self.version = project_version()

    def env(self, **extra):
        env = dict(os.environ)
        env["PKG_CONFIG_PATH"] = os.pathsep.join(
            [os.path.join(self.lib, "pkgconfig")] +
            [p for p in [env.get("PKG_CONFIG_PATH")] if p])
        env["LD_LIBRARY_PATH"] = os.pathsep.join(
            [self.lib] + [p for p in [env.get("LD_LIBRARY_PATH")] if p])
        env.update(extra)
        return env

    def workdir(self, name):
        path = os.path.join(self.dir, name)
        os.makedirs(path, exist_ok=True)
        return path


def needs_unsanitized_library():
    if SANITIZED:
        raise Skip("the sanitized (ASan) libgridcoll cannot be linked into "
                   "uninstrumented programs; covered by the release build")


def run(args, timeout=300, **kwargs):
    return subprocess.run(args, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True,
                          timeout=timeout, **kwargs)


def project_version():
    """VERSION of the top-level project(), from the build's cache."""
    with open(os.path.join(BUILD_DIR, "CMakeCache.txt")) as f:
        cache = f.read()
    m = re.search(r"^CMAKE_PROJECT_VERSION:STATIC=(\S+)$", cache, re.M)
    check(m is not None, "no CMAKE_PROJECT_VERSION in CMakeCache.txt")
    return m.group(1)


def check_mpi_run(inst, program, what):
    """`mpiexec -n 2 PROGRAM` prints the version and both ranks."""
    r = run(["mpiexec", "-n", "2", program], timeout=120, env=inst.env())
    check(r.returncode == 0, "%s: mpiexec exit %d:\n%s"
          % (what, r.returncode, r.stdout))
    version = "gridcoll version %s (%s)" % (
        inst.version, ".".join(inst.version.split(".")[:3]))
    check(version in r.stdout, "%s: no '%s' in:\n%s" % (what, version,
                                                        r.stdout))
    ranks = sorted(l for l in r.stdout.splitlines() if l.startswith("rank "))
    check(ranks == ["rank 0 of 2", "rank 1 of 2"], "%s: rank lines:\n%s"
          % (what, r.stdout))


def linked_libgridcoll(inst, program):
    r = run(["ldd", program], env=inst.env())
    m = re.search(r"libgridcoll\.so\S* => (\S+)", r.stdout)
    return m.group(1) if m else None


def installed_files():
    inst = Install.get()
    want = ["bin/gridrun", "bin/gridrelay", "bin/gridrelay-bench",
            "bin/gridwan", "lib/libgridcoll.so", "lib/libgridcoll.a",
            "lib/libgridcoll_client.a", "lib/libgridcoll_sched.a",
            "lib/libgridcoll_common.a",
            "include/gridcoll.h", "lib/pkgconfig/gridcoll.pc",
            "lib/cmake/GridColl/GridCollConfig.cmake",
            "lib/cmake/GridColl/GridCollConfigVersion.cmake",
            "lib/cmake/GridColl/GridCollTargets.cmake"]
    missing = [f for f in want
               if not os.path.exists(os.path.join(inst.prefix, f))]
    check(not missing, "not installed: %s" % ", ".join(missing))
    for tool in ("gridrun", "gridrelay", "gridrelay-bench"):
        check(os.access(os.path.join(inst.bin, tool), os.X_OK),
              tool + " is not executable")
    with open(os.path.join(inst.include, "gridcoll.h")) as f:
        header = f.read()
    check('#define GRIDCOLL_VERSION "%s"' % inst.version in header,
          "gridcoll.h does not carry version %s" % inst.version)
    for fn in FUNCTIONS:
        check(fn + "(" in header, "gridcoll.h does not declare " + fn)
    # Nothing of the build or source tree may leak into the package.
    for f in ("lib/pkgconfig/gridcoll.pc",
              "lib/cmake/GridColl/GridCollTargets.cmake"):
        with open(os.path.join(inst.prefix, f)) as fh:
            text = fh.read()
        for tree in (os.path.realpath(BUILD_DIR), os.path.abspath(BUILD_DIR)):
            check(tree not in text, "%s refers to the build tree" % f)


def pkg_config_build():
    needs_unsanitized_library()
    inst = Install.get()
    if shutil.which("pkg-config") is None:
        raise Skip("pkg-config is not installed")
    env = inst.env()
    r = run(["pkg-config", "--modversion", "gridcoll"], env=env)
    check(r.returncode == 0 and r.stdout.strip() == inst.version,
          "pkg-config --modversion gridcoll: " + r.stdout)
    r = run(["pkg-config", "--cflags", "--libs", "gridcoll"], env=env)
    check(r.returncode == 0, "pkg-config --cflags --libs: " + r.stdout)
    flags = r.stdout.split()
    dirs = {f[:2]: os.path.realpath(f[2:]) for f in flags
            if f.startswith(("-I", "-L")) and
            os.path.realpath(f[2:]).startswith(os.path.realpath(inst.prefix))}
    check(dirs.get("-I") == os.path.realpath(inst.include) and
          dirs.get("-L") == os.path.realpath(inst.lib) and
          "-lgridcoll" in flags, "pkg-config flags: " + r.stdout)
    work = inst.workdir("pkg-config")
    src = os.path.join(work, "app.c")
    with open(src, "w") as f:
        f.write(PROGRAM)
    exe = os.path.join(work, "app")
    r = run(["mpicc", "-std=c11", "-Wall", "-Wextra", "-Werror", "-o", exe,
             src] + flags, env=env)
    check(r.returncode == 0, "mpicc with pkg-config flags failed:\n"
          + r.stdout)
    lib = linked_libgridcoll(inst, exe)
    check(lib is not None and os.path.realpath(lib) ==
          os.path.realpath(os.path.join(inst.lib, "libgridcoll.so")),
          "program does not load the installed libgridcoll.so: %s" % lib)
    check_mpi_run(inst, exe, "pkg-config build")


def cmake_package_build():
    needs_unsanitized_library()
    inst = Install.get()
    work = inst.workdir("cmake")
    src = os.path.join(work, "src")
    build = os.path.join(work, "build")
    os.makedirs(src, exist_ok=True)
    with open(os.path.join(src, "CMakeLists.txt"), "w") as f:
        f.write(CMAKE_PROJECT)
    with open(os.path.join(src, "app.c"), "w") as f:
        f.write(PROGRAM)
    r = run(["cmake", "-S", src, "-B", build,
             "-DCMAKE_PREFIX_PATH=" + inst.prefix,
             "-DCMAKE_BUILD_TYPE=RelWithDebInfo",
             "-DCMAKE_C_FLAGS=-Wall -Wextra -Werror"], env=inst.env())
    check(r.returncode == 0, "configuring the consumer project failed:\n"
          + r.stdout)
    with open(os.path.join(build, "gridcoll-version.txt")) as f:
        found = f.read().strip()
    check(found == inst.version, "find_package found GridColl %s, want %s"
          % (found, inst.version))
    r = run(["cmake", "--build", build], env=inst.env())
    check(r.returncode == 0, "building the consumer project failed:\n"
          + r.stdout)
    shared = os.path.join(build, "app")
    static = os.path.join(build, "app_static")
    lib = linked_libgridcoll(inst, shared)
    check(lib is not None and os.path.realpath(lib) ==
          os.path.realpath(os.path.join(inst.lib, "libgridcoll.so")),
          "GridColl::gridcoll program does not load the installed "
          "libgridcoll.so: %s" % lib)
    check(linked_libgridcoll(inst, static) is None,
          "GridColl::gridcoll_static program loads libgridcoll.so")
    check_mpi_run(inst, shared, "find_package build (GridColl::gridcoll)")
    check_mpi_run(inst, static,
                  "find_package build (GridColl::gridcoll_static)")


def cmake_package_version_check():
    inst = Install.get()
    work = inst.workdir("cmake-version")
    major, minor = inst.version.split(".")[:2]
    for want, ok in ((inst.version, True), ("%s.%s" % (major, minor), True),
                     ("%d.0" % (int(major) + 1), False)):
        src = os.path.join(work, "src-" + want)
        os.makedirs(src, exist_ok=True)
        with open(os.path.join(src, "CMakeLists.txt"), "w") as f:
            f.write("cmake_minimum_required(VERSION 3.20)\n"
                    "project(v LANGUAGES C)\n"
                    "find_package(GridColl %s REQUIRED)\n" % want)
        r = run(["cmake", "-S", src, "-B", os.path.join(src, "build"),
                 "-DCMAKE_PREFIX_PATH=" + inst.prefix], env=inst.env())
        check((r.returncode == 0) == ok,
              "find_package(GridColl %s) %s:\n%s"
              % (want, "failed" if ok else "succeeded", r.stdout))


def installed_gridrun_runs_the_program():
    # The installed gridrun finds the installed gridrelay next to itself;
    # the program linked with the installed library sees one world over two
    # sites.
    needs_unsanitized_library()
    inst = Install.get()
    work = inst.workdir("gridrun")
    src = os.path.join(work, "app.c")
    with open(src, "w") as f:
        f.write(PROGRAM)
    exe = os.path.join(work, "app")
    r = run(["mpicc", "-o", exe, src, "-I" + inst.include,
             "-L" + inst.lib, "-lgridcoll"], env=inst.env())
    check(r.returncode == 0, "mpicc failed:\n" + r.stdout)
    env = inst.env()
    env.pop("GRIDCOLL_RELAY_BIN", None)
    r = run([os.path.join(inst.bin, "gridrun"), "--timeout", "60",
             "--sites", "2", "-n", "2", "--", exe], timeout=90, env=env)
    check(r.returncode == 0, "installed gridrun: exit %d:\n%s"
          % (r.returncode, r.stdout))
    ranks = sorted(l for l in r.stdout.splitlines() if l.startswith("rank "))
    check(ranks == ["rank 0 of 2", "rank 1 of 2"],
          "installed gridrun, rank lines:\n" + r.stdout)
    # --preload finds the installed libgridcoll.so (../lib next to bin/)
    # for a program built against plain MPICH.
    plain = os.path.join(work, "app_plain")
    r = run(["mpicc", "-o", plain, src, "-I" + inst.include], env=env)
    check(r.returncode == 0, "mpicc (plain MPICH) failed:\n" + r.stdout)
    r = run([os.path.join(inst.bin, "gridrun"), "--timeout", "60",
             "--sites", "2", "-n", "2", "--preload", "--", plain],
            timeout=90, env=env)
    ranks = sorted(l for l in r.stdout.splitlines() if l.startswith("rank "))
    check(r.returncode == 0 and ranks == ["rank 0 of 2", "rank 1 of 2"],
          "installed gridrun --preload: exit %d:\n%s"
          % (r.returncode, r.stdout))


def header_flags(inst):
    """`pkg-config --cflags gridcoll`: the installed include/ and mpich's."""
    r = run(["pkg-config", "--cflags", "gridcoll"], env=inst.env())
    check(r.returncode == 0, "pkg-config --cflags gridcoll: " + r.stdout)
    return r.stdout.split()


def compile_header(inst, compiler, std, suffix):
    """Compile HEADER_USE; return the undefined symbols of the object."""
    work = inst.workdir("header")
    path = os.path.join(work, "use" + suffix)
    with open(path, "w") as f:
        f.write(HEADER_USE)
    obj = path + ".o"
    r = run([compiler, "-std=" + std, "-Wall", "-Wextra", "-Werror",
             "-pedantic", "-c", "-o", obj] + header_flags(inst) + [path])
    check(r.returncode == 0, "%s -std=%s on gridcoll.h failed:\n%s"
          % (compiler, std, r.stdout))
    return run(["nm", "-u", obj]).stdout.split()


def header_strict_c99():
    inst = Install.get()
    compilers = [c for c in ("gcc", "clang") if shutil.which(c)]
    for cc in compilers:
        undefined = compile_header(inst, cc, "c99", ".c")
        for fn in FUNCTIONS:
            check(fn in undefined, "%s: %s not referenced: %s"
                  % (cc, fn, undefined))


def header_cplusplus():
    inst = Install.get()
    if shutil.which("g++") is None:
        raise Skip("g++ is not installed")
    work = inst.workdir("header")
    path = os.path.join(work, "syntax.cpp")
    with open(path, "w") as f:
        f.write(HEADER_USE)
    r = run(["g++", "-fsyntax-only", "-Wall", "-Wextra", "-Werror",
             "-pedantic"] + header_flags(inst) + [path])
    check(r.returncode == 0, "g++ -fsyntax-only failed:\n" + r.stdout)
    # Compiled for real, the references must be to the unmangled C names
    # (the header's extern "C" block).
    undefined = compile_header(inst, "g++", "c++11", ".cpp")
    for fn in FUNCTIONS:
        check(fn in undefined, "%s has no C linkage in C++: %s"
              % (fn, undefined))


if __name__ == "__main__":
    try:
        main([("installed_files", installed_files),
              ("pkg_config_build", pkg_config_build),
              ("cmake_package_build", cmake_package_build),
              ("cmake_package_version_check", cmake_package_version_check),
              ("installed_gridrun_runs_the_program",
               installed_gridrun_runs_the_program),
              ("header_strict_c99", header_strict_c99),
              ("header_cplusplus", header_cplusplus)])
    finally:
        if Install._instance is not None:
            shutil.rmtree(Install._instance.dir, ignore_errors=True)
