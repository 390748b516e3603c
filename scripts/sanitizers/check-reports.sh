#!/usr/bin/env bash
# Fails if the sanitizer build's tests left any report in DIR (the
# sanitizers write them there: log_path in SPMDC_SANITIZER_ENV), printing
# the start of each.
dir=$1
shopt -s nullglob
reports=("$dir"/*)
[ ${#reports[@]} -eq 0 ] && { echo "no sanitizer reports in $dir"; exit 0; }
for f in "${reports[@]}"; do
  echo "== $f"
  head -60 "$f"
done
echo "${#reports[@]} sanitizer report(s) in $dir" >&2
exit 1
