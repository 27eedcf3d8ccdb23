# Sourced by bench/run-nbc.sh and bench/run-threads.sh: the options both
# take, the build's paths, and one bounded gridrun job whose CSV rows are
# appended behind a label and the load as the job started.  The caller
# sets bench (its name in messages) and usage (its options) first.
# shellcheck shell=sh

build=build old_lib= out=. runs=3

bench_usage() {
    echo "usage: $0 $usage" >&2
    exit 2
}

# bench_option OPTION VALUE: the options every run-*.sh takes (each with
# a value); 1 when OPTION is none of them.
bench_option() {
    case $1 in
    --build) build=$2 ;;
    --old-lib) old_lib=$2 ;;
    --out) out=$2 ;;
    --runs) runs=$2 ;;
    --only) what=$2 ;;
    *) return 1 ;;
    esac
}

# bench_setup PART: after the options; PART (of --only) compares with the
# older build, so it needs --old-lib.  Makes bin, new_lib and old_lib
# absolute (the jobs run elsewhere) and creates --out.
bench_setup() {
    case " $what " in *" $1 "*)
        [ -n "$old_lib" ] || { echo "$0: $1 needs --old-lib" >&2; exit 2; } ;;
    esac
    bin=$(cd "$build/bin" && pwd)
    new_lib=$(cd "$build/lib" && pwd)
    [ -z "$old_lib" ] || old_lib=$(cd "$old_lib" && pwd)
    mkdir -p "$out"
}

# bench_run LABEL LIMIT GRIDRUN-ARGS...: one gridrun job of at most LIMIT
# seconds (timeout(1) 30 s later, should gridrun itself hang), --no-model
# and --csv; its output in $tmp, its errors in $tmp.err (bench_append or
# the caller removes both), the 1-minute load average as it started in
# $load.  A failed job is reported and the run goes on.
bench_run() {
    label=$1 limit=$2
    shift 2
    load=$(cut -d' ' -f1 /proc/loadavg)
    tmp=$(mktemp)
    echo "$bench: $label $*" >&2
    if ! timeout $((limit + 30)) "$bin/gridrun" --timeout "$limit" \
        --no-model "$@" --csv >"$tmp" 2>"$tmp.err"; then
        echo "$bench: $label failed:" >&2
        tail -5 "$tmp.err" >&2
    fi
}

# bench_append CSV COLUMNS: bench_run's rows appended to CSV behind its
# LABEL (COLUMNS name its fields) and load1; the header once, from the
# bench's own.
bench_append() {
    header=$(head -1 "$tmp")
    if [ ! -s "$1" ] && [ -n "$header" ]; then
        echo "$2,load1,$header" >"$1"
    fi
    tail -n +2 "$tmp" | grep -v '^FAIL' | sed "s/^/$label,$load,/" >>"$1" ||
        true
    rm -f "$tmp" "$tmp.err"
}
