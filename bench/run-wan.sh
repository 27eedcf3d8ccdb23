#!/bin/bash
# The WAN benchmark report (issue 5): GridColl's relays and collectives
# against iperf3 and native MPICH over the same emulated WAN, one run.
#
#   bench/run-wan.sh [--build DIR] [--out DIR] [--wan SPEC] [--runs N]
#                    [--budget S] [--colls LIST] [--seed N] [--quick]
#                    [--tuning]
#
# Needs root (gridrun --wan).  SPEC defaults to
# delay=20ms,rate=1gbit,loss=0.1%.  Each job's gridwan draws its losses
# from a seed of its own, N plus the job's number (model_check's jobs
# share one; N defaults to the time; the report prints it, so --seed N
# repeats a run's losses); a SPEC with seed= keeps that one seed for
# every job.  Every job runs under gridrun --timeout
# and timeout(1); a job that fails or times out leaves its rows out (the
# report says which), and once S seconds (default 840) have passed the
# remaining jobs are skipped, so the run stays under 15 minutes.
#
#  1. Relay sweep: one job per wan.streams K in 1 2 4 8 16 32 and
#     tcp.congestion cc in cubic bbr, 1+1 ranks on two sites; inside each
#     job, in the same two namespaces, `iperf3 -P K -C cc` and the relay
#     (gridcoll-mpibench stream: rank 0 streams 1 MiB messages, 8 in
#     flight, to rank 1), alternating which goes first; each timed over 3
#     s after 1 s left out (iperf3 -O 1, stream --omit 1).  The relay's
#     default (8 streams, system cc) runs N times more, N times with TLS
#     (throwaway certificates from conf/tls/make-certs.sh, gridrun
#     --tls-dir), once with the ranks sleeping 200 us between MPI_Testany
#     calls instead of waiting in MPI_Waitany (--nap 200: the CPU their
#     spinning takes), once without gridwan (the relay path alone).  With
#     --tuning also N rounds of flow.rank_credit 8M (the old default)
#     against 32M (the new one), alternating, and three tuning variants
#     beside them: flow.rank_credit=64M, wan.chunk_size=1M, gridwan rt=10
#     (off by default: their time goes to the collectives' repetitions).
#     CPU seconds per GB moved of gridwan, both ranks and both relays.
#  1b. Plain TCP bursts (bench/tcp_burst.py): 8 warm bbr connections
#     between the two site namespaces carry 64 KiB, 1 MiB and 16 MiB
#     bursts, the transport's own time for what a collective moves.
#  2. Collectives alltoall, bcast, allgather, allreduce, barrier on 2+2,
#     4+4, 3+5 ranks: gridcoll-bench (every algorithm forced in turn, and
#     auto; relays with 8 streams and bbr) against gridcoll-bench-plain
#     under --native (one MPICH job, UCX over TCP, system cc), alternating
#     which goes first.  Sizes: bcast and allreduce the whole buffer, 8 B
#     to 16 MiB; alltoall bytes per pair and allgather bytes per rank, 8 B
#     to 1 MiB (so the report fits its budget: 16 MiB per pair would be
#     256 MiB per direction on 4+4).  Native 16 MiB runs as a job of its own
#     with one timed call.  Both programs run with --start window: the
#     ranks start every call together at a time rank 0 broadcasts on the
#     clock all namespaces share, and a call's time is the slowest rank's
#     end minus that start, so the skew with which a barrier releases the
#     sites (up to one delay) is not in the times.  The model check
#     (3.) times the same way.  Plus the barrier target's own measurement:
#     50 back-to-back MPI_Barrier calls (gridcoll-mpibench barrier) on 2+2,
#     GridColl and native alternating, and on one site of 2 ranks, N rounds.
#  3. bench/model_check.sh, when it exists: predicted against measured.
#
# --colls: only these collectives (comma-separated; default all five).
#
# Output (OUT defaults to docs/performance; --quick writes wan-quick-*
# files instead and runs 2+2 only, 8 B and 64 KiB, K 8 only, one run):
#   OUT/wan-relay.csv, OUT/wan-relay.png          the relay sweep
#   OUT/wan-coll.csv, OUT/wan-coll-COLL.png       the collectives
#   OUT/wan-targets.csv                           the issue-5 targets
#   OUT/wan-barrier.csv                           back-to-back barriers
#   OUT/wan-tcp-burst.csv                         plain TCP bursts
#   OUT/wan-report.md                             tables README.md quotes
set -euo pipefail

src=$(cd "$(dirname "$0")/.." && pwd)
build=$src/build
out=$src/docs/performance
wan="delay=20ms,rate=1gbit,loss=0.1%"
runs=3
budget=840
seed=$(date +%s)
quick=0
tuning=0
colls=alltoall,bcast,allgather,allreduce,barrier

usage() {
    sed -n '2,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//'
    exit "$1"
}

while [ $# -gt 0 ]; do
    case $1 in
    --build) build=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --wan) wan=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --budget) budget=$2; shift 2 ;;
    --quick) quick=1; shift ;;
    --tuning) tuning=1; shift ;;
    --colls) colls=$2; shift 2 ;;
    --seed) seed=$2; shift 2 ;;
    -h | --help) usage 0 ;;
    *) echo "run-wan.sh: unknown option '$1'" >&2; usage 2 >&2 ;;
    esac
done
for n in "$runs" "$budget" "$seed"; do
    case $n in
    '' | *[!0-9]* | 0) echo "run-wan.sh: --runs, --budget and --seed want a positive number" >&2; exit 2 ;;
    esac
done
for coll in ${colls//,/ }; do
    case $coll in
    alltoall | bcast | allgather | allreduce | barrier) ;;
    *) echo "run-wan.sh: --colls: unknown collective '$coll'" >&2; exit 2 ;;
    esac
done
if [ "$(id -u)" != 0 ]; then
    echo "run-wan.sh: needs root (gridrun --wan)" >&2
    exit 2
fi

bin=$build/bin
for prog in gridrun gridwan gridrelay gridcoll-mpibench gridcoll-bench \
    gridcoll-bench-plain; do
    if [ ! -x "$bin/$prog" ]; then
        echo "run-wan.sh: $bin/$prog missing: build first" >&2
        exit 1
    fi
done
for tool in iperf3 gnuplot; do
    if ! command -v "$tool" >/dev/null; then
        package=$tool
        [ "$tool" = gnuplot ] && package=gnuplot-nox
        echo "run-wan.sh: installing $package" >&2
        timeout 300 apt-get install -y -q --no-install-recommends "$package" >&2
    fi
done

mkdir -p "$out"
prefix=wan
[ "$quick" = 1 ] && prefix="wan-quick"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/run-wan.XXXXXX")
# A default model the user probed (gridrun --probe) must not change what
# `auto` picks here: an empty model directory for every job.
export GRIDCOLL_MODEL_DIR=$tmp/models
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/jobs"
job_base=$tmp/jobs
start=$(date +%s)
failures=$tmp/failures.txt
: >"$failures"

elapsed() { echo $(($(date +%s) - start)); }

# Whether the time budget still allows a job; if not, say so once per job.
in_budget() { # what
    if [ "$(elapsed)" -ge "$budget" ]; then
        echo "skipped (time budget): $1" >>"$failures"
        return 1
    fi
}

# next_wan SPEC: sets job_spec to the next job's --wan spec, with loss
# draws of its own unless SPEC fixes the seed.
jobs_started=0
next_wan() { # spec
    jobs_started=$((jobs_started + 1))
    case $1 in
    *seed=*) job_spec=$1 ;;
    *) job_spec="$1,seed=$((seed + jobs_started))" ;;
    esac
}

# One gridrun job, bounded; stdout to $2.  A failure is recorded, not fatal.
job() { # what outfile seconds gridrun-args... -- program...
    local what=$1 outfile=$2 secs=$3
    shift 3
    in_budget "$what" || return 1
    echo "[$(elapsed) s] $what" >&2
    local args=() prev=
    for arg in "$@"; do
        if [ "$prev" = --wan ]; then
            next_wan "$arg"
            arg=$job_spec
        fi
        args+=("$arg")
        prev=$arg
    done
    local rc=0
    timeout $((secs + 30)) nice "$bin/gridrun" --timeout "$secs" \
        --job-dir "$job_base" "${args[@]}" >"$outfile" 2>"$tmp/err" || rc=$?
    if [ "$rc" != 0 ]; then
        echo "failed (exit $rc): $what: $(grep -Ev 'job directory kept|older failed jobs. directories' "$tmp/err" | tail -n 3 | tr '\n' ' ')" >>"$failures"
        echo "  failed, exit $rc" >&2
        return 1
    fi
}

uptime_before=$(uptime)

# ---- 1. relay sweep --------------------------------------------------------


relay_csv=$out/$prefix-relay.csv
echo "config,round,streams,cc,extra,order,relay_MBps,relay_Mbit,iperf3_Mbit,relay_over_iperf3,gridwan_cpu_s_per_GB,ranks_cpu_s_per_GB,relays_cpu_s_per_GB,ranks_cores,relays_cores" >"$relay_csv"
relay_secs=3
pair=0

# One relay/iperf3 pair of measurements; a CSV row to $relay_csv.
relay_point() { # config round K cc extra(relay-set or rt=N or -)
    local config=$1 round=$2 k=$3 cc=$4 extra=$5
    local order=iperf-first
    pair=$((pair + 1))
    [ $((pair % 2)) = 0 ] && order=relay-first
    local sets=(--relay-set "wan.streams=$k")
    [ "$cc" != system ] && sets+=(--relay-set "tcp.congestion=$cc")
    local place=(--wan "$wan") nap=0
    case $extra in
    -) ;;
    rt=*) place=(--wan "$wan,$extra") ;;
    tls) sets+=(--tls-dir "$tmp/tls") ;;
    # The relay path alone: no gridwan, nothing for iperf3 to cross.
    loopback) place=() order=none ;;
    nap) nap=200 ;;
    *) sets+=(--relay-set "$extra") ;;
    esac
    local icc=$cc
    [ "$cc" = system ] && icc=$(cat /proc/sys/net/ipv4/tcp_congestion_control)
    local json=$tmp/iperf.json
    rm -f "$json" "$json".cpu.*
    rm -rf "$tmp/relayjob"
    mkdir "$tmp/relayjob"
    job_base=$tmp/relayjob
    job "relay $config K=$k cc=$cc $extra" "$tmp/relay.out" 120 \
        --site-sizes 1,1 "${place[@]}" --keep-job-dir "${sets[@]}" -- \
        "$src/bench/wan_pair.sh" "$json" "$k" "$icc" "$relay_secs" "$order" \
        "$bin/gridcoll-mpibench" stream --bytes 1M --window 8 --nap "$nap" \
        --seconds "$relay_secs" --omit 1 --csv || { job_base=$tmp/jobs; return 0; }
    job_base=$tmp/jobs
    local jobdir
    for jobdir in "$tmp"/relayjob/gridrun-*; do :; done
    python3 - "$json" "$tmp/relay.out" "$jobdir/wan.log" \
        "$config,$round,$k,$cc,$extra,$order" >>"$relay_csv" <<'EOF'
import csv, glob, json, re, sys
jpath, rpath, wpath, head = sys.argv[1:]
nan = float("nan")
try:
    iperf = json.load(open(jpath))["end"]["sum_received"]["bits_per_second"] / 1e6
except (OSError, ValueError, KeyError):
    iperf = nan
rows = [r for r in csv.DictReader(open(rpath)) if r.get("test") == "stream"]
mbps = float(rows[0]["MBps"]) if rows else nan
moved = int(rows[0]["iters"]) * int(rows[0]["bytes"]) / 1e9 if rows else 0
try:
    log = open(wpath).read()
except OSError:  # no gridwan (loopback)
    log = ""
wan_cpu = sum(float(v) for v in re.findall(r"(?:user_s|sys_s)=([0-9.]+)", log))
wan_gb = sum(float(v) for v in re.findall(r"\bbytes=([0-9]+)", log)) / 1e9
# Both sites' CPU seconds over the MPI program's run (init, warm-up,
# stream, drain, finalize); cores: over the longer program's wall time.
cpu = {"program_cpu_s": 0.0, "relay_cpu_s": 0.0}
wall = 0.0
for path in glob.glob(jpath + ".cpu.*"):
    for key, value in re.findall(r"(\w+)=([0-9.]+)", open(path).read()):
        if key in cpu:
            cpu[key] += float(value)
        elif key == "wall_s":
            wall = max(wall, float(value))
def per_gb(seconds, gb):
    return "%.2f" % (seconds / gb) if gb > 0 else "nan"
print("%s,%.2f,%.1f,%.1f,%.3f,%s,%s,%s,%s,%s" % (
    head, mbps, mbps * 8, iperf,
    mbps * 8 / iperf if iperf == iperf and iperf > 0 else nan,
    per_gb(wan_cpu, wan_gb), per_gb(cpu["program_cpu_s"], moved),
    per_gb(cpu["relay_cpu_s"], moved), per_gb(cpu["program_cpu_s"], wall),
    per_gb(cpu["relay_cpu_s"], wall)))
EOF
}

if [ "$quick" = 1 ]; then
    relay_secs=2
    relay_point default 1 8 system -
else
    for k in 1 2 4 8 16 32; do
        for cc in cubic bbr; do
            relay_point sweep 1 "$k" "$cc" -
        done
    done
    for round in $(seq 1 "$runs"); do
        relay_point default "$round" 8 system -
    done
    # The relay's real default has TLS on; local mode is plaintext unless
    # given certificates.
    bash "$src/conf/tls/make-certs.sh" "$tmp/tls" alpha beta >/dev/null 2>&1
    for round in $(seq 1 "$runs"); do
        relay_point default-tls "$round" 8 system tls
    done
    relay_point default-nap 1 8 system nap
    relay_point loopback 1 8 system loopback
fi
if [ "$tuning" = 1 ] && [ "$quick" = 0 ]; then
    # Before and after the default rank credit went from 8M to 32M,
    # alternating; then other knobs.
    for round in $(seq 1 "$runs"); do
        relay_point credit-8M "$round" 8 system flow.rank_credit=8M
        relay_point credit-32M "$round" 8 system flow.rank_credit=32M
    done
    relay_point tuning 1 8 system flow.rank_credit=64M
    relay_point tuning 1 8 system wan.chunk_size=1M
    relay_point tuning 1 8 system rt=10
fi

# ---- 1b. plain TCP bursts ----------------------------------------------------
# What TCP itself gives a collective's burst on this link, nothing of
# GridColl in the way: 8 warm bbr connections carry 64 KiB, 1 MiB and
# 16 MiB bursts split evenly, timed from the start to the last byte
# (bench/tcp_burst.py).

burst_csv=$out/$prefix-tcp-burst.csv
rm -f "$burst_csv"
if [ "$quick" = 0 ]; then
    job "plain TCP bursts, 8 bbr streams" "$tmp/burst.out" 120 \
        --site-sizes 1,1 --wan "$wan" --no-join-check -- \
        "$src/bench/tcp_burst.py" pair \
        --csv "$burst_csv" --streams 8 --cc bbr --bytes 64k,1M,16M \
        --rounds 15,15,9 || true
fi

# ---- 2. collectives ----------------------------------------------------------

coll_csv=$out/$prefix-coll.csv
echo "layout,lib,coll,algo,ranks,bytes,median_us,p10_us,p90_us" >"$coll_csv"
if [ "$quick" = 1 ]; then
    layouts="2,2"
    big_sizes="8,64k"
    pair_sizes="8,64k"
    native_big=""
    iters=2
else
    layouts="2,2 4,4 3,5"
    big_sizes="8,64k,1m,16m"
    pair_sizes="8,64k,1m"
    native_big="16m"
    iters=5
fi
relay_sets=(--relay-set wan.streams=8 --relay-set tcp.congestion=bbr)
turn=0

# gridcoll-bench rows of one job into $coll_csv, prefixed by layout, lib.
coll_job() { # layout lib coll sizes iters warmup
    local layout=$1 lib=$2 coll=$3 sizes=$4 n=$5 warm=$6
    local args=(--site-sizes "$layout" --wan "$wan") prog=$bin/gridcoll-bench
    if [ "$lib" = native ]; then
        args+=(--native)
        prog=$bin/gridcoll-bench-plain
    else
        args+=("${relay_sets[@]}")
    fi
    job "$coll $layout $lib sizes $sizes" "$tmp/coll.out" 240 "${args[@]}" -- \
        "$prog" "$coll" --sizes "$sizes" --iters "$n" --warmup "$warm" \
        --start window --csv || return 0
    grep "^$coll," "$tmp/coll.out" | sed "s/^/${layout/,/+},$lib,/" |
        awk -F, 'BEGIN { OFS = "," } { print $1, $2, $3, $4, $6, $7, $8, $9, $10 }' \
            >>"$coll_csv"
}

for layout in $layouts; do
    for coll in ${colls//,/ }; do
        sizes=$big_sizes
        case $coll in
        alltoall | allgather) sizes=$pair_sizes ;;
        barrier) sizes=8 ;; # one row, bytes 0
        esac
        small=${sizes%,16m}
        turn=$((turn + 1))
        if [ $((turn % 2)) = 1 ]; then order="gridcoll native"; else order="native gridcoll"; fi
        for lib in $order; do
            if [ "$lib" = native ] && [ "$sizes" != "$small" ]; then
                coll_job "$layout" native "$coll" "$small" "$iters" 1
                coll_job "$layout" native "$coll" "$native_big" 1 0
            else
                coll_job "$layout" "$lib" "$coll" "$sizes" "$iters" 1
            fi
        done
    done
done

# The barrier target: back-to-back MPI_Barrier (gridcoll-mpibench barrier:
# a barrier timed alone after another one carries the sites' exit skew,
# up to one delay) on 2+2, GridColl and native alternating, N rounds; the
# local barrier of 2 ranks on one site (MPICH) for the limit.
barrier_csv=$out/$prefix-barrier.csv
echo "round,lib,layout,iters,usec_per_op" >"$barrier_csv"
barrier_job() { # round lib sites-args...
    local round=$1 lib=$2 layout=$3
    shift 3
    local prog=$bin/gridcoll-mpibench
    [ "$lib" = native ] && prog=$bin/gridcoll-mpibench-plain
    job "barrier back to back $layout $lib round $round" "$tmp/barrier.out" 120 \
        "$@" -- "$prog" barrier --iters 50 --warmup 5 --csv || return 0
    awk -F, -v r="$round" -v lib="$lib" -v l="$layout" \
        '$1 == "barrier" { print r "," lib "," l "," $8 "," $9 }' \
        "$tmp/barrier.out" >>"$barrier_csv"
}
barrier_rounds=$runs
[ "$quick" = 1 ] && barrier_rounds=1
for round in $(seq 1 "$barrier_rounds"); do
    if [ $((round % 2)) = 1 ]; then order="gridcoll native"; else order="native gridcoll"; fi
    for lib in $order; do
        if [ "$lib" = native ]; then
            barrier_job "$round" native 2+2 --site-sizes 2,2 --wan "$wan" --native
        else
            barrier_job "$round" gridcoll 2+2 --site-sizes 2,2 --wan "$wan" \
                "${relay_sets[@]}"
        fi
    done
    barrier_job "$round" local 2 --sites 1 -n 2
done

# ---- 3. model ------------------------------------------------------------------

model_csv=$tmp/model.csv
if [ -x "$src/bench/model_check.sh" ] && [ "$quick" = 0 ] && in_budget "model_check"; then
    echo "[$(elapsed) s] model_check.sh" >&2
    next_wan "$wan"
    timeout 300 "$src/bench/model_check.sh" --build "$build" --csv "$model_csv" \
        "${relay_sets[@]}" \
        --runs 1 --wan "$job_spec" >&2 || echo "failed: bench/model_check.sh" >>"$failures"
fi

uptime_after=$(uptime)
duration=$(elapsed)

# ---- report ----------------------------------------------------------------------

python3 "$src/bench/wan_report.py" --wan "$wan" --prefix "$prefix" \
    --out "$out" --relay "$relay_csv" --coll "$coll_csv" \
    --barrier "$barrier_csv" --model "$model_csv" --burst "$burst_csv" \
    --failures "$failures" --load-before "$uptime_before" \
    --load-after "$uptime_after" --seconds "$duration" \
    --mode "$([ "$quick" = 1 ] && echo quick || echo full)" --gnuplot "$tmp" \
    --relay-seconds "$relay_secs" --seed "$seed" --system-cc "$(cat /proc/sys/net/ipv4/tcp_congestion_control)"
echo "run-wan.sh: $(elapsed) s; report $out/$prefix-report.md" >&2
