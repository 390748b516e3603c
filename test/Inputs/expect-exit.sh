#!/usr/bin/env bash
# Runs a command and fails unless it exits with the given code: the tests'
# way to tell "bad input, exit 1" from a crash or a usage error.
want=$1
shift
"$@"
got=$?
if [ "$got" -ne "$want" ]; then
  echo "expect-exit: '$*' exited with $got, expected $want" >&2
  exit 1
fi
