#!/usr/bin/env bash
# Make a test CA and one certificate per site for gridrelay's WAN TLS.
#
# usage: make-certs.sh [OUTDIR [SITE...]]
#   OUTDIR  where to write (default: out/ next to this script)
#   SITE    site names (default: alpha beta)
#
# Writes OUTDIR/ca.key, OUTDIR/ca.crt (made only if missing) and, per site,
# OUTDIR/SITE.key (EC P-256, mode 600) and OUTDIR/SITE.crt signed by the CA
# with CN=SITE, SAN DNS:SITE, DNS:localhost, IP:127.0.0.1 and extended key
# usage serverAuth + clientAuth: every relay both dials and accepts, and
# gridrelay matches the peer's certificate against its site name.
#
# Idempotent: a site whose key and certificate exist, match each other and
# verify against the current CA is left alone.  These are test credentials;
# real gateways use certificates from the site's own CA.
set -euo pipefail

script_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

if [[ ${1:-} == -h || ${1:-} == --help ]]; then
    sed -n '2,16p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
    exit 0
fi

out_dir=${1:-$script_dir/out}
if (($# > 1)); then
    sites=("${@:2}")
else
    sites=(alpha beta)
fi

command -v openssl >/dev/null || {
    echo "make-certs.sh: openssl not found (apt-get install openssl)" >&2
    exit 1
}

for site in "${sites[@]}"; do
    # The name goes into a DNS SAN and a file name: keep it to host-name
    # characters so neither can be subverted.
    if [[ ! $site =~ ^[A-Za-z0-9]([A-Za-z0-9.-]{0,61}[A-Za-z0-9])?$ ]]; then
        echo "make-certs.sh: bad site name '$site' (letters, digits, '.', '-')" >&2
        exit 1
    fi
done

mkdir -p "$out_dir"
out_dir=$(cd "$out_dir" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Extensions come from our own file so the result does not depend on the
# system openssl.cnf.
write_config() { # $1 = site (empty for the CA)
    cat >"$work/openssl.cnf" <<EOF
[req]
distinguished_name = dn
prompt = no

[dn]
CN = ${1:-GridColl test CA}

[v3_ca]
basicConstraints = critical, CA:TRUE, pathlen:0
keyUsage = critical, keyCertSign, cRLSign
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid:always

[v3_site]
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature
extendedKeyUsage = serverAuth, clientAuth
subjectAltName = DNS:${1:-invalid}, DNS:localhost, IP:127.0.0.1
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid, issuer
EOF
}

new_key() { # $1 = destination; written privately, then moved into place
    (umask 077 && openssl genpkey -algorithm EC \
        -pkeyopt ec_paramgen_curve:P-256 -out "$work/new.key" 2>/dev/null)
    chmod 600 "$work/new.key"
    mv "$work/new.key" "$1"
}

pubkey_of_cert() { openssl x509 -in "$1" -noout -pubkey 2>/dev/null; }
pubkey_of_key() { openssl pkey -in "$1" -pubout 2>/dev/null; }

site_is_current() { # $1 = site
    local key=$out_dir/$1.key crt=$out_dir/$1.crt
    [[ -f $key && -f $crt ]] || return 1
    openssl verify -CAfile "$out_dir/ca.crt" "$crt" >/dev/null 2>&1 || return 1
    [[ "$(pubkey_of_cert "$crt")" == "$(pubkey_of_key "$key")" ]] || return 1
    openssl x509 -in "$crt" -noout -ext subjectAltName 2>/dev/null |
        grep -q "DNS:$1\(,\|$\)"
}

if [[ ! -f $out_dir/ca.key || ! -f $out_dir/ca.crt ]]; then
    echo "make-certs.sh: creating test CA in $out_dir"
    write_config ""
    new_key "$out_dir/ca.key"
    openssl req -new -x509 -config "$work/openssl.cnf" -extensions v3_ca \
        -key "$out_dir/ca.key" -days 3650 -sha256 \
        -set_serial "0x$(openssl rand -hex 16)" -out "$work/ca.crt"
    mv "$work/ca.crt" "$out_dir/ca.crt"
    chmod 644 "$out_dir/ca.crt"
fi

for site in "${sites[@]}"; do
    if site_is_current "$site"; then
        echo "make-certs.sh: $site: certificate is current"
        continue
    fi
    echo "make-certs.sh: $site: creating key and certificate"
    write_config "$site"
    new_key "$out_dir/$site.key"
    openssl req -new -config "$work/openssl.cnf" -key "$out_dir/$site.key" \
        -out "$work/$site.csr"
    openssl x509 -req -in "$work/$site.csr" -CA "$out_dir/ca.crt" \
        -CAkey "$out_dir/ca.key" -set_serial "0x$(openssl rand -hex 16)" \
        -days 825 -sha256 -extfile "$work/openssl.cnf" -extensions v3_site \
        -out "$work/$site.crt" 2>/dev/null
    mv "$work/$site.crt" "$out_dir/$site.crt"
    chmod 644 "$out_dir/$site.crt"
    site_is_current "$site" || {
        echo "make-certs.sh: $site: the new certificate does not verify" >&2
        exit 1
    }
done
