#!/usr/bin/env bash
# check-ptx.sh PTXAS DIR ARCH
# Fails unless DIR holds PTX files and every one assembles with
# `ptxas -arch=ARCH` (the check CI can make without a GPU).
set -euo pipefail
ptxas=$1 dir=$2 arch=$3
shopt -s nullglob
files=("$dir"/*.ptx)
if [ ${#files[@]} -eq 0 ]; then
  echo "check-ptx: no .ptx files in $dir" >&2
  exit 1
fi
for f in "${files[@]}"; do
  "$ptxas" -arch="$arch" "$f" -o /dev/null
done
echo "${#files[@]} kernel modules assemble for $arch"
