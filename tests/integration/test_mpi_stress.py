#!/usr/bin/env python3
"""The stress sweep of issue 12 through gridrun: tests/mpi/stress_check
floods rank 0 from every rank (thousands of 8-byte and some 4 MiB
messages, sent before rank 0 posts a receive; byte-exact, per-source
order), floods every pair (Isend, then Irecv + Waitall), churns
communicators (dup, split, create; a cross-site message pending on each
while the next is made; time and VmRSS must not grow) and checks the error
class of every argument error of point-to-point calls and blocking
collectives, with all ranks exchanging correctly after each.  The flood
also records the peak RSS (VmHWM) of the relays while it runs, and runs
again with the smallest relay credit (64 KiB, below the chunk size) and
rank 0 making no MPI call for 2 s: the relays must then stay near their
idle size (the credit bound; it did not hold before a fix in
relay/link.c).

The floods run in 4+4.  errors_return runs in 4+4, 2+1+1, one gridrun
site (pass-through) and as plain MPICH (stress_check_plain under mpiexec
-n 8, no gridrun), since it checks what MPI specifies.
comm_churn's thousands of cycles run in 2+2 (about 12 ms a cycle here,
against 75 ms in 4+4 on 2 cores, where MPICH's 8 spinning ranks make
every communicator creation slow: plain MPICH is no faster), and a
shorter churn runs in 4+4."""

import ctypes
import os
import re
import shutil
import subprocess
import time

from harness import BIN, SANITIZED, check, main

GRIDRUN = os.path.join(BIN, "gridrun")
STRESS_CHECK = os.path.join(BIN, "stress_check")
STRESS_CHECK_PLAIN = os.path.join(BIN, "stress_check_plain")
TIMEOUT_S = 90
# errors_return takes 3-5 s; a call that hangs instead of failing should
# not hold the suite for long.
ERRORS_TIMEOUT_S = 45
PR_SET_CHILD_SUBREAPER = 36
MPIEXEC_NOISE = re.compile(r"\s*=|YOUR APPLICATION TERMINATED|This typically "
                           r"refers|Please see the FAQ")

# The flood crossing to rank 0's site is 4 ranks x (2 x 4 MiB + 3000 x
# 8 B), about 32 MiB; rank 0 is sent 8 times 8 MiB in all.  Measured here:
# rank 0 ~58 MiB, alpha's relay (rank 0's) ~42 MiB, beta's ~13 MiB (its
# idle size).  A relay that kept a second copy of the flood, or rank 0 one
# of every message, would cross these bounds.
RELAY_HWM_BOUND_KIB = 96 * 1024
RANK0_HWM_BOUND_KIB = 256 * 1024
# With flow.rank_credit=64K the relays stay near their idle size (measured
# 7.7 and 8.3 MiB; 204 MiB at alpha before the relay/link.c fix).
SMALL_CREDIT_RELAY_BOUND_KIB = 16 * 1024
# An idle relay under ASan is about 16 MiB instead of 8 (shadow memory,
# the sanitizers' runtimes); the flood must not add more than that either.
if SANITIZED:
    SMALL_CREDIT_RELAY_BOUND_KIB += 16 * 1024


def vm_hwm_kib(pid):
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def descendants(root):
    """{pid: (name, argv)} of root's descendants."""
    parent, info = {}, {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % entry) as f:
                stat = f.read()
            with open("/proc/%s/cmdline" % entry, "rb") as f:
                argv = f.read().split(b"\0")
        except OSError:
            continue
        pid = int(entry)
        parent[pid] = int(stat[stat.rindex(")") + 2:].split()[1])
        info[pid] = (stat[stat.index("(") + 1:stat.rindex(")")],
                     [a.decode(errors="replace") for a in argv])
    children = {}
    for pid, ppid in parent.items():
        children.setdefault(ppid, []).append(pid)
    found, todo = {}, list(children.get(root, []))
    while todo:
        pid = todo.pop()
        found[pid] = info[pid]
        todo += children.get(pid, [])
    return found


def run(layout, cases, env_extra=None, program=STRESS_CHECK, sample=False,
        plain_n=None, timeout_s=TIMEOUT_S):
    """Run stress_check CASES in LAYOUT through gridrun (or, with plain_n,
    the plain build under mpiexec -n PLAIN_N); check every case passed.
    With sample, the relays' peak RSS is read from /proc while it runs:
    returns (stdout, {relay name: VmHWM KiB})."""
    env = dict(os.environ)
    env.update(env_extra or {})
    if SANITIZED:
        # ASan keeps freed memory in a quarantine (256 MiB by default), so
        # resident sizes would measure the quarantine, not what a relay or
        # rank holds; without it they measure the program again (plus
        # shadow memory and redzones, within the bounds here).
        env["ASAN_OPTIONS"] = (env.get("ASAN_OPTIONS", "") +
                               ":quarantine_size_mb=0").lstrip(":")
    if plain_n is not None:
        command = ["timeout", str(timeout_s), shutil.which("mpiexec"), "-n",
                   str(plain_n), program] + cases
        what = "mpiexec -n %d" % plain_n
    else:
        # gridrun's own --timeout tears the job down cleanly.
        command = ([GRIDRUN, "--timeout", str(timeout_s)] + layout +
                   ["--", program] + cases)
        what = " ".join(layout)
    if sample:
        # Relays orphaned by a dying gridrun stay in this process's tree.
        ctypes.CDLL(None).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    started = time.monotonic()
    proc = subprocess.Popen(command, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)
    relay_hwm = {}
    if sample:
        while proc.poll() is None:
            for pid, (name, argv) in descendants(os.getpid()).items():
                if name != "gridrelay":
                    continue
                conf = [a for a in argv if a.endswith(".conf")]
                site = os.path.basename(conf[0])[:-5] if conf else str(pid)
                hwm = vm_hwm_kib(pid)
                if hwm is not None:
                    relay_hwm[site] = max(relay_hwm.get(site, 0), hwm)
            time.sleep(0.1)
    try:
        out, err = proc.communicate(timeout=timeout_s + 30)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
    elapsed = time.monotonic() - started
    ok = re.findall(r"^OK (\S+)$", out, re.M)
    fails = [l for l in out.splitlines() if l.startswith("FAIL")]
    info = [l for l in out.splitlines() if l.startswith("INFO")]
    other = [l for l in out.splitlines() if l.strip() and
             not l.startswith(("OK ", "INFO ", "FAIL")) and
             not MPIEXEC_NOISE.match(l)]
    summary = ("%s %s: exit %d after %.1f s\npassed: %s\n%s\n%s\n"
               "other stdout:\n%s\nstderr tail:\n%s" % (
                   what, " ".join(cases), proc.returncode, elapsed,
                   " ".join(ok) or "none", "\n".join(fails), "\n".join(info),
                   "\n".join(other[-20:]),
                   "\n".join(err.splitlines()[-20:])))
    check(proc.returncode != 124,
          "job hung (timeout); last case passed: %s\n%s"
          % (ok[-1] if ok else "none", summary))
    check(not fails, "cases failed:\n" + summary)
    check(proc.returncode == 0, "nonzero exit:\n" + summary)
    check(ok == cases, "cases reported: %s, expected %s\n%s"
          % (ok, cases, summary))
    for line in info:
        print("    %s [%s, %.1f s]" % (line, what, elapsed))
    return out, relay_hwm


def flood_many_to_one(layout, relay_bound_kib, env_extra=None):
    out, relay_hwm = run(layout, ["flood_many_to_one"], env_extra,
                         sample=True)
    m = re.search(r"rank 0 VmHWM (\d+) KiB", out)
    check(m, "no rank 0 VmHWM figure:\n" + out)
    rank0 = int(m.group(1))
    print("    peak RSS (VmHWM): rank 0 %d KiB; relays %s" % (
        rank0, ", ".join("%s %d KiB" % kv for kv in sorted(relay_hwm.items()))))
    check(sorted(relay_hwm) == ["alpha", "beta"],
          "relays not sampled: %s" % relay_hwm)
    check(rank0 < RANK0_HWM_BOUND_KIB, "rank 0 peak RSS %d KiB" % rank0)
    for site, hwm in relay_hwm.items():
        check(hwm < relay_bound_kib, "relay %s peak RSS %d KiB (bound "
              "%d)" % (site, hwm, relay_bound_kib))


def flood_many_to_one_4_4():
    flood_many_to_one(["--site-sizes", "4,4"], RELAY_HWM_BOUND_KIB)


def flood_many_to_one_4_4_small_credit():
    # 64 KiB of credit per destination rank (the minimum, below the 256 KiB
    # chunk size): 8 x 4 MiB from each rank, 128 MiB crossing to rank 0,
    # which makes no MPI call for 2 s after the barrier.  Meanwhile the
    # relays may hold one chunk for rank 0 beyond their idle size.  Before
    # the fix in relay/link.c (credit_available wrapped round once the lone
    # oversized chunk was out) alpha's relay took in the whole flood:
    # 204 MiB for 256 MiB crossing.
    flood_many_to_one(["--site-sizes", "4,4", "--relay-set",
                       "flow.rank_credit=64K"], SMALL_CREDIT_RELAY_BOUND_KIB,
                      {"STRESS_LARGE": "8", "STRESS_SMALL": "1000",
                       "STRESS_NAP_MS": "2000"})


def flood_all_to_all_4_4():
    run(["--site-sizes", "4,4"], ["flood_all_to_all"])


def comm_churn_2_2():
    # Thousands of cycles: the slow-down and VmRSS checks compare the first
    # 500 cycles with the last 500.
    run(["--site-sizes", "2,2"], ["comm_churn"], {"STRESS_CYCLES": "3000"})


def comm_churn_4_4():
    run(["--site-sizes", "4,4"], ["comm_churn"], {"STRESS_CYCLES": "300"})


def errors_return_4_4():
    run(["--site-sizes", "4,4"], ["errors_return"],
        timeout_s=ERRORS_TIMEOUT_S)


def errors_return_2_1_1():
    run(["--site-sizes", "2,1,1"], ["errors_return"],
        timeout_s=ERRORS_TIMEOUT_S)


def errors_return_single_site():
    run(["--sites", "1", "-n", "4"], ["errors_return"],
        timeout_s=ERRORS_TIMEOUT_S)


def errors_return_plain_mpich():
    # What MPICH itself returns, without libgridcoll or gridrun.
    run([], ["errors_return"], program=STRESS_CHECK_PLAIN, plain_n=8,
        timeout_s=ERRORS_TIMEOUT_S)


if __name__ == "__main__":
    main([("flood_many_to_one_4_4", flood_many_to_one_4_4),
          ("flood_many_to_one_4_4_small_credit",
           flood_many_to_one_4_4_small_credit),
          ("flood_all_to_all_4_4", flood_all_to_all_4_4),
          ("comm_churn_2_2", comm_churn_2_2),
          ("comm_churn_4_4", comm_churn_4_4),
          ("errors_return_plain_mpich", errors_return_plain_mpich),
          ("errors_return_single_site", errors_return_single_site),
          ("errors_return_4_4", errors_return_4_4),
          ("errors_return_2_1_1", errors_return_2_1_1)])
