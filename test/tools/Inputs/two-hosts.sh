#!/usr/bin/env bash
# Usage: two-hosts.sh DIR COMMAND...
# Runs COMMAND on host A of a two-host cluster made on this machine: hosts
# A and B are network namespaces named after the hosts (spmdh<pid>a and
# spmdh<pid>b), each with its loopback up, joined by a veth pair on
# 10.213.0.0/24. DIR/hosts is their hostfile, 2 slots each. OpenMPI
# reaches B through netns-rsh.sh (plm_rsh_agent), and the ranks talk over
# TCP on the veth only: btl tcp,self, not vader, which the /dev/shm the
# namespaces share would carry from one host to the other. COMMAND is
# killed after 90 s; the namespaces are removed however it ends. Exit:
# COMMAND's.
dir=$1
shift
here=$(cd "$(dirname "$0")" && pwd)
a=spmdh$$a
b=spmdh$$b
cleanup() {
  ip netns del "$a" 2>/dev/null
  ip netns del "$b" 2>/dev/null
}
trap cleanup EXIT
trap 'exit 130' INT TERM
set -e
ip netns add "$a"
ip netns add "$b"
ip link add "sv$$a" type veth peer name "sv$$b"
ip link set "sv$$a" netns "$a"
ip link set "sv$$b" netns "$b"
ip -n "$a" addr add 10.213.0.1/24 dev "sv$$a"
ip -n "$b" addr add 10.213.0.2/24 dev "sv$$b"
for host in "$a" "$b"; do
  ip -n "$host" link set lo up
  ip -n "$host" link set "sv$$${host: -1}" up
done
printf '%s slots=2\n%s slots=2\n' "$a" "$b" > "$dir/hosts"
set +e
export OMPI_MCA_plm_rsh_agent="$here/netns-rsh.sh"
export OMPI_MCA_btl=tcp,self
export OMPI_MCA_btl_tcp_if_include=10.213.0.0/24
export OMPI_MCA_oob_tcp_if_include=10.213.0.0/24
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# Host B's processes start in a bare environment (netns-rsh.sh): mpirun
# forwards the OMPI_MCA_ settings, and these where they are set.
forward=()
for name in SPMDC_CACHE_DIR OPENBLAS_CORETYPE OPENBLAS_L2_SIZE ASAN_OPTIONS \
  LSAN_OPTIONS UBSAN_OPTIONS; do
  [ -n "${!name+set}" ] && forward+=("$name")
done
export OMPI_MCA_mca_base_env_list="$(IFS=';' && echo "${forward[*]}")"
# In the background, so that a signal ends it and the cleanup runs at once
# (bash runs a trap only once the command in the foreground has ended).
timeout -k 5 90 ip netns exec "$a" unshare --uts \
  sh -c 'hostname "$0" && exec "$@"' "$a" "$@" <&0 &
command=$!
trap 'kill -TERM "$command" 2>/dev/null; wait "$command"; exit 130' INT TERM
wait "$command"
