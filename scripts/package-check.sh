#!/usr/bin/env bash
# GridColl: the Debian packages on a fresh Debian 12 root (ad hoc, not CI;
# as root; docs/install.md).
#
#   scripts/package-check.sh [BUILD_DIR]
#
# 1. builds BUILD_DIR (default build-pkg/, Release) and `cpack -G DEB`;
# 2. makes a minimal Debian root with mmdebstrap from this machine's Debian
#    mirror (the bookworm entries of /etc/apt/sources.list*);
# 3. `apt-get install ./gridcoll-relay_*.deb ./gridcoll_*.deb` in it
#    (chroot with /proc, /sys and /dev/shm mounted, unmounted on exit);
# 4. smoke test inside: gridrelay --version; the package's user, directory
#    and disabled unit; gridrelay --check on the installed example (file:line
#    errors), then on a copy made valid with certificates from the installed
#    make-certs.sh, as the service user; an MPI program built with
#    `mpicc $(pkg-config --cflags --libs gridcoll)` and run as an ordinary
#    user with `gridrun --sites 2 -n 4`; then two gridrelay services (sites
#    alpha and beta on loopback, run as the service user as the unit would)
#    and the same program as a two-site job registered with them by
#    `gridrun -f MACHINEFILE` (service=, a local stand-in for ssh); the
#    services stopped with SIGTERM, nothing left running in the root.
#
# Environment:
#   CHROOT=DIR       where the root goes (default: a new directory under
#                    /var/tmp, removed at the end).  A DIR left by an earlier
#                    run is replaced; any other non-empty DIR is refused.
#   KEEP_CHROOT=1    keep the root afterwards (always kept when CHROOT is
#                    given).
#   SUITE=bookworm   the Debian release.
#   MIRROR="deb URI SUITE COMPONENTS"...  apt lines for mmdebstrap, one per
#                    line (default: from /etc/apt/sources.list*).
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=$(realpath -m "${1:-$repo/build-pkg}")
suite=${SUITE:-bookworm}
marker=.gridcoll-package-check

if ((EUID != 0)); then
    echo "package-check.sh: needs root (mmdebstrap, chroot, mount)" >&2
    exit 1
fi

t0=$SECONDS
step_start=$SECONDS
step() {
    printf '\n== %s (%ds so far)\n' "$*" $((SECONDS - t0))
    step_start=$SECONDS
}
step_done() {
    printf -- '-- done in %ds\n' $((SECONDS - step_start))
}

# ---- tools ---------------------------------------------------------------
missing=()
for p in mmdebstrap dpkg-dev file cmake ninja-build; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null |
        grep -q 'install ok installed' || missing+=("$p")
done
if ((${#missing[@]} > 0)); then
    step "installing ${missing[*]}"
    DEBIAN_FRONTEND=noninteractive apt-get update -q
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
        --no-install-recommends "${missing[@]}"
fi

# ---- 1. build and package ------------------------------------------------
step "build $build and cpack -G DEB"
if [[ ! -f $build/CMakeCache.txt ]]; then
    cmake -S "$repo" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release
fi
cmake --build "$build"
debs=$(mktemp -d /tmp/gridcoll-debs.XXXXXX)
(cd "$build" && cpack -G DEB -B "$debs" >"$debs/cpack.log" 2>&1) || {
    cat "$debs/cpack.log"
    exit 1
}
version=$(sed -n 's/^CMAKE_PROJECT_VERSION:STATIC=//p' "$build/CMakeCache.txt")
ls -l "$debs"/*.deb
step_done

# ---- 2. a fresh root -----------------------------------------------------
# The bookworm, -updates and -security entries this machine uses, as
# one-line apt sources for mmdebstrap.
host_mirrors() {
    python3 - "$suite" <<'EOF'
import glob, re, sys
suite = sys.argv[1]
want = {suite, suite + "-updates", suite + "-security"}
lines = []
for path in ["/etc/apt/sources.list"] + sorted(
        glob.glob("/etc/apt/sources.list.d/*.list")):
    try:
        text = open(path).read()
    except OSError:
        continue
    for line in text.splitlines():
        line = re.sub(r"\[[^]]*\]", "", line.split("#")[0]).split()
        if len(line) >= 4 and line[0] == "deb" and line[2] in want:
            lines.append("deb %s %s %s" % (line[1], line[2], " ".join(line[3:])))
for path in sorted(glob.glob("/etc/apt/sources.list.d/*.sources")):
    for para in open(path).read().split("\n\n"):
        f = {}
        for line in para.splitlines():
            if line.startswith("#") or ":" not in line:
                continue
            k, v = line.split(":", 1)
            f[k.strip().lower()] = v.split()
        if "deb" not in f.get("types", []) or f.get("enabled", ["yes"]) == ["no"]:
            continue
        for uri in f.get("uris", []):
            for s in f.get("suites", []):
                if s in want:
                    lines.append("deb %s %s %s"
                                 % (uri, s, " ".join(f.get("components", ["main"]))))
print("\n".join(dict.fromkeys(lines)))
EOF
}
mirrors=${MIRROR:-$(host_mirrors)}
if [[ -z $mirrors ]]; then
    echo "package-check.sh: no $suite entry in /etc/apt/sources.list*; set MIRROR" >&2
    exit 1
fi

keep=${KEEP_CHROOT:-0}
if [[ -n ${CHROOT:-} ]]; then
    root=$(realpath -m "$CHROOT")
    keep=1
else
    root=$(mktemp -d /var/tmp/gridcoll-pkg-chroot.XXXXXX)
fi

mounted=()
# Nothing may be mounted below $root when it is removed or replaced.
mounts_below() {
    awk -v r="$root/" '{ gsub(/\\040/, " ", $2); if (index($2 "/", r) == 1) print $2 }' \
        /proc/mounts
}
cleanup() {
    local rc=$? m i pid
    # Processes left running inside the root (a relay of a failed job).
    for pid in /proc/[0-9]*; do
        if [[ $(readlink "$pid/root" 2>/dev/null) == "$root" ]]; then
            kill -KILL "${pid#/proc/}" 2>/dev/null || true
        fi
    done
    for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do
        m=${mounted[i]}
        umount "$m" 2>/dev/null || umount -l "$m" || echo "cannot unmount $m" >&2
    done
    rm -rf "$debs"
    if ((keep == 0)); then
        if [[ -z $(mounts_below) ]]; then
            rm -rf --one-file-system "$root"
        else
            echo "package-check.sh: still mounted below $root, not removed" >&2
        fi
    fi
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

if [[ -d $root && -n $(ls -A "$root") ]]; then
    if [[ ! -e $root/$marker ]]; then
        echo "package-check.sh: $root is not empty and not from an earlier run" >&2
        exit 1
    fi
    if [[ -n $(mounts_below) ]]; then
        echo "package-check.sh: something is mounted below $root:" >&2
        mounts_below >&2
        exit 1
    fi
    rm -rf --one-file-system "$root"
fi
mkdir -p "$root"

step "mmdebstrap $suite (minbase) into $root"
printf '   %s\n' "$mirrors"
mapfile -t mirror_args <<<"$mirrors"
mmdebstrap --quiet --mode=root --variant=minbase --format=directory \
    "$suite" "$root" "${mirror_args[@]}"
touch "$root/$marker"
du -sh "$root" | cut -f1
step_done

# ---- 3. install the packages ---------------------------------------------
for m in proc sys dev/shm; do
    case $m in
    proc) mount -t proc proc "$root/proc" ;;
    sys) mount -t sysfs -o ro sysfs "$root/sys" ;;
    dev/shm) mkdir -p "$root/dev/shm" && mount -t tmpfs -o mode=1777 shm "$root/dev/shm" ;;
    esac
    mounted+=("$root/$m")
done
cp -L /etc/resolv.conf "$root/etc/resolv.conf"
# The root shares this machine's host name and network: hydra's proxies
# (machine-file mode) connect back to mpiexec by that name, which a fresh
# root cannot resolve (mmdebstrap writes no /etc/hosts entry for it).
cp -L /etc/hosts "$root/etc/hosts"
mkdir -p "$root/tmp/debs"
cp "$debs"/*.deb "$root/tmp/debs/"
# gridrun's stand-in for ssh in its tests (not in a package): runs the
# command on this machine whatever the host name.
install -m 0755 "$repo/tests/integration/gridrun/fake-rsh.sh" "$root/tmp/fake-rsh.sh"

in_root() { chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin \
    HOME=/root LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive "$@"; }

step "apt-get install ./gridcoll-relay_*.deb ./gridcoll_*.deb"
in_root apt-get update -q >/dev/null
in_root bash -c 'cd /tmp/debs && apt-get install -y -q ./gridcoll-relay_*.deb ./gridcoll_*.deb' \
    >"$root/tmp/apt-install.log" 2>&1 || {
    tail -50 "$root/tmp/apt-install.log"
    exit 1
}
grep -E -A3 '^(Setting up gridcoll|gridcoll-relay:)' "$root/tmp/apt-install.log" |
    grep -E '^(Setting up gridcoll|gridcoll-relay:|  )' || true
grep -E '^[0-9]+ upgraded, [0-9]+ newly installed' "$root/tmp/apt-install.log"
step_done

# ---- 4. smoke test -------------------------------------------------------
step "smoke test in the root"
cat >"$root/tmp/hello.c" <<'EOF'
#include <gridcoll.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    int rank, size, sites = 0, site = -1, len = 0, sum = 0;
    char name[GRIDCOLL_MAX_SITE_NAME + 1] = "";
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    GridColl_Comm_site_count(MPI_COMM_WORLD, &sites);
    GridColl_Comm_site_of(MPI_COMM_WORLD, rank, &site);
    GridColl_Site_name(site, name, &len);
    MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    printf("rank %d of %d site %s of %d sum %d\n", rank, size, name, sites,
           sum);
    MPI_Finalize();
    return 0;
}
EOF
cat >"$root/tmp/smoke.sh" <<'EOF'
set -euo pipefail
version=$1
fail() { echo "SMOKE FAIL: $*" >&2; exit 1; }
ok() { echo "ok: $*"; }

v=$(gridrelay --version)
[[ $v == "gridrelay $version" ]] || fail "gridrelay --version: '$v'"
ok "$v"

# What the package set up: the service user, /etc/gridcoll, the unit, not
# enabled (no configuration yet).
getent passwd gridrelay >/dev/null || fail "no user gridrelay"
getent group gridrelay >/dev/null || fail "no group gridrelay"
[[ $(getent passwd gridrelay | cut -d: -f7) == /usr/sbin/nologin ]] ||
    fail "gridrelay has a login shell"
[[ $(stat -c %a:%U:%G /etc/gridcoll) == 755:root:root ]] ||
    fail "/etc/gridcoll is $(stat -c %a:%U:%G /etc/gridcoll)"
[[ -f /lib/systemd/system/gridrelay.service ]] || fail "no unit"
[[ ! -e /etc/systemd/system/multi-user.target.wants/gridrelay.service ]] ||
    fail "the unit was enabled without a configuration"
ok "user gridrelay ($(id gridrelay)), /etc/gridcoll 0755, unit installed, not enabled"

# The example as installed: rejected (no certificates yet), every message
# file:line.
example=/usr/share/doc/gridcoll-relay/examples/gridrelay.conf
if out=$(gridrelay --check "$example" 2>&1); then
    fail "gridrelay --check accepts the example as is: $out"
fi
echo "$out" | sed 's/^/   /'
# (file: message for what is missing altogether)
bad=$(echo "$out" | grep -v "^$example\(:[0-9][0-9]*\)\{0,1\}: ." || true)
[[ -z $bad ]] || fail "--check lines not in the file:line: form: $bad"
ok "--check on the example: $(echo "$out" | grep -c "^$example:[0-9]") file:line errors"

# The example made valid: certificates from make-certs.sh, peers on
# loopback; readable by the service user, checked as that user (as the
# unit's ExecStartPre does).
conf=/etc/gridcoll/gridrelay.conf
cp "$example" "$conf"
site=$(sed -n 's/^[[:space:]]*site[[:space:]]*=[[:space:]]*"\([^"]*\)".*/\1/p' "$conf" | head -1)
[[ -n $site ]] || fail "no site = in the example"
bash /usr/share/doc/gridcoll-relay/examples/make-certs.sh /etc/gridcoll/tls "$site" >/dev/null
chgrp gridrelay /etc/gridcoll/tls "/etc/gridcoll/tls/$site.key"
chmod 0750 /etc/gridcoll/tls
chmod 0640 "/etc/gridcoll/tls/$site.key"
# A job's token (a configuration for one job, not a service).
if grep -q '^[[:space:]]*token_file' "$conf"; then
    head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >/etc/gridcoll/job.token
    chgrp gridrelay /etc/gridcoll/job.token
    chmod 0640 /etc/gridcoll/job.token
fi
s='[[:space:]]*'
sed -i -e "s#^\($s\(tls\.\)\{0,1\}cert$s=$s\)\"[^\"]*\"#\1\"/etc/gridcoll/tls/$site.crt\"#" \
    -e "s#^\($s\(tls\.\)\{0,1\}key$s=$s\)\"[^\"]*\"#\1\"/etc/gridcoll/tls/$site.key\"#" \
    -e "s#^\($s\(tls\.\)\{0,1\}ca$s=$s\)\"[^\"]*\"#\1\"/etc/gridcoll/tls/ca.crt\"#" \
    -e "s#^\(${s}client_ca$s=$s\)\"[^\"]*\"#\1\"/etc/gridcoll/tls/ca.crt\"#" \
    -e "s#^\(${s}token_file$s=$s\)\"[^\"]*\"#\1\"/etc/gridcoll/job.token\"#" \
    -e "s#\(address$s=$s\)\"[^\"]*:\([0-9]*\)\"#\1\"127.0.0.1:\2\"#" "$conf"
# A congestion control this kernel lacks: the system default.
cc=$(sed -n 's/^[[:space:]]*congestion[[:space:]]*=[[:space:]]*"\([^"]*\)".*/\1/p' "$conf")
if [[ -n $cc ]] &&
    ! grep -qw "$cc" /proc/sys/net/ipv4/tcp_available_congestion_control; then
    sed -i "s#^\($s\(tcp\.\)\{0,1\}congestion$s=$s\)\"[^\"]*\"#\1\"\"#" "$conf"
fi
if ! out=$(runuser -u gridrelay -- gridrelay --check "$conf" 2>&1); then
    echo "$out" | sed 's/^/   /'
    fail "gridrelay --check (as gridrelay) on the example with certificates"
fi
ok "as gridrelay: $out"
rm -f "$conf"

# A user's program: mpicc with pkg-config, run with the installed gridrun
# (local mode: two sites, relays started next to gridrun).
useradd -m smoke 2>/dev/null || true
cp /tmp/hello.c ~smoke/hello.c
chown smoke: ~smoke/hello.c
runuser -u smoke -- bash -c 'cd && mpicc -o hello hello.c $(pkg-config --cflags --libs gridcoll)'
lib=$(ldd ~smoke/hello | sed -n 's/^[[:space:]]*libgridcoll\.so => \([^ ]*\) .*/\1/p')
[[ -n $lib && $(readlink -f "$lib") == $(readlink -f /usr/lib/libgridcoll.so) ]] ||
    fail "hello does not load /usr/lib/libgridcoll.so: $(ldd ~smoke/hello)"
ok "mpicc \$(pkg-config --cflags --libs gridcoll): $(pkg-config --cflags --libs gridcoll)"
# check_ranks OUTPUT: 4 lines "rank R of 4 site S of 2 sum 6", 2 sites;
# prints the site of each rank in rank order.
check_ranks() {
    local ranks line r sites=""
    ranks=$(echo "$1" | grep '^rank ' | sort)
    for r in 0 1 2 3; do
        line=$(echo "$ranks" | grep "^rank $r of 4 site [^ ]* of 2 sum 6$") ||
            fail "no line for rank $r"
        line=${line#* site }
        sites+="${line%% *} "
    done
    [[ $(echo "$ranks" | wc -l) == 4 ]] || fail "not 4 rank lines"
    [[ $(tr ' ' '\n' <<<"${sites% }" | sort -u | wc -l) == 2 ]] ||
        fail "the 4 ranks are not on 2 sites: $ranks"
    echo "${sites% }"
}
rc=0
out=$(runuser -u smoke -- bash -c 'cd && gridrun --timeout 60 --sites 2 -n 4 -- ./hello' 2>&1) ||
    rc=$?
echo "$out" | sed 's/^/   /'
((rc == 0)) || fail "gridrun --sites 2 -n 4: exit $rc"
check_ranks "$out" >/dev/null
ok "gridrun --sites 2 -n 4: 4 ranks on 2 sites, allreduce 6"

# ---- service mode ----------------------------------------------------------
# Two gridrelay services, sites alpha and beta, on loopback: each run as the
# unit runs it (user gridrelay, UMask=0077, sockets in /run/gridrelay, the
# configuration checked first), with WAN certificates from make-certs.sh
# and a CA for the site's users.  Then the same program as a two-site job
# of user smoke registered with both by gridrun (service= in the machine
# file, a local stand-in for ssh).
svc_pids=()
stop_services() { # on any exit: nothing may stay running in the root
    local p i
    ((${#svc_pids[@]} > 0)) || return 0
    for p in "${svc_pids[@]}"; do
        kill -TERM "$p" 2>/dev/null || true
    done
    for p in "${svc_pids[@]}"; do # the relay's drain takes at most 10 s
        for ((i = 0; i < 120; i++)); do
            kill -0 "$p" 2>/dev/null || break
            sleep 0.1
        done
        kill -KILL "$p" 2>/dev/null || true
    done
    svc_pids=()
}
trap stop_services EXIT

# Free TCP ports on 127.0.0.1 (the root shares the host's network): none
# listed in /proc/net/tcp*.
used=" "
while read -r _ addr _; do
    [[ $addr == *:* ]] && used+="$((16#${addr##*:})) "
done < <(cat /proc/net/tcp /proc/net/tcp6 2>/dev/null)
ports=()
while ((${#ports[@]} < 4)); do
    p=$((20000 + RANDOM % 30000))
    [[ $used == *" $p "* ]] || { used+="$p "; ports+=("$p"); }
done
declare -A wan_port=([alpha]=${ports[0]} [beta]=${ports[1]})
declare -A http_port=([alpha]=${ports[2]} [beta]=${ports[3]})

examples=/usr/share/doc/gridcoll-relay/examples
bash "$examples/make-certs.sh" /etc/gridcoll/wan alpha beta >/dev/null
bash "$examples/make-certs.sh" /etc/gridcoll/users smoke >/dev/null
for site in alpha beta; do
    chgrp gridrelay "/etc/gridcoll/wan/$site.key"
    chmod 0640 "/etc/gridcoll/wan/$site.key"
done
# The user's client certificate, in their home.
install -d -o smoke -g smoke -m 0700 ~smoke/.gridcoll
install -o smoke -g smoke -m 0600 /etc/gridcoll/users/smoke.crt \
    /etc/gridcoll/users/smoke.key ~smoke/.gridcoll/
rm /etc/gridcoll/users/smoke.key
# systemd's RuntimeDirectory= and LogsDirectory=.
install -d -o gridrelay -g gridrelay -m 0755 /run/gridrelay /var/log/gridrelay

for site in alpha beta; do
    peer=$([[ $site == alpha ]] && echo beta || echo alpha)
    cat >"/etc/gridcoll/$site.conf" <<CONF
site = "$site";
local = { unix = "/run/gridrelay/$site-ranks.sock"; };
service = {
  control = "unix:/run/gridrelay/$site-control.sock";
  client_ca = "/etc/gridcoll/users/ca.crt";
  lease = 30;
};
wan = { listen = "127.0.0.1:${wan_port[$site]}"; streams = 2; };
tls = {
  cert = "/etc/gridcoll/wan/$site.crt";
  key = "/etc/gridcoll/wan/$site.key";
  ca = "/etc/gridcoll/wan/ca.crt";
};
http = { listen = "127.0.0.1:${http_port[$site]}"; };
log = { file = "/var/log/gridrelay/$site.log"; };
peers = ( { name = "$peer"; address = "127.0.0.1:${wan_port[$peer]}"; } );
CONF
    # ExecStartPre, then ExecStart: setpriv execs the relay in place, so
    # $! is the relay's PID and `wait` gets its exit status.
    if ! out=$(setpriv --reuid=gridrelay --regid=gridrelay --init-groups \
        gridrelay --check "/etc/gridcoll/$site.conf" 2>&1); then
        echo "$out" | sed 's/^/   /'
        fail "gridrelay --check /etc/gridcoll/$site.conf"
    fi
    (umask 0077 && exec setpriv --reuid=gridrelay --regid=gridrelay \
        --init-groups --no-new-privs gridrelay -c "/etc/gridcoll/$site.conf") \
        >"/var/log/gridrelay/$site.stderr" 2>&1 &
    svc_pids+=($!)
done
declare -A pid=([alpha]=${svc_pids[0]} [beta]=${svc_pids[1]})

# GET /status on http.listen with bash's /dev/tcp (no curl in the root).
status() {
    local reply
    reply=$( (exec 3<>"/dev/tcp/127.0.0.1/${http_port[$1]}" &&
        printf 'GET /status HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n' >&3 &&
        timeout 5 cat <&3) 2>/dev/null) || return 1
    [[ $reply == "HTTP/1."?" 200 "* ]] || return 1
    printf '%s\n' "${reply#*$'\r\n\r\n'}"
}
svc_log() {
    cat "/var/log/gridrelay/$1.stderr" "/var/log/gridrelay/$1.log" 2>/dev/null
}
svc_fail() {
    local site
    for site in alpha beta; do
        echo "   --- $site's log:"
        svc_log "$site" | tail -20 | sed 's/^/   /'
    done
    fail "$*"
}
link_up() { # $1 = site, $2 = its peer: the link up, both streams
    status "$1" | grep -q "\"links\":\[{\"peer\":\"$2\",\"state\":\"up\",\"role\":\"[a-z]*\",\"streams_up\":2,\"streams\":2,"
}
t=$SECONDS
until link_up alpha beta && link_up beta alpha; do
    for site in alpha beta; do
        kill -0 "${pid[$site]}" 2>/dev/null || svc_fail "service $site exited"
    done
    ((SECONDS - t < 20)) || svc_fail "links not up after 20 s"
    sleep 0.2
done
for site in alpha beta; do
    st=$(status "$site") || svc_fail "$site's /status"
    [[ $st == *'"mode":"service"'* && $st == *'"jobs":[]'* ]] ||
        svc_fail "$site's /status: $st"
    [[ $(stat -c %U "/proc/${pid[$site]}") == gridrelay ]] ||
        svc_fail "service $site does not run as gridrelay"
    for sock in ranks control; do
        [[ $(stat -c %a:%U "/run/gridrelay/$site-$sock.sock") == 666:gridrelay ]] ||
            svc_fail "/run/gridrelay/$site-$sock.sock is $(stat -c %a:%U "/run/gridrelay/$site-$sock.sock")"
    done
done
ok "services alpha (PID ${pid[alpha]}) and beta (PID ${pid[beta]}) as gridrelay, link up in $((SECONDS - t)) s (2 streams each way), sockets 0666"

cat >~smoke/job.machines <<MF
node-a cluster=alpha slots=2
gw-a   cluster=alpha relay service=unix:/run/gridrelay/alpha-control.sock
node-b cluster=beta slots=2
gw-b   cluster=beta relay service=unix:/run/gridrelay/beta-control.sock
MF
chown smoke: ~smoke/job.machines
rc=0
out=$(runuser -u smoke -- bash -c 'cd && gridrun --timeout 60 -f job.machines -n 4 \
    --rsh /tmp/fake-rsh.sh --service-cert .gridcoll/smoke.crt \
    --service-key .gridcoll/smoke.key --service-ca /etc/gridcoll/wan/ca.crt \
    -- ./hello' 2>&1) || rc=$?
echo "$out" | sed 's/^/   /'
((rc == 0)) || svc_fail "gridrun -f job.machines (services): exit $rc"
sites=$(check_ranks "$out")
[[ $sites == "alpha alpha beta beta" ]] ||
    fail "ranks 0..3 on sites $sites, want alpha alpha beta beta"
ok "gridrun -f job.machines (services): 4 ranks, 0-1 at alpha, 2-3 at beta, allreduce 6"

# Both services served the job of smoke and had it removed by gridrun.
job=$(svc_log alpha | sed -n 's/.*job \([0-9]*\) (smoke): registered.*/\1/p' | head -1)
[[ -n $job ]] || svc_fail "alpha's log has no job registered by smoke"
for site in alpha beta; do
    log=$(svc_log "$site")
    # gridrun removes the job from alpha first: beta may have it ended by
    # alpha's withdrawal before gridrun's DELETE reaches it.
    for want in "job $job (smoke): registered, ranks " \
        "job $job (smoke): ready" \
        "job $job (smoke): ended: \(ended at site alpha: \)\{0,1\}removed by its launcher (smoke)$"; do
        grep -q "$want" <<<"$log" || svc_fail "$site's log lacks '$want'"
    done
    # Its ranks reached the service on local.unix (as smoke: mode 0666).
    for r in $([[ $site == alpha ]] && echo 0 1 || echo 2 3); do
        grep -qF "job $job rank $r connected from local-unix" <<<"$log" ||
            svc_fail "$site's log: rank $r of job $job never connected"
    done
    st=$(status "$site") || svc_fail "$site's /status after the job"
    [[ $st == *'"jobs":[]'* && $st == *'"state":"up"'* ]] ||
        svc_fail "$site after the job: $st"
done
ok "job $job registered by smoke, ready, its ranks connected and removed by its launcher (smoke) at alpha and beta; links still up"
for site in alpha beta; do
    svc_log "$site" | grep -F "job $job " | sed 's/^[^ ]* //; s/^/   /'
done

# SIGTERM: each service drains and exits with status 0.
for site in alpha beta; do
    kill -TERM "${pid[$site]}"
done
for site in alpha beta; do
    rc=0
    wait "${pid[$site]}" || rc=$?
    ((rc == 0)) || svc_fail "service $site exited with $rc after SIGTERM"
done
svc_pids=()
ok "SIGTERM: services alpha and beta exited with status 0"
EOF
in_root bash /tmp/smoke.sh "$version"
left=()
for pid in /proc/[0-9]*; do
    [[ $(readlink "$pid/root" 2>/dev/null) == "$root" ]] && left+=("${pid#/proc/}")
done
if ((${#left[@]} > 0)); then
    echo "SMOKE FAIL: still running in the root:" >&2
    ps -o pid,user,args -p "${left[*]}" >&2 || true
    exit 1
fi
echo "ok: nothing left running in the root"
step_done

# shellcheck disable=SC2016 # expanded in the root
printf '\npackage-check: OK in %ds (gridcoll %s, %s)\n' $((SECONDS - t0)) \
    "$version" "$(in_root sh -c '. /etc/os-release && echo "$PRETTY_NAME"')"
