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
#    user with `gridrun --sites 2 -n 4`.
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
mkdir -p "$root/tmp/debs"
cp "$debs"/*.deb "$root/tmp/debs/"

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
rc=0
out=$(runuser -u smoke -- bash -c 'cd && gridrun --timeout 60 --sites 2 -n 4 -- ./hello' 2>&1) ||
    rc=$?
echo "$out" | sed 's/^/   /'
((rc == 0)) || fail "gridrun --sites 2 -n 4: exit $rc"
ranks=$(echo "$out" | grep '^rank ' | sort)
want=""
for r in 0 1 2 3; do
    line=$(echo "$ranks" | grep "^rank $r of 4 site [^ ]* of 2 sum 6$") ||
        fail "no line for rank $r"
    want+="${line#* site }"$'\n'
done
[[ $(echo "$ranks" | wc -l) == 4 ]] || fail "not 4 rank lines"
[[ $(echo "$want" | sed '/^$/d' | sort -u | wc -l) == 2 ]] ||
    fail "the 4 ranks are not on 2 sites: $ranks"
ok "gridrun --sites 2 -n 4: 4 ranks on 2 sites, allreduce 6"
EOF
in_root bash /tmp/smoke.sh "$version"
step_done

# shellcheck disable=SC2016 # expanded in the root
printf '\npackage-check: OK in %ds (gridcoll %s, %s)\n' $((SECONDS - t0)) \
    "$version" "$(in_root sh -c '. /etc/os-release && echo "$PRETTY_NAME"')"
