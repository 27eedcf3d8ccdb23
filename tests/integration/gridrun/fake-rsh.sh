#!/bin/sh
# Stand-in for ssh in gridrun's tests: "fake-rsh.sh [-FLAG...] HOST CMD..."
# runs CMD on this machine, whatever HOST is, as ssh would run it on HOST.
# Leading ssh options are skipped (hydra's ssh launcher puts -x before the
# host): -o, -l, -p, -i and -F with their argument, other flags alone.
# The command sees the host as $GRIDRUN_TEST_HOST.
while [ $# -gt 0 ]; do
    case $1 in
    -o | -l | -p | -i | -F) shift 2 ;;
    -*) shift ;;
    *) break ;;
    esac
done
host=$1
shift
GRIDRUN_TEST_HOST=$host exec sh -c "$*"
