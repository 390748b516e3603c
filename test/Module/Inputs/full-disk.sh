#!/usr/bin/env bash
# Usage: full-disk.sh DIR SEED CMD ARGS...
# Runs CMD with DIR a small tmpfs that is full: in a mount namespace of its
# own (unshare; as a user namespace's root where not root), DIR gets a
# 1 MiB tmpfs holding a copy of SEED (DIR/previous) and a filler file that
# takes every free byte, so CMD's first write there fails with ENOSPC. Then
# prints CMD's exit code, whether DIR/previous is still SEED, and what DIR
# holds, for the test to check.
dir=$1 seed=$2
shift 2
mkdir -p "$dir"
flags=-m
[ "$(id -u)" -eq 0 ] || flags=-rm
exec unshare $flags bash -c '
  dir=$1 seed=$2; shift 2
  mount -t tmpfs -o size=1m tmpfs "$dir" || exit 99
  cp "$seed" "$dir/previous"
  dd if=/dev/zero of="$dir/filler" bs=4k 2>/dev/null
  "$@"
  echo "exit code $?"
  cmp -s "$seed" "$dir/previous" && echo "previous file intact" || echo "previous file changed"
  ls "$dir"
' full-disk "$dir" "$seed" "$@"
