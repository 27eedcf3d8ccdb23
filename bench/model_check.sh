#!/bin/bash
# Predicted against measured times of the performance model (docs/model.md):
# on 2+2 and 4+4 namespace sites over the emulated WAN, gridcoll-probe
# measures the model, gridcoll-info --predict predicts alltoall lg
# (Steffenel eq. 7; 64 KiB..1 MiB per pair of ranks, gridcoll-bench's
# --sizes for alltoall) and bcast multilane (64 KiB..16 MiB, the whole
# buffer), and gridcoll-bench, run with the model so the forced algorithm
# takes the segment size the prediction assumed, measures them (--start
# window: from a start all ranks share, as the model, which knows no skew
# between the sites, predicts; after 3 untimed calls, as the probe's 3
# untimed rounds per size, since the model predicts the steady state).
# Writes CSV
#   coll,algo,layout,bytes,predicted_us,measured_us,ratio
# with ratio = predicted / measured, measured the median over --runs of
# gridcoll-bench's medians.  Needs root (gridrun --wan).  Bounded: about
# 85 s per run on an idle 2-core machine.
#
# usage: bench/model_check.sh [--build DIR] --csv FILE [--runs N]
#                             [--wan SPEC] [--relay-set KEY=VALUE]...
# (--relay-set: passed to every gridrun, probe and measurement alike)
set -eu

build=build
csv=
runs=1
wan="delay=20ms,rate=1gbit,loss=0.1%"
relay_sets=()
usage() {
    echo "usage: $0 [--build DIR] --csv FILE [--runs N] [--wan SPEC]" \
        "[--relay-set KEY=VALUE]..." >&2
    exit 2
}
while [ $# -gt 0 ]; do
    case $1 in
    --build) [ $# -ge 2 ] || usage; build=$2; shift 2 ;;
    --csv) [ $# -ge 2 ] || usage; csv=$2; shift 2 ;;
    --runs) [ $# -ge 2 ] || usage; runs=$2; shift 2 ;;
    --wan) [ $# -ge 2 ] || usage; wan=$2; shift 2 ;;
    --relay-set) [ $# -ge 2 ] || usage; relay_sets+=(--relay-set "$2"); shift 2 ;;
    *) usage ;;
    esac
done
[ -n "$csv" ] || usage
case $runs in '' | *[!0-9]* | 0) usage ;; esac
bin=$build/bin
for tool in gridrun gridcoll-probe gridcoll-bench gridcoll-info; do
    [ -x "$bin/$tool" ] || { echo "$0: no $bin/$tool (build first)" >&2; exit 1; }
done

work=$(mktemp -d "${TMPDIR:-/tmp}/model_check.XXXXXX")
trap 'rm -rf "$work"' EXIT

A2A_SIZES=64k,256k,1m
BCAST_SIZES=64k,256k,1m,4m,16m

# predictions COLL ALGO LAYOUT SIZES MODEL: "bytes predicted_us" lines
predictions() {
    "$bin/gridcoll-info" --model "$5" --predict "$1" --site-sizes "$3" \
        --bytes "$4" --csv |
        awk -F, -v algo="$2" 'NR > 1 && $2 == algo { print $5, $7 }'
}

# measure COLL ALGO LAYOUT SIZES MODEL RUN: "bytes median_us" lines
measure() {
    nice "$bin/gridrun" --timeout 300 --site-sizes "$3" --wan "$wan" \
        "${relay_sets[@]}" --model "$5" -- "$bin/gridcoll-bench" "$1" \
        --sizes "$4" --algos "$2" --iters 9 --warmup 3 --start window --csv |
        awk -F, -v algo="$2" 'NR > 1 && $2 == algo { print $5, $6 }'
}

echo "coll,algo,layout,bytes,predicted_us,measured_us,ratio" >"$work/out.csv"
for layout in 2,2 4,4; do
    name=$(echo "$layout" | tr , +)
    model=$work/model-$name.cfg
    echo "model_check: $name: gridcoll-probe" >&2
    nice "$bin/gridrun" --timeout 300 --site-sizes "$layout" --wan "$wan" \
        "${relay_sets[@]}" -- "$bin/gridcoll-probe" --output "$model" >&2
    for spec in "alltoall lg $A2A_SIZES" "bcast multilane $BCAST_SIZES"; do
        set -- $spec
        predictions "$1" "$2" "$layout" "$3" "$model" >"$work/predicted"
        : >"$work/measured"
        run=1
        while [ "$run" -le "$runs" ]; do
            echo "model_check: $name: $1 $2, run $run of $runs" >&2
            measure "$1" "$2" "$layout" "$3" "$model" >>"$work/measured"
            run=$((run + 1))
        done
        # Median of the runs' medians per size, joined with the prediction.
        sort -n -k1,1 -k2,2g "$work/measured" |
            awk -v coll="$1" -v algo="$2" -v layout="$name" '
                NR == FNR { predicted[$1] = $2; next }
                { n[$1]++; v[$1, n[$1]] = $2 }
                END {
                    for (b in n) {
                        k = n[b]
                        m = k % 2 ? v[b, (k + 1) / 2] \
                                  : (v[b, k / 2] + v[b, k / 2 + 1]) / 2
                        printf "%s,%s,%s,%s,%.1f,%.1f,%.3f\n", coll, algo,
                            layout, b, predicted[b], m, predicted[b] / m
                    }
                }' "$work/predicted" - | sort -t, -k4,4n >>"$work/out.csv"
    done
done
cp "$work/out.csv" "$csv"
cat "$csv"
