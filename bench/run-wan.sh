#!/bin/bash
# GridColl against native MPICH over the same emulated WAN, side by side.
#
#   bench/run-wan.sh [--build DIR] [--runs N] [--wan SPEC] [--csv FILE]
#
# Two sites of two ranks (gridrun --site-sizes 2,2) joined by gridwan with
# SPEC (default delay=20ms,rate=1gbit,loss=0.1%), each measurement once
# through GridColl (gridrun --wan, gridcoll-mpibench linked with
# libgridcoll) and once natively (gridrun --wan --native,
# gridcoll-mpibench-plain: one MPICH job, UCX over TCP across the WAN):
#
#   pingpong 8 B      rank 0 <-> rank 2 (other site): one-way latency
#   pingpong 4 MiB    the same pair: one-way time and bandwidth
#   alltoall 64 KiB   per pair, all 4 ranks
#
# N rounds (default 3); the two sides alternate which goes first.  Every
# run's gridcoll-mpibench row goes to FILE's -runs.csv companion; FILE
# (default docs/performance/wan.csv) gets the median over the rounds of
# each measurement, and the summary on stdout puts the two sides next to
# each other.  Time is bounded: every gridrun gets --timeout 240 and a hard
# limit of 300 s, so at most 4 * N * 300 s.  Needs root (gridrun --wan).
set -euo pipefail

src=$(cd "$(dirname "$0")/.." && pwd)
build=$src/build
runs=3
wan="delay=20ms,rate=1gbit,loss=0.1%"
csv=$src/docs/performance/wan.csv

usage() {
    sed -n '2,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//'
    exit "$1"
}

while [ $# -gt 0 ]; do
    case $1 in
    --build) build=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --wan) wan=$2; shift 2 ;;
    --csv) csv=$2; shift 2 ;;
    -h | --help) usage 0 ;;
    *) echo "run-wan.sh: unknown option '$1'" >&2; usage 2 >&2 ;;
    esac
done
case $runs in
'' | *[!0-9]* | 0) echo "run-wan.sh: --runs wants a positive number" >&2; exit 2 ;;
esac

bin=$build/bin
for prog in gridrun gridcoll-mpibench gridcoll-mpibench-plain; do
    if [ ! -x "$bin/$prog" ]; then
        echo "run-wan.sh: $bin/$prog missing: build first" >&2
        exit 1
    fi
done
raw=${csv%.csv}-runs.csv
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# One gridcoll-mpibench run on 2+2 ranks; its CSV rows (header dropped)
# go to stdout, prefixed with the round.
measure() { # round lib test bytes iters warmup
    local round=$1 lib=$2 test=$3 bytes=$4 iters=$5 warmup=$6
    local args=(--site-sizes "2,2" --wan "$wan" --timeout 240)
    local prog=$bin/gridcoll-mpibench
    if [ "$lib" = native ]; then
        args+=(--native)
        prog=$bin/gridcoll-mpibench-plain
    fi
    local peer=()
    [ "$test" = pingpong ] && peer=(--peer 2)
    if ! timeout 300 nice "$bin/gridrun" "${args[@]}" -- "$prog" "$test" \
        --bytes "$bytes" --iters "$iters" --warmup "$warmup" "${peer[@]}" \
        --csv >"$tmp/out" 2>"$tmp/err"; then
        echo "run-wan.sh: $lib $test $bytes failed:" >&2
        cat "$tmp/out" "$tmp/err" >&2
        exit 1
    fi
    grep "^$test," "$tmp/out" | sed "s/^/$round,/"
}

echo "round,test,lib,bytes,ranks,sites,peer,pair,iters,usec_per_op,usec_median,MBps" >"$raw"
for round in $(seq 1 "$runs"); do
    if [ $((round % 2)) = 1 ]; then order="gridcoll native"; else order="native gridcoll"; fi
    for lib in $order; do
        echo "round $round/$runs: $lib" >&2
        # 8 B: 30 round trips of 2 x delay; 4 MiB: 5 transfers each way.
        measure "$round" "$lib" pingpong 8,4M 30,5 3,1 >>"$raw"
        measure "$round" "$lib" alltoall 64K 10 2 >>"$raw"
    done
done

# Medians over the rounds, one row per test, size and side; the native
# over GridColl time ratio in the summary.
awk -F, -v wan="$wan" '
    NR == 1 { next }
    {
        key = $2 "," $4 "," $3
        n[key]++
        t[key, n[key]] = $11
        m[key, n[key]] = $12
        ranks[key] = $5
        if (!(key in seen)) { seen[key] = 1; keys[++nk] = key }
    }
    function median(arr, key, cnt,    i, j, v, tmpv) {
        for (i = 1; i <= cnt; i++) v[i] = arr[key, i] + 0
        for (i = 2; i <= cnt; i++)
            for (j = i; j > 1 && v[j - 1] > v[j]; j--) {
                tmpv = v[j]; v[j] = v[j - 1]; v[j - 1] = tmpv
            }
        return cnt % 2 ? v[(cnt + 1) / 2] : (v[cnt / 2] + v[cnt / 2 + 1]) / 2
    }
    END {
        print "test,bytes,lib,ranks,wan,runs,usec_median,usec_min,usec_max,MBps_median"
        for (k = 1; k <= nk; k++) {
            key = keys[k]
            lo = hi = t[key, 1] + 0
            for (i = 2; i <= n[key]; i++) {
                if (t[key, i] + 0 < lo) lo = t[key, i] + 0
                if (t[key, i] + 0 > hi) hi = t[key, i] + 0
            }
            printf "%s,%s,\"%s\",%d,%.1f,%.1f,%.1f,%.2f\n", key, ranks[key],
                   wan, n[key], median(t, key, n[key]), lo, hi,
                   median(m, key, n[key])
        }
    }' "$raw" | sed 's/,plain,/,native,/' >"$csv"

echo
echo "WAN $wan, 2+2 ranks, medians of $runs runs (one-way for pingpong)"
# The quoted WAN column holds commas: count the numbers from the end.
awk -F, '
    NR == 1 { next }
    {
        w = $1 " " $2
        us[w, $3] = $(NF - 3)
        mb[w, $3] = $NF
        if (!(w in seen)) { seen[w] = 1; order[++n] = w }
    }
    END {
        printf "%-20s %14s %14s %10s %12s %12s\n", "test bytes", "gridcoll us",
               "native us", "native/gc", "gridcoll MB/s", "native MB/s"
        for (i = 1; i <= n; i++) {
            w = order[i]
            printf "%-20s %14.1f %14.1f %10.2f %12.2f %12.2f\n", w,
                   us[w, "gridcoll"], us[w, "native"],
                   us[w, "native"] / us[w, "gridcoll"], mb[w, "gridcoll"],
                   mb[w, "native"]
        }
    }' "$csv"
echo "medians: $csv; every run: $raw"
