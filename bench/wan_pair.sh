#!/bin/bash
# Every rank of bench/run-wan.sh's relay jobs (gridrun --site-sizes 1,1
# --wan ...) runs this, inside its site's network namespace:
#
#   wan_pair.sh OUT K CC SECONDS ORDER PROGRAM [ARGS...]
#
# iperf3 between the two sites' namespaces (server at site index 1 on
# 10.77.0.2, gridwan's address of that site; the client, at site 0, writes
# iperf3's JSON to OUT), with -P K -C CC for SECONDS after one second
# omitted; and PROGRAM (the MPI program, as a child: its PMI environment is
# ours), ORDER iperf-first, relay-first or none (no iperf3).  Writes OUT.cpu.SITE_INDEX:
# CPU seconds of PROGRAM and of this site's relay while PROGRAM ran, and
# PROGRAM's wall time.  Exits with PROGRAM's status.
set -u

out=$1 k=$2 cc=$3 secs=$4 order=$5
shift 5

# The server listens for the whole job (not one-off: a client attempt
# that fails, e.g. while the server starts, is tried again).
server=
if [ "$order" != none ] && [ "$GRIDCOLL_SITE_INDEX" = 1 ]; then
    timeout $((3 * secs + 120)) iperf3 -s -B 10.77.0.2 >/dev/null 2>&1 &
    server=$!
fi

iperf() {
    [ "$GRIDCOLL_SITE_INDEX" = 0 ] || return 0
    for _ in $(seq 100); do
        timeout $((secs + 20)) iperf3 -c 10.77.0.2 -t "$secs" -O 1 \
            -P "$k" -C "$cc" -J >"$out" 2>&1 && return
        sleep 0.2
    done
}

# Clock ticks (utime + stime) of a /proc/PID/stat, counted from after the
# command name, which may hold spaces; with children=1 those of its
# waited-for children instead.
ticks() { # statfile children
    local stat fields
    read -r stat <"$1" || { echo 0; return; }
    read -r -a fields <<<"${stat##*) }"
    if [ "$2" = 1 ]; then
        echo $((fields[13] + fields[14]))
    else
        echo $((fields[11] + fields[12]))
    fi
}

# This job's relay of our site: its command line names the site's config
# in the job directory, where the token file is.
conf=$(dirname "$GRIDCOLL_TOKEN_FILE")/$GRIDCOLL_SITE_NAME.conf
relay_ticks() {
    local f cmd
    for f in /proc/[0-9]*; do
        cmd=$(tr '\0' ' ' <"$f/cmdline" 2>/dev/null) || continue
        case $cmd in
        *"gridrelay -c $conf"*) ticks "$f/stat" 0; return ;;
        esac
    done
    echo 0
}

rc=0
[ "$order" = iperf-first ] && iperf
relay_before=$(relay_ticks)
children_before=$(ticks /proc/$$/stat 1)
start=$(date +%s%N)
"$@" || rc=$?
end=$(date +%s%N)
relay_after=$(relay_ticks)
hz=$(getconf CLK_TCK)
children_after=$(ticks /proc/$$/stat 1)
awk -v r="$((relay_after - relay_before))" \
    -v p="$((children_after - children_before))" \
    -v hz="$hz" -v ns="$((end - start))" 'BEGIN {
        printf "program_cpu_s=%.2f relay_cpu_s=%.2f wall_s=%.2f\n",
               p / hz, r / hz, ns / 1e9 }' >"$out.cpu.$GRIDCOLL_SITE_INDEX"
[ "$order" = relay-first ] && iperf
if [ -n "$server" ]; then
    # The client (site 0, same file system) is done when its result is
    # in; after relay-first it may only be starting.
    for _ in $(seq $((10 * (secs + 60)))); do
        grep -qs sum_received "$out" && break
        sleep 0.1
    done
    kill "$server" 2>/dev/null
    wait "$server" 2>/dev/null
fi
exit "$rc"
