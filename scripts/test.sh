#!/usr/bin/env bash
# GridColl: the one test command, from a fresh Debian 12 machine (as root).
#
#   scripts/test.sh
#
# 1. installs the Debian packages the build and the tests need (only the
#    missing ones; apt-get update only when something is missing);
# 2. checks the formatting of every C file against .clang-format;
# 3. builds build-asan/ (clang, address + undefined-behaviour sanitizers,
#    the libFuzzer targets), the programs of the progress-thread tests in
#    build-tsan/ (clang's thread sanitizer) and build/ (RelWithDebInfo),
#    warnings are errors;
# 4. runs every test in build-asan/ (including the bounded fuzz run) and
#    in build/, the thread tests in build-tsan/: each tree's as soon as it
#    is built (the trees are built longest tests first), beside the builds
#    still to come and the other trees' tests.  Within a tree three tests
#    run at a time (ctest -j3): the relays' suites mostly wait (timeouts,
#    emulated WAN delays, killed peers), a suite of polling MPI ranks
#    counts as two; each takes free ports, namespaces of its own name and
#    temporary directories, and each tree gets its own TMPDIR; the suites
#    that share something in a tree or compare timings run alone
#    (tests/integration/CMakeLists.txt says which).  Each tree's output is
#    printed whole when it is done.
#
# Measured on this 2-core machine on 2 December 2026 from fresh trees with
# ccache warm, while three other engineers ran builds and tests (load
# average 10 to 20, median 17):
#   before (trees one after another, integration tests one at a time):
#     builds 213 + 197 + 228 s; after 21 min of tests the plain and ASan
#     trees had run 27 of 43 and 25 of 41 non-unit tests (stopped: >31 min);
#   this way, run 1: builds asan 18 s, tsan 22 s, build/ 355 s (beside the
#     sanitizer trees' tests); build/'s 46 tests in 18 min (2406 s of test
#     time, 2.2 at a time), build-asan/'s first 45 in 23 min (2941 s, 2.1 at
#     a time), build-tsan/'s one in 599 s; stopped at 26 min, its last MPI
#     suites not run;
#   this way, run 2: builds asan 71 s, tsan 55 s, build/ 362 s; at 24 min
#     build/ had run 44 of its 56 tests (in 17 min), build-asan/ 45 of 55
#     (in 23 min), build-tsan/'s one took 547 s; stopped at 35 min.
# Under that load timing checks fail either way (before: transfer, gridrun
# and mpi_stress under ASan, mpi_thread under TSan; runs 1 and 2: gridrun,
# transfer, memory, operations, mpi_runtime, model, mpi_p2p, mpi_thread).
#
# Every step runs even when an earlier one failed (except tests of a tree
# that did not build); the summary at the end lists what failed and the exit
# status is non-zero if anything did.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"

packages=(build-essential cmake ninja-build pkg-config clang clang-format
    libclang-rt-14-dev libevent-dev libconfig-dev libssl-dev zlib1g-dev
    openssl mpich libmpich-dev libucx-dev iperf3 iputils-ping python3 procps
    iproute2 curl gnuplot-nox gfortran ccache dpkg-dev file systemd)
format_dirs=(common relay libgridcoll launcher bench tools wan tests examples)

failures=()

banner() {
    printf '\n==================================================================\n'
    printf '== %s\n' "$*"
    printf '==================================================================\n'
}

# Run one step; record its name when it fails instead of stopping.
step() {
    local name=$1
    shift
    banner "$name"
    local start=$SECONDS rc=0
    "$@" || rc=$?
    if ((rc == 0)); then
        printf -- '-- %s: OK (%ds)\n' "$name" $((SECONDS - start))
    else
        printf -- '-- %s: FAILED (exit %d)\n' "$name" "$rc"
        failures+=("$name")
    fi
    return "$rc"
}

install_packages() {
    local missing=() p
    for p in "${packages[@]}"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null |
            grep -q 'install ok installed' || missing+=("$p")
    done
    if ((${#missing[@]} == 0)); then
        echo "all ${#packages[@]} packages present"
        return 0
    fi
    echo "missing: ${missing[*]}"
    local sudo=()
    if ((EUID != 0)); then
        command -v sudo >/dev/null || {
            echo "not root and no sudo: install them by hand" >&2
            return 1
        }
        sudo=(sudo)
    fi
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q &&
        "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive \
            apt-get install -y -q --no-install-recommends "${missing[@]}"
}

format_check() {
    local dirs=() files=() bad=() d f
    for d in "${format_dirs[@]}"; do
        [[ -d $d ]] && dirs+=("$d")
    done
    ((${#dirs[@]} > 0)) || return 0
    mapfile -t files < <(find "${dirs[@]}" -type f \( -name '*.c' -o -name '*.h' \) | sort)
    for f in "${files[@]}"; do
        clang-format --dry-run --Werror "$f" >/dev/null 2>&1 || bad+=("$f")
    done
    echo "checked ${#files[@]} files"
    if ((${#bad[@]} > 0)); then
        echo "not formatted (fix with: clang-format -i FILE...):"
        printf '  %s\n' "${bad[@]}"
        return 1
    fi
}

# configure_and_build DIR CMAKE-ARGS...
configure_and_build() {
    local dir=$1
    shift
    cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
        -DGRIDCOLL_WERROR=ON "${launcher[@]}" "$@" &&
        cmake --build "$dir"
}

configure_tsan() {
    cmake -S . -B build-tsan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
        -DGRIDCOLL_WERROR=ON "${launcher[@]}" -DCMAKE_C_COMPILER=clang \
        -DGRIDCOLL_TSAN=ON &&
        cmake --build build-tsan --target gridrun gridrelay gridwan \
            nbc_check coll_check p2p_check thread_check
}

# run_ctest DIR [CTEST-ARGS...]: the tree's tests, three at a time.  Only
# the tests see the sanitizer settings: the builds start before the last
# tests end, and a sanitizer report must fail the test, not scroll by.
run_ctest() {
    local dir=$1
    shift
    export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1}
    export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$repo/tests/sanitizers/lsan.supp:print_suppressions=0}
    export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
    # hwloc's PCI plugin (loaded by MPICH at MPI_Init) leaks through
    # libpciaccess and is unloaded before LeakSanitizer runs, so the report
    # has no module to suppress by name; GridColl does not need PCI
    # topology.
    export HWLOC_PLUGINS_BLACKLIST=${HWLOC_PLUGINS_BLACKLIST:-hwloc_pci}
    export TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:exitcode=66}
    ctest --test-dir "$dir" --output-on-failure --no-tests=error -j3 "$@"
}

# Tests of several trees side by side, and beside the builds still to
# come: `background NAME CMD...` starts one
# with its output in a file and its own TMPDIR; `collect` waits for each,
# prints its output and records it like step does.
bg_names=()
bg_pids=()
bg_logs=()
background() {
    local name=$1 log tmp
    shift
    log=$(mktemp /tmp/gridcoll-test.XXXXXX.log)
    tmp=$(mktemp -d /tmp/gct.XXXXXX)
    (
        start=$SECONDS rc=0
        TMPDIR=$tmp "$@" || rc=$?
        echo $((SECONDS - start)) >"$log.seconds"
        exit "$rc"
    ) >"$log" 2>&1 &
    bg_names+=("$name")
    bg_pids+=("$!")
    bg_logs+=("$log")
    printf -- '-- started: %s\n' "$name"
}

collect() {
    local i rc seconds
    for i in "${!bg_pids[@]}"; do
        rc=0
        wait "${bg_pids[$i]}" || rc=$?
        banner "${bg_names[$i]}"
        cat "${bg_logs[$i]}"
        seconds=$(cat "${bg_logs[$i]}.seconds" 2>/dev/null || echo '?')
        rm -f "${bg_logs[$i]}" "${bg_logs[$i]}.seconds"
        if ((rc == 0)); then
            printf -- '-- %s: OK (%ss)\n' "${bg_names[$i]}" "$seconds"
        else
            printf -- '-- %s: FAILED (exit %d)\n' "${bg_names[$i]}" "$rc"
            failures+=("${bg_names[$i]}")
        fi
    done
}

step "Debian packages" install_packages || true

# The three builds compile the same files again on every run: ccache keeps
# their objects between runs (in ~/.cache/ccache), for any checkout path.
launcher=()
if command -v ccache >/dev/null; then
    launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache)
    export CCACHE_BASEDIR=$repo CCACHE_NOHASHDIR=true
fi
step "Format check (clang-format)" format_check || true

# The sanitizer pass is the longest: it is built first and its tests start
# at once.  The progress thread against the program: ThreadSanitizer on the
# layer (MPICH itself is not instrumented), only what the thread tests run.
step "Build: build-asan/ (clang, ASan+UBSan, libFuzzer)" \
    configure_and_build build-asan -DCMAKE_C_COMPILER=clang \
    -DGRIDCOLL_SANITIZE=ON -DGRIDCOLL_FUZZ=ON &&
    background "Tests: build-asan/ (incl. fuzz)" run_ctest build-asan
step "Build: build-tsan/ (clang, ThreadSanitizer; thread test programs)" \
    configure_tsan &&
    background "Tests: build-tsan/ (integration.mpi_thread)" \
        run_ctest build-tsan -R integration.mpi_thread
step "Build: build/ (RelWithDebInfo)" configure_and_build build &&
    background "Tests: build/" run_ctest build
collect

banner "Summary"
if ((${#failures[@]} > 0)); then
    echo "FAILED:"
    printf '  - %s\n' "${failures[@]}"
    exit 1
fi
echo "all steps passed"
