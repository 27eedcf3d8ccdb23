#!/usr/bin/env python3
"""The installed package: `cmake --install` of the build tree into a
temporary prefix, then an MPI program built against it the two documented
ways (pkg-config with mpicc, and a CMake project using find_package), run
under mpiexec and under the installed gridrun; the static library through
the CMake package; and the installed gridcoll.h on its own (strict C99, and
C++ with C linkage).  Then `cpack -G DEB` of the build tree: the two Debian
packages, which file each holds, their dependencies and maintainer scripts,
and the systemd unit (`systemd-analyze verify`).

The programs include gridcoll.h but call only standard MPI: the GridColl_*
extension functions are declared by the header, not yet provided by every
build of the library."""

import os
import re
import shutil
import subprocess
import tempfile

from harness import BUILD_DIR, SANITIZED, SOURCE_DIR, Skip, check, main

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


# ---- Debian packages (cmake/GridCollPackaging.cmake) -----------------------

RELAY_FILES = {
    "lib/systemd/system/gridrelay.service": 0o644,
    "usr/bin/gridrelay": 0o755,
    "usr/share/doc/gridcoll-relay/examples/gridrelay.conf": 0o644,
    "usr/share/doc/gridcoll-relay/examples/make-certs.sh": 0o755,
}
GRIDCOLL_FILES = {
    "usr/bin/gridrun": 0o755,
    "usr/bin/gridcoll-info": 0o755,
    "usr/bin/gridwan": 0o755,
    "usr/bin/gridrelay-bench": 0o755,
    "usr/bin/gridcoll-probe": 0o755,
    "usr/bin/gridcoll-sched": 0o755,
    "usr/lib/libgridcoll.so": 0o644,
    "usr/lib/libgridcoll.a": 0o644,
    "usr/lib/libgridcoll_client.a": 0o644,
    "usr/lib/libgridcoll_sched.a": 0o644,
    "usr/lib/libgridcoll_common.a": 0o644,
    "usr/include/gridcoll.h": 0o644,
    "usr/lib/pkgconfig/gridcoll.pc": 0o644,
    "usr/lib/cmake/GridColl/GridCollConfig.cmake": 0o644,
    "usr/lib/cmake/GridColl/GridCollConfigVersion.cmake": 0o644,
    "usr/lib/cmake/GridColl/GridCollTargets.cmake": 0o644,
}
# Package names in Depends (versions aside), Debian 12's library packages.
RELAY_DEPENDS = {"adduser", "procps", "libc6", "libconfig9", "libevent-2.1-7",
                 "libevent-openssl-2.1-7", "libssl3", "zlib1g"}
GRIDCOLL_DEPENDS = {"gridcoll-relay", "mpich", "libmpich-dev", "libmpich12",
                    "libc6", "libconfig9", "libssl3", "zlib1g"}
RELAY_SCRIPTS = ("postinst", "prerm", "postrm")
# The unit's contract with the package (postinst, docs/install.md).
UNIT_LINES = ("Type=exec", "User=gridrelay", "Group=gridrelay",
              "ConditionPathExists=/etc/gridcoll/gridrelay.conf",
              "ExecStartPre=/usr/bin/gridrelay --check "
              "/etc/gridcoll/gridrelay.conf",
              "ExecStart=/usr/bin/gridrelay -c /etc/gridcoll/gridrelay.conf",
              "ExecReload=/bin/kill -HUP $MAINPID",
              "RuntimeDirectory=gridrelay", "RuntimeDirectoryPreserve=yes",
              "ProtectSystem=strict", "CapabilityBoundingSet=",
              "NoNewPrivileges=yes", "WantedBy=multi-user.target")
# systemd-analyze security: the score the unit has (1.2 with systemd 252);
# dropping a hardening option pushes it over.
MAX_EXPOSURE = 1.3


def deb_contents(deb):
    """{path: mode} of the regular files of DEB, paths without './'."""
    r = run(["dpkg-deb", "-c", deb])
    check(r.returncode == 0, "dpkg-deb -c %s: %s" % (deb, r.stdout))
    files = {}
    for line in r.stdout.splitlines():
        perms, _owner, _size, _date, _time, path = line.split(None, 5)
        check(perms[0] in "-d", "%s: not a file or directory: %s"
              % (os.path.basename(deb), line))
        if perms[0] == "-":
            mode = 0
            for i, c in enumerate(perms[1:10]):
                if c != "-":
                    mode |= 1 << (8 - i)
            files[path[2:] if path.startswith("./") else path] = mode
    return files


def deb_field(deb, field):
    r = run(["dpkg-deb", "-f", deb, field])
    check(r.returncode == 0, "dpkg-deb -f %s %s: %s" % (deb, field, r.stdout))
    return r.stdout.strip()


def depends_names(depends):
    """Package names of a Depends value: 'a (>= 1), b | c' -> {a, b, c}."""
    names = set()
    for alt in re.split(r"[,|]", depends):
        alt = alt.strip()
        if alt:
            names.add(re.match(r"[a-z0-9][a-z0-9+.-]*", alt).group(0))
    return names


def check_files(what, files, want):
    for path, mode in sorted(want.items()):
        check(path in files, "%s does not hold /%s; it holds:\n  %s"
              % (what, path, "\n  ".join(sorted(files))))
        check(files[path] == mode, "%s: /%s has mode %o, want %o"
              % (what, path, files[path], mode))


def installed_as_packaged(inst):
    """The files `cmake --install` put under the prefix, at the paths the
    packages use: PREFIX/lib/systemd/system -> /lib/systemd/system, the
    rest under /usr."""
    paths = set()
    for root, _dirs, names in os.walk(inst.prefix):
        for name in names:
            rel = os.path.relpath(os.path.join(root, name), inst.prefix)
            paths.add(rel if rel.startswith("lib/systemd/") else "usr/" + rel)
    return paths


def debian_packages():
    """cpack -G DEB: gridcoll-relay and gridcoll, each file in one of them,
    their Depends, maintainer scripts and the unit."""
    if shutil.which("dpkg-deb") is None:
        raise Skip("not a Debian system (no dpkg-deb)")
    if SANITIZED:
        raise Skip("packages are made from the release build")
    inst = Install.get()
    out = inst.workdir("deb")
    r = run(["dpkg", "--print-architecture"])
    arch = r.stdout.strip()
    cpack = "cpack"
    with open(os.path.join(BUILD_DIR, "CMakeCache.txt")) as f:
        m = re.search(r"^CMAKE_CPACK_COMMAND:INTERNAL=(.+)$", f.read(), re.M)
    if m:
        cpack = m.group(1)
    r = run([cpack, "-G", "DEB", "-B", out, "--config",
             os.path.join(BUILD_DIR, "CPackConfig.cmake")], cwd=out)
    check(r.returncode == 0, "cpack -G DEB failed:\n" + r.stdout)
    debs = sorted(f for f in os.listdir(out) if f.endswith(".deb"))
    version = "%s-1" % inst.version
    relay_deb = "gridcoll-relay_%s_%s.deb" % (version, arch)
    gridcoll_deb = "gridcoll_%s_%s.deb" % (version, arch)
    check(debs == sorted([relay_deb, gridcoll_deb]),
          "cpack made %s, want %s and %s" % (debs, relay_deb, gridcoll_deb))
    relay_deb = os.path.join(out, relay_deb)
    gridcoll_deb = os.path.join(out, gridcoll_deb)
    for deb, name in ((relay_deb, "gridcoll-relay"),
                      (gridcoll_deb, "gridcoll")):
        check(deb_field(deb, "Package") == name, "%s: Package %s"
              % (deb, deb_field(deb, "Package")))
        check(deb_field(deb, "Version") == version, "%s: Version %s"
              % (deb, deb_field(deb, "Version")))
        check(deb_field(deb, "Architecture") == arch, "%s: Architecture %s"
              % (deb, deb_field(deb, "Architecture")))

    # Which file is where: the relay package exactly its four, the other
    # one the rest of `cmake --install`, nothing twice, nothing lost.
    relay_files = deb_contents(relay_deb)
    gridcoll_files = deb_contents(gridcoll_deb)
    check(set(relay_files) == set(RELAY_FILES),
          "gridcoll-relay holds %s, want %s"
          % (sorted(relay_files), sorted(RELAY_FILES)))
    check_files("gridcoll-relay", relay_files, RELAY_FILES)
    check_files("gridcoll", gridcoll_files, GRIDCOLL_FILES)
    both = set(relay_files) & set(gridcoll_files)
    check(not both, "in both packages: %s" % sorted(both))
    installed = installed_as_packaged(inst)
    packaged = set(relay_files) | set(gridcoll_files)
    check(packaged == installed,
          "cmake --install and the packages differ: only installed %s, "
          "only packaged %s" % (sorted(installed - packaged),
                                sorted(packaged - installed)))

    depends = deb_field(relay_deb, "Depends")
    missing = RELAY_DEPENDS - depends_names(depends)
    check(not missing, "gridcoll-relay Depends lacks %s: %s"
          % (sorted(missing), depends))
    depends = deb_field(gridcoll_deb, "Depends")
    missing = GRIDCOLL_DEPENDS - depends_names(depends)
    check(not missing, "gridcoll Depends lacks %s: %s"
          % (sorted(missing), depends))
    check("gridcoll-relay (= %s)" % version in depends,
          "gridcoll does not depend on gridcoll-relay (= %s): %s"
          % (version, depends))

    # Maintainer scripts: the relay's are the committed ones, executable
    # and valid sh; gridcoll's run ldconfig for /usr/lib/libgridcoll.so.
    control = os.path.join(out, "control")
    os.makedirs(control)
    for deb, sub in ((relay_deb, "relay"), (gridcoll_deb, "gridcoll")):
        r = run(["dpkg-deb", "-e", deb, os.path.join(control, sub)])
        check(r.returncode == 0, "dpkg-deb -e %s: %s" % (deb, r.stdout))
    for script in RELAY_SCRIPTS:
        path = os.path.join(control, "relay", script)
        check(os.path.isfile(path), "gridcoll-relay has no " + script)
        check(os.stat(path).st_mode & 0o777 == 0o755,
              "gridcoll-relay %s has mode %o" % (script,
                                                 os.stat(path).st_mode))
        with open(path) as f, open(os.path.join(
                SOURCE_DIR, "cmake", "debian", "gridcoll-relay",
                script)) as g:
            check(f.read() == g.read(), "gridcoll-relay %s differs from "
                  "cmake/debian/gridcoll-relay/%s" % (script, script))
        r = run(["sh", "-n", path])
        check(r.returncode == 0, "sh -n %s: %s" % (script, r.stdout))
    with open(os.path.join(control, "relay", "postinst")) as f:
        postinst = f.read()
    check("adduser --system --group" in postinst and
          "/etc/gridcoll" in postinst, "gridcoll-relay postinst creates "
          "neither the user nor /etc/gridcoll")
    for script in ("postinst", "postrm"):
        path = os.path.join(control, "gridcoll", script)
        check(os.path.isfile(path), "gridcoll has no " + script)
        with open(path) as f:
            check("ldconfig" in f.read(), "gridcoll %s runs no ldconfig"
                  % script)

    # The unit and the example configuration are the source's.
    root = os.path.join(out, "root-relay")
    r = run(["dpkg-deb", "-x", relay_deb, root])
    check(r.returncode == 0, "dpkg-deb -x: " + r.stdout)
    unit = os.path.join(root, "lib/systemd/system/gridrelay.service")
    for packaged_file, source in (
            (unit, "conf/systemd/gridrelay.service"),
            (os.path.join(root, "usr/share/doc/gridcoll-relay/examples/"
                          "gridrelay.conf"), "conf/gridrelay.conf.example")):
        with open(packaged_file, "rb") as f, open(
                os.path.join(SOURCE_DIR, source), "rb") as g:
            check(f.read() == g.read(), "%s in gridcoll-relay differs from "
                  "%s" % (packaged_file[len(root):], source))
    with open(unit) as f:
        lines = set(l.strip() for l in f)
    missing = [l for l in UNIT_LINES if l not in lines]
    check(not missing, "gridrelay.service lacks: %s" % missing)
    check_unit(unit, inst)


def check_unit(unit, inst):
    """systemd-analyze verify, and the exposure score of
    systemd-analyze security --offline, on the packaged unit (with the
    binary path pointed at the build's gridrelay, which verify wants to
    exist)."""
    if shutil.which("systemd-analyze") is None:
        print("debian_packages: systemd-analyze not installed (package "
              "systemd): the unit was not verified", flush=True)
        return
    work = inst.workdir("unit")
    copy = os.path.join(work, "gridrelay.service")
    relay = os.path.realpath(os.path.join(BUILD_DIR, "bin", "gridrelay"))
    with open(unit) as f, open(copy, "w") as g:
        g.write(f.read().replace("/usr/bin/gridrelay", relay))
    r = run(["systemd-analyze", "verify", copy], cwd=work)
    check(r.returncode == 0 and r.stdout.strip() == "",
          "systemd-analyze verify gridrelay.service: exit %d:\n%s"
          % (r.returncode, r.stdout))
    r = run(["systemd-analyze", "security", "--offline=true", copy],
            cwd=work)
    m = re.search(r"Overall exposure level for gridrelay\.service: "
                  r"([0-9.]+)", r.stdout)
    if r.returncode != 0 and m is None and "offline" in r.stdout:
        print("debian_packages: systemd-analyze security has no --offline "
              "here: exposure not checked", flush=True)
        return
    check(m is not None, "systemd-analyze security --offline: exit %d:\n%s"
          % (r.returncode, r.stdout))
    check(float(m.group(1)) <= MAX_EXPOSURE,
          "gridrelay.service exposure %s > %.1f:\n%s"
          % (m.group(1), MAX_EXPOSURE, r.stdout))


if __name__ == "__main__":
    try:
        main([("installed_files", installed_files),
              ("pkg_config_build", pkg_config_build),
              ("cmake_package_build", cmake_package_build),
              ("cmake_package_version_check", cmake_package_version_check),
              ("installed_gridrun_runs_the_program",
               installed_gridrun_runs_the_program),
              ("header_strict_c99", header_strict_c99),
              ("header_cplusplus", header_cplusplus),
              ("debian_packages", debian_packages)])
    finally:
        if Install._instance is not None:
            shutil.rmtree(Install._instance.dir, ignore_errors=True)
