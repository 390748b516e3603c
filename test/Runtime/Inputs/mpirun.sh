#!/usr/bin/env bash
# Usage: mpirun.sh LIMIT NP CMD ARGS...
# Runs CMD on NP ranks under mpirun, killed after LIMIT seconds so that a
# hang fails the test instead of stalling it (exit 124 and a message), and
# exits with mpirun's own exit code otherwise. It prints the wall time to
# stderr, so a failing test's log shows how long the job took.
limit=$1
np=$2
shift 2
start=$(date +%s%N)
timeout -k 5 "$limit" mpirun --allow-run-as-root --oversubscribe -np "$np" "$@"
rc=$?
ms=$((($(date +%s%N) - start) / 1000000))
if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 -a "$ms" -ge $((limit * 1000)) ]; then
  echo "mpirun.sh: timed out after $limit s: $*" >&2
  exit 124
fi
echo "mpirun.sh: exit $rc after $ms ms" >&2
exit "$rc"
