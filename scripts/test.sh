#!/usr/bin/env bash
# GridColl: the one test command, from a fresh Debian 12 machine (as root).
#
#   scripts/test.sh
#
# 1. installs the Debian packages the build and the tests need (only the
#    missing ones; apt-get update only when something is missing);
# 2. checks the formatting of every C file against .clang-format;
# 3. builds build/ (RelWithDebInfo, warnings are errors), build-asan/ (clang,
#    address + undefined-behaviour sanitizers, the libFuzzer targets) and
#    the programs of the progress-thread tests in build-tsan/ (clang's
#    thread sanitizer);
# 4. runs the three trees' tests side by side.  Each integration case runs
#    once (tests/integration/CMakeLists.txt says where): under ASan/UBSan
#    in build-asan/ (with the bounded fuzz run) wherever it can; in build/
#    the benchmark tools, the collectives and gridrun over the emulated
#    WAN, Fortran, the quick suites, and the cases an instrumented library
#    cannot run (preloading into plain MPICH programs); the progress-thread
#    suite under ThreadSanitizer in build-tsan/.  Within a tree the unit
#    tests run in parallel and the rest one at a time (their timing checks
#    assume no sibling of the same tree beside them); the trees share
#    nothing (each integration test takes free ports, namespaces of its
#    own name and temporary directories, and each tree gets its own
#    TMPDIR).  Each tree's output is printed whole when it is done.
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

# Unit tests are self-contained and run in parallel; integration (and any
# other) tests run one at a time: timing checks in them (soak latency,
# outage clocks) assume no sibling of the same tree beside them.
run_ctest() {
    local dir=$1 rc=0
    ctest --test-dir "$dir" --output-on-failure --no-tests=error -j2 -L unit ||
        rc=1
    ctest --test-dir "$dir" --output-on-failure -j1 -LE unit || rc=1
    return "$rc"
}

# Tests of several trees side by side: `background NAME CMD...` starts one
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

plain_built=0 asan_built=0 tsan_built=0
step "Build: build/ (RelWithDebInfo)" configure_and_build build && plain_built=1
step "Build: build-asan/ (clang, ASan+UBSan, libFuzzer)" \
    configure_and_build build-asan -DCMAKE_C_COMPILER=clang \
    -DGRIDCOLL_SANITIZE=ON -DGRIDCOLL_FUZZ=ON && asan_built=1
step "Build: build-tsan/ (clang, ThreadSanitizer; thread test programs)" \
    configure_tsan && tsan_built=1

# Sanitizer reports must fail the test, not scroll by.
export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1}
export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$repo/tests/sanitizers/lsan.supp:print_suppressions=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
# hwloc's PCI plugin (loaded by MPICH at MPI_Init) leaks through
# libpciaccess and is unloaded before LeakSanitizer runs, so the report has no
# module to suppress by name; GridColl does not need PCI topology.
export HWLOC_PLUGINS_BLACKLIST=${HWLOC_PLUGINS_BLACKLIST:-hwloc_pci}
export TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:exitcode=66}

# The sanitizer pass is the longest: it starts first.
((asan_built)) && background "Tests: build-asan/ (incl. fuzz)" \
    run_ctest build-asan
((plain_built)) && background "Tests: build/" run_ctest build
# The progress thread against the program: ThreadSanitizer on the layer
# (MPICH itself is not instrumented), only what the thread tests run.
((tsan_built)) && background "Tests: build-tsan/ (integration.mpi_thread)" \
    ctest --test-dir build-tsan --output-on-failure -R integration.mpi_thread
collect

banner "Summary"
if ((${#failures[@]} > 0)); then
    echo "FAILED:"
    printf '  - %s\n' "${failures[@]}"
    exit 1
fi
echo "all steps passed"
