#!/bin/sh
# OpenMPI's rsh agent (plm_rsh_agent) for hosts that are network namespaces
# of this machine, named after the hosts (two-hosts.sh makes them). Called
# as ssh would be, `netns-rsh.sh [OPTIONS] HOST COMMAND...`, it runs COMMAND
# in HOST's namespace under HOST's own host name, in the bare environment
# of an ssh login (PATH and HOME): what the processes there get from the
# launcher's environment is only what mpirun forwards.
while [ $# -gt 0 ]; do
  case $1 in
  -[lpoiFJ]) shift 2 ;;
  -*) shift ;;
  *) break ;;
  esac
done
host=$1
shift
# The words are shell text for the remote shell, as ssh joins them.
exec env -i PATH="$PATH" HOME="$HOME" ip netns exec "$host" unshare --uts \
  sh -c 'hostname "$0" && exec sh -c "$1"' "$host" "$*"
