#!/bin/sh
# The MPI_THREAD_MULTIPLE figures of docs/performance.md ("Threads"), in
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

build=build old_lib= out=. runs=3 what="cost scaling"
wan=delay=20ms,rate=1gbit,loss=0.1%
while [ $# -gt 0 ]; do
    case $1 in
    --build) build=$2; shift 2 ;;
    --old-lib) old_lib=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --only) what=$2; shift 2 ;;
    *) echo "usage: $0 [--build DIR] --old-lib DIR [--out DIR] [--runs N]" \
            "[--only 'cost scaling']" >&2
       exit 2 ;;
    esac
done
case " $what " in *" cost "*)
    [ -n "$old_lib" ] || { echo "$0: cost needs --old-lib" >&2; exit 2; } ;;
esac
bin=$(cd "$build/bin" && pwd)
new_lib=$(cd "$build/lib" && pwd)
[ -z "$old_lib" ] || old_lib=$(cd "$old_lib" && pwd)
mkdir -p "$out"

# job CSV LABEL LIB OPTS BENCH-ARGS...: one job of gridcoll-threads with
# gridrun options OPTS (one word list), LIB a library directory to
# preload or "native" (MPICH alone).
job() {
    csv=$1 label=$2 lib=$3 opts=$4
    shift 4
    load=$(cut -d' ' -f1 /proc/loadavg)
    tmp=$(mktemp)
    echo "run-threads: $label $opts $*" >&2
    if [ "$lib" = native ]; then
        set -- --native -- "$bin/gridcoll-threads" "$@"
    else
        set -- -- env LD_PRELOAD="$lib/libgridcoll.so" \
            "$bin/gridcoll-threads" "$@"
    fi
    # $opts splits into words on purpose.
    # shellcheck disable=SC2086
    if timeout 330 "$bin/gridrun" --timeout 300 --no-model --site-sizes 1,1 \
        $opts "$@" --csv >"$tmp" 2>"$tmp.err"; then
        :
    else
        echo "run-threads: $label failed:" >&2
        tail -5 "$tmp.err" >&2
    fi
    if [ ! -s "$csv" ] && [ -s "$tmp" ]; then
        echo "part,lib,run,load1,$(head -1 "$tmp")" >"$csv"
    fi
    tail -n +2 "$tmp" | sed "s/^/$label,$load,/" >>"$csv" || true
    rm -f "$tmp" "$tmp.err"
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
