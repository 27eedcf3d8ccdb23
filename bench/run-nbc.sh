#!/bin/sh
# The issue-13 figures of docs/performance/README.md ("Nonblocking collectives
# and the schedule engine"), over gridrun --wan (delay=20ms, rate=1gbit,
# loss=0.1%), --no-model, in --runs rounds of these parts (--only):
#   overlap   gridcoll-bench ialltoall and iallreduce --overlap
#             --test-every N, 64 KiB to 1 MiB, the automatic choice, on
#             2+2 and 4+4: OUT/nbc-overlap.csv, lib "new";
#   thread    the same with GRIDCOLL_ASYNC_PROGRESS=1 (the progress
#             thread): lib "thread";
#   native    the same with MPICH alone (gridcoll-bench-plain under
#             gridrun --native: one MPICH job across the namespace
#             sites, no relays): OUT/nbc-overlap.csv, lib "native";
#   blocking  gridcoll-bench bcast, allreduce, alltoall, gather at 8 B,
#             64 KiB, 1 MiB (auto, --start window) on 2+2 and 4+4, the
#             same bench binary with this build's libgridcoll and with
#             an older build's (--old-lib), the two jobs of a point back
#             to back, which goes first alternating from run to run:
#             OUT/nbc-blocking.csv (with --points: only those points,
#             OUT/nbc-blocking-points.csv);
#   halo      gridcoll-halo --dims 2x4 and 4x2, --reorder 0 and 1, 64 KiB
#             blocks, the default algorithm; and --dims 4x2 --reorder 1
#             with --algo direct and bundled at 4 KiB and 64 KiB; on 4+4
#             with GRIDCOLL_STATS=1: OUT/nbc-halo.csv, the bench's row
#             plus the neighbour collectives' WAN messages and calls per
#             site (alpha, beta) from the library's stats.
# Every bench row is prefixed with layout, lib, run and the 1-minute load
# average as its job started; bench/nbc_report.py OUT prints the tables.
# Every job is bounded (gridrun --timeout); none starts after --budget
# seconds.  Needs root (network namespaces).
#
#   bench/run-nbc.sh --build build --old-lib ../old-build/lib --out DIR
set -eu

bench="run-nbc"
usage="[--build DIR] [--old-lib DIR] [--out DIR] [--runs N] [--budget S]\
 [--only 'overlap thread native blocking halo'] [--test-every N]\
 [--points LIST] [--iters N]"
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"
budget=3000 what="overlap thread native blocking halo"
# --points: the blocking part on these points only (SITES:COLL:SIZES,
# space-separated, e.g. "2,2:gather:1m 4,4:bcast:8,64k"), --iters timed
# calls each; default every collective at 8,64k,1m, 9 calls.
points= iters=9
wan=delay=20ms,rate=1gbit,loss=0.1% test_every=100
while [ $# -gt 0 ]; do
    case $1 in
    --budget) budget=$2 ;;
    --test-every) test_every=$2 ;;
    --points) points=$2 ;;
    --iters) iters=$2 ;;
    *) bench_option "$@" || bench_usage ;;
    esac
    shift 2
done
bench_setup blocking
start=$(date +%s)
blocking_csv=$out/nbc-blocking.csv
[ -z "$points" ] || blocking_csv=$out/nbc-blocking-points.csv

# spent WHAT: true, saying WHAT is skipped, once --budget seconds have
# passed: no job starts after that.
spent() {
    [ $(($(date +%s) - start)) -ge "$budget" ] || return 1
    echo "run-nbc: budget of $budget s spent, skipping $*" >&2
}

# job CSV LABEL LIB TIMEOUT SITES -- BENCH-ARGS: one gridrun job, its
# rows appended to CSV with LABEL (layout,lib,run) and the load in front.
job() {
    csv=$1 label=$2 lib=$3 limit=$4 sites=$5
    shift 6
    spent "$label $*" && return 0
    # The program is env(1): LD_LIBRARY_PATH picks the library for the
    # ranks alone (the bench's RUNPATH gives way to it).
    if [ "$lib" = native ]; then
        set -- --native -- "$bin/gridcoll-bench-plain" "$@"
    elif [ "$lib" = thread ]; then
        set -- -- env LD_LIBRARY_PATH="$new_lib" GRIDCOLL_ASYNC_PROGRESS=1 \
            "$bin/gridcoll-bench" "$@"
    else
        set -- -- env LD_LIBRARY_PATH="$lib" "$bin/gridcoll-bench" "$@"
    fi
    bench_run "$label" "$limit" --wan "$wan" --site-sizes "$sites" "$@"
    bench_append "$csv" layout,lib,run
}

# halo RUN DIMS REORDER BYTES [ALGO]: one gridcoll-halo job on 4+4.
halo() {
    spent "halo $*" && return 0
    algo=${5-}
    bench_run "halo 4+4 run $1" 300 --wan "$wan" --site-sizes 4,4 -- \
        env GRIDCOLL_STATS=1 "$bin/gridcoll-halo" --dims "$2" --reorder "$3" \
        --bytes "$4" ${algo:+--algo "$algo"} --iters 20 --warmup 2 \
        --start window
    stats() {
        sed -n "s/.*site=$1 coll=neighbor .*calls=\([0-9]*\) .*wan_messages=\([0-9]*\).*/\2,\1/p" \
            "$tmp.err"
    }
    csv=$out/nbc-halo.csv
    [ -s "$csv" ] || echo "layout,run,load1,$(head -1 "$tmp"),wan_messages_alpha,calls,wan_messages_beta,calls_beta" >"$csv"
    row=$(sed -n 2p "$tmp")
    [ -z "$row" ] || echo "4+4,$1,$load,$row,$(stats alpha),$(stats beta)" >>"$csv"
    rm -f "$tmp" "$tmp.err"
}

# blocking RUN SITES COLL SIZES: the point with either library, back to
# back, which goes first alternating from run to run.
blocking() {
    if [ $(($1 % 2)) -eq 1 ]; then libs="new old"; else libs="old new"; fi
    for which in $libs; do
        lib=$new_lib
        [ "$which" = old ] && lib=$old_lib
        job "$blocking_csv" "$(echo $2 | tr , +),$which,$1" "$lib" \
            300 "$2" -- "$3" --sizes "$4" --algos auto --iters "$iters" \
            --warmup 2 --start window
    done
}

for run in $(seq 1 "$runs"); do
    for point in $points; do
        case " $what " in *" blocking "*)
            blocking "$run" $(echo "$point" | tr : ' ') ;;
        esac
    done
    [ -z "$points" ] || continue
    case " $what " in *" halo "*)
        for dims in 2x4 4x2; do
            for reorder in 0 1; do halo "$run" "$dims" "$reorder" 64k; done
        done
        for bytes in 4k 64k; do
            for algo in direct bundled; do
                halo "$run" 4x2 1 "$bytes" "$algo"
            done
        done ;;
    esac
    for sites in 2,2 4,4; do
        layout=$(echo $sites | tr , +)
        # overlap: this build's library; thread: the same with the
        # progress thread (job's lib "thread").  (job() sets lib and
        # label: sh has no local variables.)
        for part in overlap thread; do
            case " $what " in *" $part "*)
                part_lib=$new_lib part_label=new
                [ "$part" = overlap ] || part_lib=thread part_label=thread
                for coll in ialltoall iallreduce; do
                    job "$out/nbc-overlap.csv" "$layout,$part_label,$run" \
                        "$part_lib" \
                        600 "$sites" -- "$coll" --sizes 64k,256k,1m \
                        --algos auto --iters 10 --warmup 2 --overlap \
                        --test-every "$test_every"
                done ;;
            esac
        done
        case " $what " in *" native "*)
            for coll in ialltoall iallreduce; do
                job "$out/nbc-overlap.csv" "$layout,native,$run" native 600 \
                    "$sites" -- "$coll" --sizes 64k,256k,1m --iters 10 \
                    --warmup 2 --overlap --test-every "$test_every"
            done ;;
        esac
        case " $what " in *" blocking "*)
            for coll in bcast allreduce alltoall gather; do
                blocking "$run" "$sites" "$coll" 8,64k,1m
            done ;;
        esac
    done
done
echo "run-nbc: done in $(($(date +%s) - start)) s" >&2
