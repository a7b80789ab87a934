#!/usr/bin/env bash
# A real multi-node cluster on one machine: K hosts as Linux network namespaces joined by veth
# pairs to a bridge, optionally shaped with tc tbf, and MPI jobs launched across them.
#
#   cluster.sh up K [--rate RATE]    create hosts h1..hK (RATE e.g. 1gbit, shapes both veth ends)
#   cluster.sh run K [--mpi mpich|openmpi] [--ppn N] -- PROGRAM [ARGS...]
#                                    run PROGRAM with K*N ranks, N per host, over TCP between hosts
#   cluster.sh down                  remove every namespace, link and directory `up` made
#   cluster.sh with K [--rate R] [--mpi M] [--ppn N] -- PROGRAM [ARGS...]
#                                    up, run, down (down also on failure or interrupt)
#
# Each host has its own node-local directories (LARDER_SHM_DIR, LARDER_DIR) under
# /dev/shm/<prefix>-h<i> and /tmp/<prefix>-h<i>. UCX is told to use TCP over the host's veth
# (UCX_TLS=tcp,self, UCX_NET_DEVICES), so bytes between hosts really cross the bridge.
# Names carry a prefix (LARDER_NETNS_PREFIX, default lnc; at most 5 characters) and the subnet is
# LARDER_NETNS_SUBNET (default 10.77.0), so several clusters can coexist. Needs root.
set -euo pipefail

PREFIX=${LARDER_NETNS_PREFIX:-lnc}
SUBNET=${LARDER_NETNS_SUBNET:-10.77.0}
BRIDGE=${PREFIX}br0
IN_NS_DEV=larder0
NS_UCX_TLS=${LARDER_NETNS_UCX_TLS:-tcp,self}
STATE_DIR=/run/larder-netns
STATE=$STATE_DIR/$PREFIX
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

die() { echo "cluster.sh: $*" >&2; exit 1; }
[[ ${#PREFIX} -le 5 ]] || die "LARDER_NETNS_PREFIX='$PREFIX' is too long: at most 5 characters"
[[ $(id -u) -eq 0 ]] || die "needs root (network namespaces)"
command -v ip >/dev/null || die "needs ip (iproute2)"

host_ns() { echo "${PREFIX}-h$1"; }
host_ip() { echo "${SUBNET}.$((10 + $1))"; }

cmd_up() {
  local k=$1 rate=${2:-}
  [[ $k =~ ^[0-9]+$ && $k -ge 1 && $k -le 200 ]] || die "K='$k' is not valid: a host count from 1 to 200"
  [[ -e $STATE ]] && die "a cluster with prefix $PREFIX exists; run 'cluster.sh down' first"
  mkdir -p "$STATE_DIR"
  echo "$k" >"$STATE"
  ip link add "$BRIDGE" type bridge
  ip addr add "${SUBNET}.1/24" dev "$BRIDGE"
  ip link set "$BRIDGE" up
  local i
  for ((i = 1; i <= k; i++)); do
    local ns peer
    ns=$(host_ns "$i")
    peer=${PREFIX}h$i
    ip netns add "$ns"
    ip link add "$peer" type veth peer name "$IN_NS_DEV" netns "$ns"
    ip link set "$peer" master "$BRIDGE" up
    ip -n "$ns" addr add "$(host_ip "$i")/24" dev "$IN_NS_DEV"
    ip -n "$ns" link set "$IN_NS_DEV" up
    ip -n "$ns" link set lo up
    ip -n "$ns" route add default via "${SUBNET}.1"
    if [[ -n $rate ]]; then
      tc qdisc add dev "$peer" root tbf rate "$rate" burst 256kb latency 50ms
      ip netns exec "$ns" tc qdisc add dev "$IN_NS_DEV" root tbf rate "$rate" burst 256kb latency 50ms
    fi
    mkdir -p "/dev/shm/${PREFIX}-h$i" "/tmp/${PREFIX}-h$i"
    chmod 700 "/dev/shm/${PREFIX}-h$i" "/tmp/${PREFIX}-h$i"
  done
}

cmd_down() {
  [[ -e $STATE ]] || return 0
  local k i
  k=$(cat "$STATE")
  for ((i = 1; i <= k; i++)); do
    local ns
    ns=$(host_ns "$i")
    # Anything still running in the namespace goes first.
    if ip netns pids "$ns" >/dev/null 2>&1; then
      ip netns pids "$ns" 2>/dev/null | xargs -r kill -9 2>/dev/null || true
    fi
    ip link del "${PREFIX}h$i" 2>/dev/null || true
    ip netns del "$ns" 2>/dev/null || true
    rm -rf "/dev/shm/${PREFIX}-h$i" "/tmp/${PREFIX}-h$i"
  done
  ip link del "$BRIDGE" 2>/dev/null || true
  rm -f "$STATE" "$STATE_DIR/${PREFIX}.launcher" "$STATE_DIR/${PREFIX}.hosts"
}

# The launcher MPI runs instead of ssh: skip ssh options, find the namespace owning the host
# address, and run the command there with that host's node-local directories.
write_launcher() {
  local launcher=$STATE_DIR/${PREFIX}.launcher
  cat >"$launcher" <<LAUNCH
#!/usr/bin/env bash
while [[ \$# -gt 0 && \$1 == -* ]]; do
  case \$1 in -p|-l|-o|-i|-F) shift 2 ;; *) shift ;; esac
done
host=\$1; shift
i=\${host##*.}; i=\$((i - 10))
ns=${PREFIX}-h\$i
exec ip netns exec "\$ns" env LARDER_SHM_DIR=/dev/shm/${PREFIX}-h\$i LARDER_DIR=/tmp/${PREFIX}-h\$i \\
  UCX_TLS=${NS_UCX_TLS} UCX_NET_DEVICES=${IN_NS_DEV} sh -c "\$*"
LAUNCH
  chmod +x "$launcher"
  echo "$launcher"
}

cmd_run() {
  local k=$1 mpi=$2 ppn=$3
  shift 3
  [[ -e $STATE ]] || die "no cluster with prefix $PREFIX: run 'cluster.sh up K' first"
  [[ $k -le $(cat "$STATE") ]] || die "the cluster has only $(cat "$STATE") hosts"
  local launcher hosts=$STATE_DIR/${PREFIX}.hosts i
  launcher=$(write_launcher)
  : >"$hosts"
  for ((i = 1; i <= k; i++)); do echo "$(host_ip "$i"):$ppn" >>"$hosts"; done
  local n=$((k * ppn))
  case $mpi in
    mpich)
      UCX_TLS=$NS_UCX_TLS UCX_NET_DEVICES=$IN_NS_DEV \
        mpiexec.mpich -launcher ssh -launcher-exec "$launcher" -iface "$BRIDGE" -f "$hosts" -n "$n" "$@" ;;
    openmpi)
      local ompi_hosts=${hosts}.ompi
      sed 's/:/ slots=/' "$hosts" >"$ompi_hosts"
      OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
        mpiexec.openmpi --mca plm_rsh_agent "$launcher" --mca oob_tcp_if_include "${SUBNET}.0/24" \
        --mca btl_tcp_if_include "${SUBNET}.0/24" --mca osc ucx --mca pml ucx \
        -x UCX_TLS=$NS_UCX_TLS -x UCX_NET_DEVICES=$IN_NS_DEV --hostfile "$ompi_hosts" -n "$n" "$@" ;;
    *) die "--mpi '$mpi' is not valid: mpich or openmpi" ;;
  esac
}

sub=${1:-}
shift || true
case $sub in
  up)
    k=${1:-}; shift || true; rate=""
    [[ ${1:-} == --rate ]] && { rate=$2; shift 2; }
    cmd_up "$k" "$rate" ;;
  down) cmd_down ;;
  run | with)
    k=${1:-}; shift || true; rate="" mpi=mpich ppn=1
    while [[ $# -gt 0 && $1 != -- ]]; do
      case $1 in
        --rate) rate=$2; shift 2 ;;
        --mpi) mpi=$2; shift 2 ;;
        --ppn) ppn=$2; shift 2 ;;
        *) die "unknown option '$1'" ;;
      esac
    done
    [[ ${1:-} == -- ]] || die "usage: cluster.sh $sub K [options] -- PROGRAM [ARGS...]"
    shift
    if [[ $sub == with ]]; then
      trap cmd_down EXIT INT TERM
      cmd_up "$k" "$rate"
    fi
    cmd_run "$k" "$mpi" "$ppn" "$@" ;;
  *) die "usage: cluster.sh up K [--rate R] | run K [--mpi M] [--ppn N] -- PROG... | with ... | down" ;;
esac
