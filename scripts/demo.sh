#!/usr/bin/env bash
# GridColl demo, from a fresh Debian 12 machine (as root):
#
#   scripts/demo.sh
#
# Installs the packages and builds build/, then shows two things:
#
# 1. An MPI job over two sites: gridrun simulates sites alpha and beta on
#    this machine (one relay each, 2 ranks each) and runs gridcoll-demo,
#    an ordinary MPI program linked with libgridcoll: every rank says
#    where it runs, then a ring exchange, an Allreduce, an Alltoall, a
#    16 MiB Bcast and Barriers run across both sites, verified and timed;
#    rank 0 prints a summary table.
# 2. The relays on their own: makes test TLS certificates, starts the two
#    loopback relays of conf/examples (linked by 8 TLS streams on
#    127.0.0.1), pushes 256 MiB from rank 0 (alpha) to rank 2 (beta) with
#    gridrelay-bench, prints the throughput and a few of the relays'
#    metrics, and stops both relays with SIGTERM.
#
# Part 2 runs even when part 1 failed; the exit status is non-zero if
# either did.  Whatever happens, the processes it started are stopped on
# exit (gridrun tears down its own job).
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"

packages=(build-essential cmake ninja-build pkg-config clang clang-format
    libclang-rt-14-dev libevent-dev libconfig-dev libssl-dev zlib1g-dev
    openssl mpich libmpich-dev iperf3 python3 procps iproute2 curl)
sites=(alpha beta)
declare -A http=([alpha]=127.0.0.1:7601 [beta]=127.0.0.1:7602)
declare -A ports=([alpha]="7401 7501 7601" [beta]="7402 7502 7602")
token=conf/examples/job.token

banner() {
    printf '\n==================================================================\n'
    printf '== %s\n' "$*"
    printf '==================================================================\n'
}

die() {
    echo "demo.sh: $*" >&2
    exit 1
}

install_packages() {
    local missing=() p
    for p in "${packages[@]}"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null |
            grep -q 'install ok installed' || missing+=("$p")
    done
    ((${#missing[@]} == 0)) && return 0
    echo "installing: ${missing[*]}"
    local sudo=()
    if ((EUID != 0)); then
        command -v sudo >/dev/null || die "not root and no sudo: install ${missing[*]}"
        sudo=(sudo)
    fi
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive \
        apt-get install -y -q --no-install-recommends "${missing[@]}"
}

# ---- relays, and their cleanup on any exit ------------------------------

declare -A pids=()
log_dir=$(mktemp -d /tmp/gridcoll-demo.XXXXXX)
keep_logs=0

stop_relays() {
    local site pid
    for site in "${!pids[@]}"; do
        pid=${pids[$site]}
        kill -TERM "$pid" 2>/dev/null || true
    done
    # The relay drains for at most 10 s on SIGTERM; give it a little more.
    local deadline=$((SECONDS + 15))
    for site in "${!pids[@]}"; do
        pid=${pids[$site]}
        while kill -0 "$pid" 2>/dev/null && ((SECONDS < deadline)); do
            sleep 0.2
        done
        if kill -0 "$pid" 2>/dev/null; then
            echo "relay $site (pid $pid) ignored SIGTERM; killing it" >&2
            kill -KILL "$pid" 2>/dev/null || true
            keep_logs=1
        fi
        local rc=0
        wait "$pid" 2>/dev/null || rc=$?
        if ((rc != 0)); then
            echo "relay $site exited with status $rc" >&2
            keep_logs=1
        fi
        unset "pids[$site]"
    done
}

cleanup() {
    local rc=$?
    trap - EXIT INT TERM
    ((${#pids[@]} == 0)) || stop_relays
    if ((rc != 0 || keep_logs)); then
        local site
        for site in "${sites[@]}"; do
            if [[ -s $log_dir/$site.log ]]; then
                echo "---- last lines of $log_dir/$site.log"
                tail -n 20 "$log_dir/$site.log"
            fi
        done
        echo "logs kept in $log_dir"
    else
        rm -rf "$log_dir"
    fi
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# 0 when every link of the relay behind $1 (host:port) passes check $2:
# "up" (the link is up) or "streams" (all its streams are).  1 while the
# relay does not answer yet: curl fails quietly, and nothing is parsed.
links_ready() {
    local status
    status=$(curl -sf --max-time 2 "http://$1/status") || return 1
    python3 -c '
import json, sys
checks = {"up": lambda l: l.get("state") == "up",
          "streams": lambda l: l.get("streams_up") == l.get("streams")}
links = json.loads(sys.argv[1]).get("links", [])
sys.exit(0 if links and all(map(checks[sys.argv[2]], links)) else 1)' \
        "$status" "$2"
}

# ---- the demo -------------------------------------------------------------

banner "Packages"
install_packages
echo "all packages present"

banner "Build (build/)"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo
cmake --build build
for tool in build/bin/gridrun build/bin/gridrelay build/bin/gridrelay-bench \
    build/bin/gridcoll-demo; do
    [[ -x $tool ]] || die "$tool was not built"
done

banner "MPI job over two sites: gridrun --sites 2 --site-sizes 2,2 -- gridcoll-demo"
# gridrun starts one relay per site on loopback, waits for their link, runs
# one mpiexec per site and tears everything down on failure or timeout.
demo_rc=0
build/bin/gridrun --sites 2 --site-sizes 2,2 --timeout 300 \
    -- build/bin/gridcoll-demo || demo_rc=$?
if ((demo_rc == 0)); then
    echo "the MPI job passed every check"
else
    echo "demo.sh: the MPI job failed (gridrun exit status $demo_rc)" >&2
fi

banner "TLS certificates"
need_certs=0
for f in ca.crt alpha.crt alpha.key beta.crt beta.key; do
    [[ -f conf/tls/out/$f ]] || need_certs=1
done
if ((need_certs)); then
    conf/tls/make-certs.sh
else
    echo "conf/tls/out already has the CA and the alpha/beta certificates"
fi

banner "Start relays alpha and beta"
[[ -f $token ]] || die "$token is missing"
for site in "${sites[@]}"; do
    build/bin/gridrelay --check "conf/examples/loopback-$site.conf"
    for port in ${ports[$site]}; do
        if ss -Hltn "sport = :$port" | grep -q .; then
            die "port $port is already in use (another relay running?)"
        fi
    done
done
for site in "${sites[@]}"; do
    build/bin/gridrelay -c "conf/examples/loopback-$site.conf" \
        >"$log_dir/$site.log" 2>&1 &
    pids[$site]=$!
    echo "relay $site: pid ${pids[$site]}, log $log_dir/$site.log"
done

echo "waiting for the link to come up..."
deadline=$((SECONDS + 30))
for site in "${sites[@]}"; do
    until links_ready "${http[$site]}" up; do
        kill -0 "${pids[$site]}" 2>/dev/null || die "relay $site exited early"
        ((SECONDS < deadline)) || die "link not up after 30 s (see $log_dir)"
        sleep 0.2
    done
done
# A fair measurement wants all K streams; carry on after a while regardless.
deadline=$((SECONDS + 10))
until links_ready "${http[alpha]}" streams && links_ready "${http[beta]}" streams; do
    ((SECONDS < deadline)) || {
        echo "not every stream is up yet; measuring anyway"
        break
    }
    sleep 0.2
done
curl -s "http://${http[alpha]}/status" | python3 -c '
import json, sys
s = json.load(sys.stdin)
for l in s["links"]:
    print("alpha -> %s: %s, %d/%d streams, transport %s"
          % (l["peer"], l["state"], l["streams_up"], l["streams"], s["transport"]))' ||
    true

banner "Relay throughput: 256 MiB from rank 0 (alpha) to rank 2 (beta)"
build/bin/gridrelay-bench \
    --relay-a unix:/tmp/gridrelay-alpha.sock \
    --relay-b unix:/tmp/gridrelay-beta.sock \
    --token "$token" --job-id 1 --rank-a 0 --rank-b 2 \
    --bytes 256M --msg-size 4M | tee "$log_dir/bench.out"

banner "Metrics excerpt (alpha, http://${http[alpha]}/metrics)"
curl -s "http://${http[alpha]}/metrics" |
    grep -E '^gridrelay_(link_(up|streams_up|bytes_sent_total|chunks_resent_total)|sessions)[ {]' |
    head -n 12 || true

banner "Stop relays (SIGTERM)"
stop_relays
((keep_logs == 0)) || die "a relay did not stop cleanly"
echo "both relays stopped cleanly"

((demo_rc == 0)) || die "the MPI job over two sites failed (gridrun exit status $demo_rc)"
