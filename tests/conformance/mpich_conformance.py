#!/usr/bin/env python3
"""Run MPICH's own test suite (test/mpi) against GridColl.

The runner builds the suite out of tree twice -- once against plain MPICH
(``plain``) and once linked against libgridcoll (``linked``: every executable
has libgridcoll.so in its DT_NEEDED list, before libmpich) -- parses the
suite's ``testlist`` files the way MPICH's ``runtests`` does, and runs each
test in one or more modes:

``plain``
    ``mpiexec -n N ./prog`` on the plain build (MPICH alone, the reference).
``2site``, ``3site``
    The linked build under ``gridrun --site-sizes ...``, the N ranks spread
    over 2 or 3 simulated sites as evenly as possible (the first sites get
    the remainder).  A test with fewer ranks than sites is ``n/a``.
``2site-preload``, ``3site-preload``
    The plain build under ``gridrun --preload`` (libgridcoll injected with
    LD_PRELOAD into a program linked only against MPICH).

Every run is classified as ``pass``, ``unsupported`` (GridColl reported an
MPI call as not supported on a communicator that spans sites), ``wrong``
(the test completed but reported errors or no "No Errors"), ``crash``
(signal, abort, fatal MPI error, nonzero exit), ``hang`` (timeout),
``n/a`` or ``build-failed``.  Results are written after every run to
``RESULTS/results.csv`` and ``RESULTS/results.md``; the tail of each
non-passing run's output goes to ``RESULTS/logs/DIR/TEST.MODE.log``, and
``RESULTS/FAILURES-DIR.md`` lists the grid failures of each directory with
a command to reproduce them (including ``RESULTS/NOTES-DIR.md``, a
hand-written analysis, when it exists).

The suite itself is never copied into the GridColl repository: it is copied
into the work directory (``--work``), completed with MPICH's ``confdb`` and
``maint/version.m4`` (which live at the top of an MPICH checkout, not in
test/mpi), and configured there.  See docs/conformance.md.

Typical use::

    tests/conformance/mpich_conformance.py --suite /work/ext/test/mpi \\
        --dirs pt2pt --modes plain,2site,3site --results /work/ext/results

Only the Python standard library is used.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
ALL_MODES = ["plain", "2site", "3site", "2site-preload", "3site-preload"]
CLASSES = ["pass", "unsupported", "wrong", "crash", "hang", "n/a",
           "build-failed"]
DEFAULT_DIRS = "pt2pt,datatype,comm,group,attr,init,errhan,coll"
CSV_FIELDS = ["dir", "test", "nprocs", "mode", "class", "seconds", "reason"]
# The MPI standard version MPICH 4.0.2 implements (for mpiversion=).
MPI_VERSION = (4, 0)
CONFIGURE_ARGS = ["--disable-fortran", "--disable-cxx", "--disable-spawn",
                  "--disable-ft-tests", "--disable-checkpointing",
                  "--disable-romio", "--disable-perftest"]
# GridColl's wording (libgridcoll/core/gc_error.c, unsupported_code():
# "FUNCTION is not supported WHERE (GridColl)", FUNCTION being e.g.
# "MPI_Isendrecv" or "MPI_Comm_split_type with MPI_COMM_TYPE_HW_UNGUIDED",
# WHERE "on a communicator that spans sites" or, for MPI_Session_init,
# "in a job that spans sites").
UNSUPPORTED_RE = re.compile(
    r"(MPI_\w+(?: with \w+)?) is not supported "
    r"(?:on a communicator|in a job) that spans sites")
NO_ERRORS_RE = re.compile(r"^\s*No [Ee]rrors\s*$", re.M)
FOUND_ERRORS_RE = re.compile(r"Found\s+\d+\s+errors?", re.I)
REASON_RE = re.compile(
    r"(not supported on a communicator|Fatal error in|Assertion|"
    r"Segmentation|BAD TERMINATION|KILLED BY SIGNAL|signal|TIMED OUT|"
    r"timed out|timeout|Found\s+\d+\s+errors?|[Ee]rror|[Ff]ailed|"
    r"gridrun:|gridcoll)")
TAIL_LINES = 60
TOOLS = {"autoconf": "autoconf", "automake": "automake",
         "libtoolize": "libtool", "make": "make", "perl": "perl"}


# --------------------------------------------------------------------------
# testlist parsing


@dataclass
class Test:
    """One line of a testlist: a program run with N ranks and options."""

    dir: str            # directory relative to the suite top, e.g. "pt2pt"
    program: str        # program name relative to dir (may be "sub/prog")
    nprocs: int
    args: list = field(default_factory=list)
    envs: list = field(default_factory=list)
    mpiexecargs: list = field(default_factory=list)
    time_limit: int | None = None
    xfail: str = ""
    result_test: str = ""
    strict: str = ""
    mpix: str = ""
    mpiversion: str = ""
    name: str = ""      # unique within dir: program plus args/env

    def label(self) -> str:
        parts = [self.program] + list(self.args)
        parts += ["env:" + e for e in self.envs]
        parts += ["mpiexec:" + a for a in self.mpiexecargs]
        return " ".join(parts)


def parse_testlist(build_top: Path, dirname: str, np_default: int = 2,
                   listfile: str = "testlist", src_top: Path | None = None
                   ) -> list:
    """Parse DIR/testlist of a configured build the way runtests does.

    A line is ``program [np [key=value ...]]``; ``#`` starts a comment;
    ``!dir:target`` lines (build helpers) are ignored; an entry that names a
    directory is descended into with that directory's own testlist.  Like
    runtests' -srcdir, a testlist missing from the build directory (one
    not generated from testlist.in) is read from the source tree.
    """
    tests = []
    path = build_top / dirname / listfile
    if not path.is_file() and src_top is not None:
        path = src_top / dirname / listfile
    if not path.is_file():
        return tests
    for raw in path.read_text(errors="replace").splitlines():
        line = raw.split("#", 1)[0].strip()
        if not line or line.startswith("!"):
            continue
        words = line.split()
        prog = words[0]
        if (build_top / dirname / prog).is_dir() or (
                src_top is not None and (src_top / dirname / prog).is_dir()):
            tests += parse_testlist(build_top, f"{dirname}/{prog}",
                                    np_default, listfile, src_top)
            continue
        np = np_default
        if len(words) > 1 and words[1].isdigit():
            np = int(words[1])
        t = Test(dir=dirname, program=prog, nprocs=np)
        for kv in words[2:]:
            if "=" not in kv:
                continue
            key, value = kv.split("=", 1)
            if key == "arg":
                t.args.append(value)
            elif key == "env":
                t.envs.append(value)
            elif key == "mpiexecarg":
                t.mpiexecargs.append(value)
            elif key == "timeLimit" and value.isdigit():
                t.time_limit = int(value)
            elif key == "xfail":
                t.xfail = value or "?"
            elif key == "resultTest":
                t.result_test = value
            elif key == "strict":
                t.strict = value
            elif key == "mpix":
                t.mpix = value
            elif key == "mpiversion":
                t.mpiversion = value
            # init=, lock=, mem= only matter to runtests' scheduling
        tests.append(t)
    # Unique names within each directory.
    seen = {}
    for t in tests:
        base = t.label()
        key = (t.dir, base, t.nprocs)
        seen[key] = seen.get(key, 0) + 1
        t.name = base if seen[key] == 1 else f"{base} #{seen[key]}"
    return tests


def top_dir(t: Test) -> str:
    return t.dir.split("/", 1)[0]


def skip_reason(t: Test, run_xfail: bool) -> str:
    """Why runtests would not run this test (empty: it would)."""
    if t.xfail and not run_xfail:
        return f"xfail={t.xfail} (runtests skips xfail tests by default)"
    if t.mpiversion:
        try:
            want = tuple(int(x) for x in t.mpiversion.split(".")[:2])
            if want > MPI_VERSION:
                return f"needs MPI {t.mpiversion}"
        except ValueError:
            pass
    return ""


# --------------------------------------------------------------------------
# building the suite


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def run_logged(cmd, cwd, logfile: Path, env=None) -> int:
    """Run cmd in cwd appending its output to logfile; return its status."""
    with open(logfile, "a") as f:
        f.write(f"\n$ (cd {cwd} && {shlex.join(cmd)})\n")
        f.flush()
        return subprocess.call(cmd, cwd=cwd, stdout=f, stderr=subprocess.STDOUT,
                               stdin=subprocess.DEVNULL, env=env)


def ensure_tools() -> None:
    """Install the Debian packages autogen/configure need, if missing."""
    missing = sorted({pkg for tool, pkg in TOOLS.items()
                      if shutil.which(tool) is None})
    if not missing:
        return
    log(f"installing missing packages: {' '.join(missing)}")
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    subprocess.check_call(["apt-get", "update", "-qq"], env=env)
    subprocess.check_call(["apt-get", "install", "-y", "-qq"] + missing,
                          env=env)


def find_libgridcoll(gridcoll_build: Path) -> Path:
    for cand in [gridcoll_build / "lib" / "libgridcoll.so",
                 *sorted(gridcoll_build.rglob("libgridcoll.so"))]:
        if cand.is_file():
            return cand.resolve()
    sys.exit(f"libgridcoll.so not found under {gridcoll_build}")


def mpich_version() -> str:
    """MPICH's version from the installed headers (e.g. '4.0.2')."""
    try:
        out = subprocess.run(["mpichversion"], capture_output=True,
                             text=True).stdout
        m = re.search(r"Version:\s*(\S+)", out)
        if m:
            return m.group(1)
    except OSError:
        pass
    for inc in Path("/usr/include").rglob("mpi.h"):
        m = re.search(r'#define MPICH_VERSION "([^"]+)"', inc.read_text(
            errors="replace"))
        if m:
            return m.group(1)
    return "unknown"


def write_mtest_mpix_h(top: Path, dest: Path) -> None:
    """Write include/mtest_mpix.h as MPICH's autogen does.

    MPICH generates it (maint/gen_binding_c.py) from src/binding/mpix.txt:
    one ``#define MPI_X MPIX_X`` per listed function, not yet standardized.
    """
    if dest.exists():
        return
    names = []
    mpix = top / "src" / "binding" / "mpix.txt"
    if mpix.is_file():
        names = re.findall(r"^(MPI_\w+)", mpix.read_text(), re.M)
    else:
        log(f"warning: {mpix} not found; writing an empty mtest_mpix.h")
    lines = ["#ifndef MTEST_MPIX_H_INCLUDED", "#define MTEST_MPIX_H_INCLUDED",
             ""]
    lines += [f"#define {n} {n.replace('MPI_', 'MPIX_', 1)}" for n in names]
    lines += ["", "#endif /* MTEST_MPIX_H_INCLUDED */", ""]
    dest.write_text("\n".join(lines))


def prepare_source(suite: Path, mpich_src: Path | None, work: Path) -> Path:
    """Copy the suite to WORK/src, add confdb and version.m4, autogen it."""
    src = work / "src"
    stamp = src / ".conformance-autogen-done"
    if stamp.exists():
        return src
    if src.exists():
        shutil.rmtree(src)
    log(f"copying {suite} to {src}")
    shutil.copytree(suite, src, symlinks=True)
    for p in [src, *src.rglob("*")]:
        if not p.is_symlink():
            p.chmod(p.stat().st_mode | 0o200)
    top = mpich_src or suite.parent.parent
    confdb = top / "confdb"
    if not (src / "confdb" / "aclocal_cc.m4").exists():
        if not confdb.is_dir():
            sys.exit(f"MPICH's confdb not found at {confdb}: extract it with "
                     "the suite (see docs/conformance.md) or pass --mpich-src")
        for dest in [src / "confdb", src / "dtpools" / "confdb"]:
            if dest.exists():
                shutil.rmtree(dest)
            shutil.copytree(confdb, dest)
    if not (src / "version.m4").exists():
        vm4 = top / "maint" / "version.m4"
        if vm4.is_file():
            shutil.copy(vm4, src / "version.m4")
        else:
            ver = mpich_version()
            (src / "version.m4").write_text(
                f"m4_define([MPICH_VERSION_m4],[{ver}])dnl\n"
                "m4_define([MPICH_RELEASE_DATE_m4],[unknown])dnl\n")
    write_mtest_mpix_h(top, src / "include" / "mtest_mpix.h")
    logf = work / "autogen.log"
    log(f"autogen (log: {logf})")
    if (run_logged(["sh", "autogen.sh"], src, logf) != 0 or
            run_logged(["autoreconf", "-if"], src, logf) != 0):
        sys.exit(f"autogen failed, see {logf}")
    stamp.write_text("ok\n")
    return src


def configure_variant(src: Path, bdir: Path, libgridcoll: Path | None) -> None:
    """Configure one build of the suite (linked against libgridcoll or not)."""
    if (bdir / "config.status").exists() and (bdir / "Makefile").exists():
        return
    bdir.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, CC="mpicc")
    if libgridcoll is not None:
        libdir = str(libgridcoll.parent)
        # One -Wl argument: libtool moves a bare -lgridcoll behind the
        # objects, outside --no-as-needed, and the linker then drops it from
        # programs that call no function libgridcoll wraps itself.
        env["LIBS"] = f"-L{libdir} -Wl,--no-as-needed,-lgridcoll,--as-needed"
        env["LDFLAGS"] = f"-Wl,-rpath,{libdir}"
    logf = bdir / "configure.log"
    log(f"configuring {bdir} (log: {logf})")
    if run_logged([str(src / "configure")] + CONFIGURE_ARGS, bdir, logf,
                  env) != 0:
        sys.exit(f"configure failed, see {logf}")


def build_dirs(bdir: Path, dirs: list, jobs: int) -> None:
    """Build the test library and the requested directories (make -k)."""
    logf = bdir / "make.log"
    logf.write_text("")
    run_logged(["make", f"-j{jobs}", "-C", "util"], bdir, logf)
    for d in dirs:
        if (bdir / d).is_dir():
            log(f"building {bdir.name}/{d}")
            run_logged(["make", "-k", f"-j{jobs}"], bdir / d, logf)


def linked_ok(exe: Path) -> bool:
    """True if exe loads libgridcoll.so ahead of libmpich."""
    try:
        out = subprocess.run(["ldd", str(exe)], capture_output=True,
                             text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return False
    libs = [ln.split()[0] for ln in out.splitlines() if "=>" in ln]
    gc = [i for i, n in enumerate(libs) if n.startswith("libgridcoll.so")]
    mp = [i for i, n in enumerate(libs) if n.startswith("libmpi")]
    return bool(gc) and (not mp or gc[0] < mp[0])


def check_linked(top: Path, dirs: list) -> tuple:
    """(number of good executables, list of bad ones) under top/DIRS."""
    n_ok, bad = 0, []
    for d in dirs:
        for exe in sorted((top / d).rglob("*")):
            if (not exe.is_file() or not os.access(exe, os.X_OK) or
                    exe.suffix or ".libs" in exe.parts):
                continue
            with open(exe, "rb") as f:
                if f.read(4) != b"\x7fELF":
                    continue
            if linked_ok(exe):
                n_ok += 1
            else:
                bad.append(exe)
    return n_ok, bad


# --------------------------------------------------------------------------
# running and classifying


def site_sizes(n: int, sites: int) -> list:
    base, extra = divmod(n, sites)
    return [base + (1 if i < extra else 0) for i in range(sites)]


def mode_sites(mode: str) -> int:
    return 0 if mode == "plain" else int(mode[0])


def tail(text: str, lines: int = TAIL_LINES) -> str:
    return "\n".join(text.rstrip("\n").splitlines()[-lines:])


def first_reason(out: str, cls: str, rc) -> str:
    """One line explaining a non-passing run."""
    m = UNSUPPORTED_RE.search(out)
    if cls == "unsupported" and m:
        return m.group(0)
    for ln in out.splitlines():
        s = ln.strip()
        if s and REASON_RE.search(s) and not NO_ERRORS_RE.match(s):
            return s[:200]
    last = [ln.strip() for ln in out.splitlines() if ln.strip()]
    extra = f"; last line: {last[-1][:160]}" if last else "; no output"
    return f"exit status {rc}{extra}"


def classify(t: Test, rc, out: str, timed_out: bool, grid: bool) -> str:
    if timed_out:
        return "hang"
    if t.result_test in ("TestStatus", "TestErrFatal"):
        # runtests: success only with a nonzero exit status (init/timeout
        # expects mpiexec's own timeout to end it).
        if rc not in (0, None) and not UNSUPPORTED_RE.search(out):
            return "pass"
    if (grid and rc == 124) or (
            not grid and re.search(r"APPLICATION TIMED OUT|timed out", out)):
        return "hang"
    has_no_errors = bool(NO_ERRORS_RE.search(out))
    if t.result_test == "TestStatusNoErrors":
        if has_no_errors:
            return "pass"
    elif (t.result_test not in ("TestStatus", "TestErrFatal") and rc == 0
          and has_no_errors):
        return "pass"
    if UNSUPPORTED_RE.search(out):
        return "unsupported"
    signalled = rc is not None and (rc < 0 or rc > 128)
    if FOUND_ERRORS_RE.search(out) and not signalled:
        return "wrong"
    if rc == 0:
        return "wrong"          # ran to completion without "No Errors"
    return "crash"


@dataclass
class Config:
    work: Path
    results: Path
    gridrun: Path
    default_timeout: int
    grid_factor: float
    grace: int
    run_xfail: bool
    gridrun_args: list
    linked_bad: set
    job_dir: Path | None = None
    max_timeout: int = 0


# Output that means the GridColl build tree was being rewritten by a
# concurrent build while the run started (not a result of the test).
TRANSIENT_RE = re.compile(
    r"(gridrun: relay binary .* is not executable|invalid ELF header|"
    r"error while loading shared libraries|file too short|"
    r"undefined symbol: gc_)")
TRANSIENT_RETRIES = 3
TRANSIENT_WAIT = 20


def run_one(cfg: Config, t: Test, mode: str) -> tuple:
    """Run test t in mode, retrying runs broken by a concurrent rebuild."""
    for attempt in range(TRANSIENT_RETRIES + 1):
        result = run_once(cfg, t, mode)
        cls, out = result[0], result[4]
        if cls in ("pass", "n/a", "build-failed") or \
                not TRANSIENT_RE.search(out) or attempt == TRANSIENT_RETRIES:
            return result
        log(f"{t.dir}/{t.name} {mode}: GridColl build tree busy "
            f"({TRANSIENT_RE.search(out).group(0)}), retrying in "
            f"{TRANSIENT_WAIT} s")
        time.sleep(TRANSIENT_WAIT)
    return result


def run_once(cfg: Config, t: Test, mode: str) -> tuple:
    """Run test t in mode once; return (class, secs, reason, command, out)."""
    variant = "linked" if mode in ("2site", "3site") else "plain"
    cwd = cfg.work / variant / t.dir
    exe = cwd / t.program
    sites = mode_sites(mode)
    if sites and t.nprocs < sites:
        return "n/a", 0.0, f"{t.nprocs} rank(s) < {sites} sites", "", ""
    if not os.access(exe, os.X_OK):
        return "build-failed", 0.0, f"{variant} executable missing", "", ""
    if variant == "linked" and str(exe) in cfg.linked_bad:
        return ("build-failed", 0.0,
                "executable does not load libgridcoll.so", "", "")
    limit = t.time_limit or cfg.default_timeout
    env = dict(os.environ)
    prog = [f"./{t.program}"] + t.args
    if sites:
        limit = int(limit * cfg.grid_factor)
    if cfg.max_timeout:
        limit = min(limit, cfg.max_timeout)
    if sites:
        sizes = ",".join(map(str, site_sizes(t.nprocs, sites)))
        cmd = [str(cfg.gridrun), "--site-sizes", sizes, "--timeout",
               str(limit)]
        if cfg.job_dir:
            cmd += ["--job-dir", str(cfg.job_dir)]
        cmd += cfg.gridrun_args
        if mode.endswith("-preload"):
            cmd.append("--preload")
        # gridrun starts mpiexec itself: mpiexecarg= cannot be passed on.
        cmd += ["--"] + prog
    else:
        env["MPIEXEC_TIMEOUT"] = str(limit)
        cmd = ["mpiexec", "-n", str(t.nprocs)] + t.mpiexecargs + prog
    for e in t.envs:    # after MPIEXEC_TIMEOUT, which a test may set
        if "=" in e:
            k, v = e.split("=", 1)
            env[k] = v
    envs = " ".join(shlex.quote(e) for e in t.envs)
    shown = f"cd {cwd} && {envs + ' ' if envs else ''}{shlex.join(cmd)}"
    start = time.monotonic()
    timed_out = False
    with tempfile.TemporaryFile(mode="w+", errors="replace") as outf:
        proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=outf,
                                stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL,
                                start_new_session=True)
        try:
            rc = proc.wait(timeout=limit + cfg.grace)
        except KeyboardInterrupt:
            # Interrupted (SIGINT/SIGTERM): gridrun/mpiexec tear their job
            # down on SIGTERM; end the group this runner started, then stop.
            try:
                os.killpg(proc.pid, signal.SIGTERM)
                proc.wait(timeout=30)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            raise
        except subprocess.TimeoutExpired:
            # gridrun's / mpiexec's own timeout should have fired first; end
            # only the process group this runner started.
            timed_out = True
            for sig, wait in ((signal.SIGTERM, 10), (signal.SIGKILL, 10)):
                try:
                    os.killpg(proc.pid, sig)
                except ProcessLookupError:
                    break
                try:
                    proc.wait(timeout=wait)
                    break
                except subprocess.TimeoutExpired:
                    continue
            rc = proc.returncode
        secs = time.monotonic() - start
        outf.seek(0)
        out = outf.read()
    cls = classify(t, rc, out, timed_out, bool(sites))
    reason = "" if cls == "pass" else first_reason(out, cls, rc)
    if timed_out:
        reason = f"no exit after {limit + cfg.grace} s (killed by runner)"
    elif cls == "hang":
        reason = f"timeout after {limit} s"
    if cls != "pass":
        write_log(cfg, t, mode, shown, rc, secs, cls, reason, out)
    return cls, secs, reason, shown, out


def safe_name(s: str) -> str:
    """A file name for test s: its words, shortened with a hash if long."""
    name = re.sub(r"[^A-Za-z0-9_.+-]+", "_", s).strip("_")
    if len(name) > 100:
        digest = hashlib.sha1(s.encode()).hexdigest()[:8]
        name = f"{name[:90]}-{digest}"
    return name


def log_path(cfg: Config, t: Test, mode: str) -> Path:
    return cfg.results / "logs" / t.dir / \
        f"{safe_name(t.name)}.np{t.nprocs}.{mode}.log"


def write_log(cfg: Config, t: Test, mode: str, cmd: str, rc, secs: float,
              cls: str, reason: str, out: str) -> None:
    p = log_path(cfg, t, mode)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(f"test: {t.dir}/{t.name} np={t.nprocs} mode={mode}\n"
                 f"command: {cmd}\nexit status: {rc}\nseconds: {secs:.1f}\n"
                 f"class: {cls}\nreason: {reason}\n"
                 f"--- last {TAIL_LINES} lines of output ---\n{tail(out)}\n")


# --------------------------------------------------------------------------
# results


class Results:
    """results.csv / results.md, rewritten after every run."""

    def __init__(self, cfg: Config, csv_path: Path, md_path: Path):
        self.cfg = cfg
        self.csv_path = csv_path
        self.md_path = md_path
        self.rows = {}       # (dir, test, nprocs, mode) -> row dict
        self.commands = {}   # key -> reproduce command
        if csv_path.exists():
            with open(csv_path, newline="") as f:
                for row in csv.DictReader(f):
                    row.setdefault("reason", "")
                    self.rows[self.key(row)] = row

    @staticmethod
    def key(row) -> tuple:
        return (row["dir"], row["test"], str(row["nprocs"]), row["mode"])

    def get(self, t: Test, mode: str):
        return self.rows.get((t.dir, t.name, str(t.nprocs), mode))

    def put(self, t: Test, mode: str, cls: str, secs: float, reason: str,
            cmd: str) -> None:
        row = {"dir": t.dir, "test": t.name, "nprocs": str(t.nprocs),
               "mode": mode, "class": cls, "seconds": f"{secs:.1f}",
               "reason": reason}
        k = self.key(row)
        self.rows[k] = row
        if cmd:
            self.commands[k] = cmd
        self.save()

    def save(self) -> None:
        self.csv_path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.csv_path.with_suffix(".csv.tmp")
        with open(tmp, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=CSV_FIELDS)
            w.writeheader()
            for row in self.rows.values():
                w.writerow({k: row.get(k, "") for k in CSV_FIELDS})
        tmp.replace(self.csv_path)
        tmp = self.md_path.with_suffix(".md.tmp")
        tmp.write_text(self.markdown())
        tmp.replace(self.md_path)

    def modes(self) -> list:
        present = {r["mode"] for r in self.rows.values()}
        return [m for m in ALL_MODES if m in present]

    def table(self) -> str:
        """Per top directory and mode, the number of runs of each class."""
        counts = {}
        for r in self.rows.values():
            d = r["dir"].split("/", 1)[0]
            c = counts.setdefault((d, r["mode"]), {})
            c[r["class"]] = c.get(r["class"], 0) + 1
        dirs = []
        for r in self.rows.values():
            d = r["dir"].split("/", 1)[0]
            if d not in dirs:
                dirs.append(d)
        lines = ["| dir | mode | " + " | ".join(CLASSES) + " | total |",
                 "|---|---|" + "---:|" * (len(CLASSES) + 1)]
        totals = {}
        for d in dirs:
            for m in self.modes():
                c = counts.get((d, m))
                if not c:
                    continue
                tot = totals.setdefault(m, {})
                for k, v in c.items():
                    tot[k] = tot.get(k, 0) + v
                lines.append(f"| {d} | {m} | " + " | ".join(
                    str(c.get(k, 0)) for k in CLASSES) +
                    f" | {sum(c.values())} |")
        if len(dirs) > 1:
            for m in self.modes():
                c = totals.get(m, {})
                lines.append(f"| **all** | {m} | " + " | ".join(
                    str(c.get(k, 0)) for k in CLASSES) +
                    f" | {sum(c.values())} |")
        return "\n".join(lines) + "\n"

    def grid_failures(self, dirname: str | None = None) -> list:
        """Rows of grid modes not pass/unsupported/n/a where plain passes."""
        out = []
        for r in self.rows.values():
            if r["mode"] == "plain" or r["class"] in ("pass", "unsupported",
                                                      "n/a"):
                continue
            if dirname and r["dir"].split("/", 1)[0] != dirname:
                continue
            plain = self.rows.get((r["dir"], r["test"], r["nprocs"], "plain"))
            if plain and plain["class"] == "pass":
                out.append(r)
        return out

    def markdown(self) -> str:
        md = ["# MPICH test/mpi conformance of GridColl", "",
              f"Updated {time.strftime('%Y-%m-%d %H:%M:%S')}; runs per "
              "directory, mode and class.", "", self.table(), "",
              "Tests marked xfail= are not run (as runtests); n/a: fewer "
              "ranks than sites.", "",
              "## Grid failures (plain passes, a grid mode neither passes "
              "nor reports unsupported)", ""]
        fails = self.grid_failures()
        if not fails:
            md.append("None.")
        else:
            md += ["| dir | test | np | mode | class | reason |",
                   "|---|---|---:|---|---|---|"]
            for r in fails:
                reason = r["reason"].replace("|", "\\|")
                md.append(f"| {r['dir']} | `{r['test']}` | {r['nprocs']} | "
                          f"{r['mode']} | {r['class']} | {reason} |")
        unsup = {}
        for r in self.rows.values():
            m = UNSUPPORTED_RE.search(r.get("reason", ""))
            if r["class"] == "unsupported" and m:
                unsup[m.group(1)] = unsup.get(m.group(1), 0) + 1
        if unsup:
            md += ["", "## Calls reported unsupported (runs)", ""]
            md += [f"- `{k}`: {v}" for k, v in
                   sorted(unsup.items(), key=lambda kv: -kv[1])]
        return "\n".join(md) + "\n"

    def failures_report(self, dirname: str) -> str:
        """FAILURES-DIR.md: each grid failure with command and excerpt."""
        fails = self.grid_failures(dirname)
        md = [f"# Grid failures in MPICH test/mpi/{dirname}", "",
              f"Updated {time.strftime('%Y-%m-%d %H:%M:%S')}. Tests where "
              "plain MPICH passes but a GridColl mode is wrong, crashes, "
              "hangs or was not built.", "", f"{len(fails)} failing runs.", ""]
        notes = self.cfg.results / f"NOTES-{dirname}.md"
        if notes.exists():
            # Hand-written analysis, kept across regenerations.
            md += [notes.read_text().rstrip("\n"), ""]
        for r in fails:
            k = self.key(r)
            md.append(f"## {r['dir']}/{r['test']} (np={r['nprocs']}, "
                      f"{r['mode']}): {r['class']}")
            md.append("")
            md.append(f"Reason: {r['reason']}")
            md.append("")
            logp = self.cfg.results / "logs" / r["dir"] / \
                f"{safe_name(r['test'])}.np{r['nprocs']}.{r['mode']}.log"
            cmd = self.commands.get(k, "")
            excerpt = ""
            if logp.exists():
                text = logp.read_text(errors="replace")
                if not cmd:
                    m = re.search(r"^command: (.*)$", text, re.M)
                    cmd = m.group(1) if m else ""
                excerpt = text.split("---\n", 1)[-1]
                excerpt = "\n".join(excerpt.splitlines()[-25:])
            if cmd:
                md += ["Reproduce:", "", "```sh", cmd, "```", ""]
            if excerpt:
                md += ["Output (tail):", "", "```", excerpt, "```", ""]
            md.append(f"Log: `{logp}`")
            md.append("")
        return "\n".join(md) + "\n"


# --------------------------------------------------------------------------
# main


def parse_args(argv=None):
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog="Classes: " + ", ".join(CLASSES) + ". See docs/conformance.md.",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--suite", type=Path, required=True,
                   help="MPICH's test/mpi directory (read only)")
    p.add_argument("--mpich-src", type=Path,
                   help="top of the MPICH tree holding confdb/ and "
                        "maint/version.m4 (default: SUITE/../..)")
    p.add_argument("--work", type=Path, default=Path("/tmp/gridcoll-conf"),
                   help="work directory for the builds (default %(default)s)")
    p.add_argument("--results", type=Path,
                   help="results directory (default WORK/results)")
    p.add_argument("--gridcoll-build", type=Path, default=REPO / "build",
                   help="GridColl build tree (default %(default)s)")
    p.add_argument("--dirs", default=DEFAULT_DIRS,
                   help="suite directories to build and run "
                        "(default %(default)s)")
    p.add_argument("--modes", default="plain,2site,3site",
                   help="comma list of " + ",".join(ALL_MODES) +
                        " or 'all' (default %(default)s)")
    p.add_argument("--min-np", type=int, default=0,
                   help="run every test with at least this many ranks, in "
                   "every mode (plain too, as the reference): most tests "
                   "take 2 ranks, too few for 3 sites; use a results "
                   "directory of its own")
    p.add_argument("--filter", default="",
                   help="regular expression: only tests whose name matches")
    p.add_argument("--timeout", type=int, default=90,
                   help="seconds per test without timeLimit= "
                        "(default %(default)s)")
    p.add_argument("--grid-factor", type=float, default=3.0,
                   help="timeout multiplier for grid modes "
                        "(default %(default)s)")
    p.add_argument("--max-timeout", type=int, default=0,
                   help="cap on any run's timeout after --grid-factor, in "
                        "seconds (default: none; e.g. 300 to bound "
                        "timeLimit=300 stress tests)")
    p.add_argument("--grace", type=int, default=30,
                   help="extra seconds before the runner itself kills a run "
                        "(default %(default)s)")
    p.add_argument("--jobs", type=int, default=2,
                   help="make -j for building (default %(default)s)")
    p.add_argument("--run-xfail", action="store_true",
                   help="also run tests marked xfail= (runtests skips them)")
    p.add_argument("--gridrun-arg", action="append", default=[],
                   help="extra gridrun option (repeatable), e.g. --no-model")
    p.add_argument("--job-dir", type=Path,
                   help="gridrun --job-dir: where failed jobs keep their "
                        "relay configs and logs (default WORK/jobs)")
    p.add_argument("--resume", action="store_true",
                   help="skip runs already in results.csv")
    p.add_argument("--rerun-failures", action="store_true",
                   help="re-run only runs of results.csv whose class is "
                        "one of --rerun-classes")
    p.add_argument("--rerun-classes",
                   default="unsupported,wrong,crash,hang,build-failed",
                   help="classes --rerun-failures re-runs "
                        "(default %(default)s)")
    p.add_argument("--skip-plain-failures", action="store_true",
                   help="do not run grid modes of tests whose plain run in "
                        "results.csv did not pass (saves their timeouts)")
    p.add_argument("--build-only", action="store_true",
                   help="build the suite and stop")
    p.add_argument("--no-build", action="store_true",
                   help="do not autogen/configure/make (use existing builds)")
    p.add_argument("--report-only", action="store_true",
                   help="rewrite results.md and FAILURES-*.md from "
                        "results.csv")
    p.add_argument("--list", action="store_true",
                   help="list the tests that would run and stop")
    return p.parse_args(argv)


def _interrupt(signum, frame):
    raise KeyboardInterrupt


def main(argv=None) -> int:
    signal.signal(signal.SIGTERM, _interrupt)
    try:
        return run(argv)
    except KeyboardInterrupt:
        log("interrupted; results so far are saved")
        return 130


def run(argv=None) -> int:
    a = parse_args(argv)
    suite = a.suite.resolve()
    work = a.work.resolve()
    results_dir = (a.results or work / "results").resolve()
    modes = ALL_MODES if a.modes == "all" else a.modes.split(",")
    for m in modes:
        if m not in ALL_MODES:
            sys.exit(f"unknown mode {m!r}; modes: {', '.join(ALL_MODES)}")
    dirs = [d for d in a.dirs.split(",") if d]
    gridrun = (a.gridcoll_build / "bin" / "gridrun").resolve()
    cfg = Config(work=work, results=results_dir, gridrun=gridrun,
                 default_timeout=a.timeout, grid_factor=a.grid_factor,
                 grace=a.grace, run_xfail=a.run_xfail,
                 gridrun_args=a.gridrun_arg, linked_bad=set(),
                 job_dir=(a.job_dir or work / "jobs").resolve(),
                 max_timeout=a.max_timeout)
    cfg.job_dir.mkdir(parents=True, exist_ok=True)
    res = Results(cfg, results_dir / "results.csv", results_dir / "results.md")
    if a.report_only:
        res.save()
        for d in dirs:
            (results_dir / f"FAILURES-{d}.md").write_text(
                res.failures_report(d))
        print(res.table())
        return 0

    need_linked = any(m in ("2site", "3site") for m in modes)
    need_plain = any(m not in ("2site", "3site") for m in modes)
    if not a.no_build and not a.list:
        work.mkdir(parents=True, exist_ok=True)
        ensure_tools()
        src = prepare_source(suite, a.mpich_src, work)
        if need_plain:
            configure_variant(src, work / "plain", None)
            build_dirs(work / "plain", dirs, a.jobs)
        if need_linked:
            lib = find_libgridcoll(a.gridcoll_build)
            configure_variant(src, work / "linked", lib)
            build_dirs(work / "linked", dirs, a.jobs)
    if need_linked and (work / "linked").is_dir() and not a.list:
        n_ok, bad = check_linked(work / "linked", dirs)
        if bad and not a.no_build:
            # Typically linked while libgridcoll.so was being rewritten by a
            # concurrent GridColl build: remove and link them once more.
            log(f"relinking {len(bad)} executables without libgridcoll")
            for exe in bad:
                exe.unlink()
                run_logged(["make", exe.name], exe.parent,
                           work / "linked" / "make.log")
            n_ok, bad = check_linked(work / "linked", dirs)
        cfg.linked_bad = {str(exe) for exe in bad}
        log(f"linked build: {n_ok} executables load libgridcoll.so, "
            f"{len(bad)} do not{': ' if bad else ''}"
            f"{' '.join(str(b) for b in bad)}")
    if a.build_only:
        return 0

    listing_top = work / ("plain" if (work / "plain").is_dir() else "linked")
    tests = []
    for d in dirs:
        # `make testing` runs testlist and the generated testlist.dtp (the
        # DTPools derived-datatype variants) of each directory.
        found = []
        for listfile in ("testlist", "testlist.dtp"):
            found += parse_testlist(listing_top, d, listfile=listfile,
                                    src_top=work / "src")
        if not found:
            log(f"warning: no testlist for {d} in {listing_top}")
        tests += found
    if a.min_np:
        for t in tests:
            t.nprocs = max(t.nprocs, a.min_np)
    if a.filter:
        rx = re.compile(a.filter)
        tests = [t for t in tests if rx.search(t.name) or
                 rx.search(f"{t.dir}/{t.name}")]
    if a.list:
        for t in tests:
            skip = skip_reason(t, a.run_xfail)
            print(f"{t.dir}\t{t.name}\t{t.nprocs}"
                  f"{chr(9) + 'skip: ' + skip if skip else ''}")
        return 0

    rerun_classes = set(a.rerun_classes.split(","))
    done_dirs = set()
    total = len(tests) * len(modes)
    count = 0
    for t in tests:
        skip = skip_reason(t, a.run_xfail)
        if skip:
            count += len(modes)
            continue
        for mode in modes:
            count += 1
            prev = res.get(t, mode)
            if a.resume and prev:
                continue
            if a.rerun_failures and (not prev or prev["class"] not in
                                     rerun_classes):
                continue
            if a.skip_plain_failures and mode != "plain":
                plain = res.get(t, "plain")
                if plain and plain["class"] != "pass":
                    continue
            cls, secs, reason, cmd, _ = run_one(cfg, t, mode)
            res.put(t, mode, cls, secs, reason, cmd)
            log(f"[{count}/{total}] {t.dir}/{t.name} np={t.nprocs} {mode}: "
                f"{cls} ({secs:.1f} s){' - ' + reason if reason else ''}")
        d = top_dir(t)
        done_dirs.add(d)
        (results_dir / f"FAILURES-{d}.md").write_text(res.failures_report(d))
    res.save()
    for d in sorted(done_dirs):
        (results_dir / f"FAILURES-{d}.md").write_text(res.failures_report(d))
    print(res.table())
    return 0


if __name__ == "__main__":
    sys.exit(main())
