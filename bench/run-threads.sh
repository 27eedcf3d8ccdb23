#!/bin/sh
# The MPI_THREAD_MULTIPLE figures of docs/performance/README.md ("Threads"), in
# --runs rounds of two parts, gridcoll-threads (plain MPI) on 1+1:
#   cost     one thread, 8 B, 64 KiB and 1 MiB ping-pong through the local
#            relays (no --wan): this build's library at MPI_THREAD_SINGLE
#            and at MPI_THREAD_MULTIPLE, and an older build's (--old-lib,
#            which offers no MULTIPLE) at MPI_THREAD_SINGLE, the three
#            jobs back to back in an order rotating from run to run:
#            OUT/threads-cost.csv;
#   scaling  1, 2, 4 and 8 threads ping-ponging at once on their own
#            communicators, 8 B and 64 KiB, over gridrun --wan
#            (delay=20ms, rate=1gbit, loss=0.1%): this build's library
#            ("new") and MPICH alone across the same emulated WAN
#            ("native", gridrun --native): OUT/threads-scaling.csv.
# Every row is prefixed with part, lib, run and the 1-minute load average
# as its job started; bench/threads_report.py OUT prints the tables.
# Every job is bounded (gridrun --timeout).  Needs root (namespaces).
#
#   bench/run-threads.sh --build build --old-lib ../old-build/lib --out DIR
set -eu

bench="run-threads"
usage="[--build DIR] --old-lib DIR [--out DIR] [--runs N] [--only 'cost scaling']"
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"
what="cost scaling"
wan=delay=20ms,rate=1gbit,loss=0.1%
while [ $# -gt 0 ]; do
    bench_option "$@" || bench_usage
    shift 2
done
bench_setup cost

# job CSV LABEL LIB OPTS BENCH-ARGS...: one job of gridcoll-threads on
# 1+1 with gridrun options OPTS (one word list), LIB a library directory
# to preload or "native" (MPICH alone).
job() {
    csv=$1 label=$2 lib=$3 opts=$4
    shift 4
    if [ "$lib" = native ]; then
        set -- --native -- "$bin/gridcoll-threads" "$@"
    else
        set -- -- env LD_PRELOAD="$lib/libgridcoll.so" \
            "$bin/gridcoll-threads" "$@"
    fi
    # $opts splits into words on purpose.
    # shellcheck disable=SC2086
    bench_run "$label" 300 --site-sizes 1,1 $opts "$@"
    bench_append "$csv" part,lib,run
}

run=1
while [ "$run" -le "$runs" ]; do
    case " $what " in *" cost "*)
        # Rotate the order: no configuration always runs first.
        case $((run % 3)) in
        1) order="old-single new-multiple new-single" ;;
        2) order="new-single old-single new-multiple" ;;
        *) order="new-multiple new-single old-single" ;;
        esac
        for pair in $order; do
            which=${pair%-*} level=${pair#*-}
            lib=$new_lib
            [ "$which" = old ] && lib=$old_lib
            job "$out/threads-cost.csv" "cost,$which,$run" "$lib" "" \
                --level "$level" --threads 1 --bytes 8,64k,1m --iters 300
        done ;;
    esac
    case " $what " in *" scaling "*)
        for threads in 1 2 4 8; do
            for lib in native new; do
                l=$new_lib
                [ "$lib" = native ] && l=native
                job "$out/threads-scaling.csv" "scaling,$lib,$run" "$l" \
                    "--wan $wan" --threads "$threads" --bytes 8,64k --iters 40
            done
        done ;;
    esac
    run=$((run + 1))
done
