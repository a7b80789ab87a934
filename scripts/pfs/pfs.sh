#!/usr/bin/env bash
# pfs.sh: a shaped remote file system standing in for a parallel file system.
#
# Serves a directory over sshfs from another network namespace, through a veth pair shaped with
# tc tbf on both ends, and mounts it on this host (in the root mount namespace, so every process
# sees it). Reads of the mount cross a real network link at the chosen bandwidth, and sshfs keeps
# no data cache (no kernel_cache, direct_io): every read goes to the server, as on a busy PFS.
# --delay adds a one-way latency in both directions, so every request (a stat, an open, a
# directory listing, a small read) costs a round trip of twice the delay, as a parallel file
# system's metadata and small reads do: 0.25ms each way at 10gbit stands for a Lustre or GPFS
# client whose metadata request costs about 0.5 ms (published figures are 0.2-1 ms). The delay is
# added by delay_relay (beside this script, built with cc into the instance's state), ssh's
# ProxyCommand in the client's namespace: this kernel has no netem qdisc.
# noforget: a file keeps its inode number for the mount's life, as on a parallel file system's
# client. sftp carries no inode numbers, so sshfs numbers files itself, and without noforget it
# numbers them again once the kernel forgets them (drop_caches, memory pressure): a file's
# version (inode, size, times) would change between two job steps that never touched it.
#
#   pfs.sh up --export DIR --mount MNT --rate 200mbit [--delay 250us] [--client-netns NS]
#                           prints the id
#   pfs.sh down ID          removes what `up` created (mount, sshd, namespaces, keys)
#   pfs.sh run --export DIR --mount MNT --rate R [--delay D] -- CMD ARGS...
#                           up, CMD, down (also on failure)
#   pfs.sh cleanup          removes every instance left behind (state under /run/lbp-pfs)
#   pfs.sh status           lists the instances
#
# Needs root, iproute2, tc, sshd, sshfs. What `up` creates, all named lbp-pfs-<pid>:
#   network namespaces lbp-pfs-<pid>-srv (sshd) and -cli (the sshfs client; or --client-netns NS
#   to attach the client end to an existing namespace, e.g. a host of a multi-namespace job),
#   veth lbps<pid>/lbpc<pid> with 10.254.254.1/30 (server) and .2/30 (client), tbf on both ends,
#   sshd with fresh host and client keys and internal-sftp, and the sshfs mount. Its state
#   (keys, sshd config and pid, what to undo) lives in /run/lbp-pfs/<id>/.
# `up` undoes everything it did if any step fails. docs/larder-bench.md explains the setup.
set -euo pipefail

STATE_ROOT=/run/lbp-pfs
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SERVER_IP=10.254.254.1
CLIENT_IP=10.254.254.2
READY_TIMEOUT=20  # seconds to wait for sshd to listen

die() { echo "pfs.sh: $*" >&2; exit 1; }
log() { echo "pfs.sh: $*" >&2; }

usage() { sed -n '2,29p' "$0" | sed 's/^# \{0,1\}//'; }

need_root() { [[ $(id -u) -eq 0 ]] || die "needs root (network namespaces, tc, mounts)"; }

# ---- down: undo in reverse order, tolerating what is already gone ----
down() {
  local id=$1 dir=$STATE_ROOT/$1
  [[ -d $dir ]] || { log "no instance $id"; return 0; }
  if [[ -f $dir/mount ]]; then
    local mnt; mnt=$(<"$dir/mount")
    # /proc/mounts, not mountpoint(1): a mount whose served directory vanished fails stat.
    if awk -v m="$mnt" '$2 == m && $3 == "fuse.sshfs" {found = 1} END {exit !found}' /proc/mounts; then
      fusermount3 -u "$mnt" 2>/dev/null || fusermount3 -uz "$mnt" 2>/dev/null || umount -l "$mnt" ||
        log "cannot unmount $mnt"
    fi
    [[ -f $dir/mount_created ]] && rmdir "$mnt" 2>/dev/null || true
  fi
  if [[ -f $dir/sshd.pid ]]; then
    local pid; pid=$(<"$dir/sshd.pid")
    # Only our sshd: the pid must still be the sshd started with our config file.
    if [[ -r /proc/$pid/cmdline ]] && tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q -- "$dir/sshd_config"; then
      kill "$pid" 2>/dev/null || true
    fi
  fi
  if [[ -f $dir/client_netns_attached ]]; then
    ip netns exec "$(<"$dir/client_netns_attached")" ip link del "lbpc${id##*-}" 2>/dev/null || true
  fi
  ip netns del "$id-srv" 2>/dev/null || true
  ip netns del "$id-cli" 2>/dev/null || true
  [[ -f $dir/created_run_sshd ]] && rmdir /run/sshd 2>/dev/null || true
  rm -rf "$dir"
  rmdir "$STATE_ROOT" 2>/dev/null || true
  log "removed $id"
}

cleanup_all() {
  local d
  for d in "$STATE_ROOT"/lbp-pfs-*; do
    [[ -d $d ]] && down "$(basename "$d")"
  done
  # Namespaces whose state directory is gone (a killed `up`).
  local ns
  for ns in $(ip netns list | awk '{print $1}' | grep '^lbp-pfs-' || true); do
    ip netns del "$ns" && log "removed stray namespace $ns"
  done
  rmdir "$STATE_ROOT" 2>/dev/null || true
}

wait_for_sshd() {
  local ns=$1 deadline=$((SECONDS + READY_TIMEOUT))
  until ip netns exec "$ns" bash -c "exec 3<>/dev/tcp/$SERVER_IP/22" 2>/dev/null; do
    (( SECONDS < deadline )) || return 1
    sleep 0.1
  done
}

# ---- up ----
up() {
  local export_dir="" mnt="" rate="" delay="" client_ns=""
  while [[ $# -gt 0 ]]; do
    case $1 in
      --export) export_dir=$2; shift 2 ;;
      --mount) mnt=$2; shift 2 ;;
      --rate) rate=$2; shift 2 ;;
      --delay) delay=$2; shift 2 ;;
      --client-netns) client_ns=$2; shift 2 ;;
      *) die "up: unknown argument $1" ;;
    esac
  done
  [[ -n $export_dir && -n $mnt && -n $rate ]] || die "up needs --export DIR --mount MNT --rate RATE"
  [[ -d $export_dir ]] || die "export directory $export_dir does not exist"
  [[ $rate =~ ^[0-9]+([kmg]bit)?$ ]] || die "--rate $rate is not valid: e.g. 200mbit, 1gbit"
  local delay_us=0
  if [[ -n $delay ]]; then
    [[ $delay =~ ^[0-9]+(\.[0-9]+)?(us|ms)$ ]] ||
      die "--delay $delay is not valid: a one-way latency such as 250us or 0.25ms"
    delay_us=$(awk -v d="$delay" 'BEGIN { f = (d ~ /ms$/) ? 1000 : 1; sub(/(us|ms)$/, "", d);
                                          printf "%d", d * f + 0.5 }')
  fi
  export_dir=$(realpath "$export_dir")
  exec 3>&1 1>&2  # stdout carries only the id
  local id="lbp-pfs-$$" dir
  dir=$STATE_ROOT/$id
  mkdir -p "$dir"
  chmod 700 "$dir"
  trap 'log "setup failed; undoing"; down "$id"; exit 1' ERR
  set -E

  local srv="$id-srv" cli="$id-cli" vs="lbps$$" vc="lbpc$$"
  ip netns add "$srv"
  if [[ -n $client_ns ]]; then
    ip netns list | awk '{print $1}' | grep -qx "$client_ns" || { log "no namespace $client_ns"; false; }
    cli=$client_ns
    echo "$client_ns" >"$dir/client_netns_attached"
  else
    ip netns add "$cli"
  fi
  ip link add "$vs" netns "$srv" type veth peer name "$vc" netns "$cli"
  ip -n "$srv" addr add "$SERVER_IP/30" dev "$vs"
  ip -n "$cli" addr add "$CLIENT_IP/30" dev "$vc"
  ip -n "$srv" link set lo up
  ip -n "$cli" link set lo up
  ip -n "$srv" link set "$vs" up
  ip -n "$cli" link set "$vc" up
  ip netns exec "$srv" tc qdisc add dev "$vs" root tbf rate "$rate" burst 256kb latency 50ms
  ip netns exec "$cli" tc qdisc add dev "$vc" root tbf rate "$rate" burst 256kb latency 50ms

  ssh-keygen -q -t ed25519 -N '' -C "$id-host" -f "$dir/ssh_host_ed25519_key"
  ssh-keygen -q -t ed25519 -N '' -C "$id-client" -f "$dir/id_ed25519"
  cp "$dir/id_ed25519.pub" "$dir/authorized_keys"
  cat >"$dir/sshd_config" <<EOF
ListenAddress $SERVER_IP
Port 22
HostKey $dir/ssh_host_ed25519_key
PidFile $dir/sshd.pid.sshd
AuthorizedKeysFile $dir/authorized_keys
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
Subsystem sftp internal-sftp
EOF
  if [[ ! -d /run/sshd ]]; then
    mkdir -p /run/sshd && chmod 755 /run/sshd && touch "$dir/created_run_sshd"
  fi
  ip netns exec "$srv" /usr/sbin/sshd -D -e -f "$dir/sshd_config" </dev/null >/dev/null 3>&- \
    2>>"$dir/sshd.log" &
  echo $! >"$dir/sshd.pid"
  wait_for_sshd "$cli" || { log "sshd did not start: $(tail -3 "$dir/sshd.log")"; false; }

  local proxy=()
  if [[ $delay_us -gt 0 ]]; then
    cc -O2 -pthread -o "$dir/delay_relay" "$HERE/delay_relay.c" 2>>"$dir/relay.log" ||
      { log "cannot build delay_relay: $(tail -3 "$dir/relay.log")"; false; }
    proxy=(-o "ProxyCommand=$dir/delay_relay $SERVER_IP 22 $delay_us")
  fi

  if [[ ! -d $mnt ]]; then mkdir -p "$mnt" && touch "$dir/mount_created"; fi
  echo "$(realpath "$mnt")" >"$dir/mount"
  # nsenter --net keeps the root mount namespace: the FUSE mount is visible to every process.
  nsenter --net="/run/netns/$cli" sshfs "root@$SERVER_IP:$export_dir" "$mnt" \
    -o "IdentityFile=$dir/id_ed25519,StrictHostKeyChecking=no,UserKnownHostsFile=/dev/null" \
    -o "LogLevel=ERROR,Ciphers=aes128-gcm@openssh.com,Compression=no" \
    -o "direct_io,dir_cache=no,noforget,ro" "${proxy[@]}" </dev/null >/dev/null 3>&- 2>>"$dir/sshfs.log" ||
    { log "sshfs failed: $(tail -3 "$dir/sshfs.log")"; false; }
  echo "$rate" >"$dir/rate"
  echo "${delay:-0}" >"$dir/delay"
  trap - ERR
  log "$export_dir served at $mnt through $rate, ${delay:-no} delay each way ($id)"
  echo "$id" >&3
}

status() {
  local d
  for d in "$STATE_ROOT"/lbp-pfs-*; do
    [[ -d $d ]] || continue
    echo "$(basename "$d") mount=$(cat "$d/mount" 2>/dev/null) rate=$(cat "$d/rate" 2>/dev/null)" \
      "delay=$(cat "$d/delay" 2>/dev/null)"
  done
}

run() {
  local args=()
  while [[ $# -gt 0 && $1 != -- ]]; do args+=("$1"); shift; done
  [[ ${1:-} == -- ]] || die "run: expected -- CMD"
  shift
  RUN_ID=$(up "${args[@]}")  # global: the EXIT trap runs after this function returns
  trap 'down "$RUN_ID"' EXIT
  "$@"
}

cmd=${1:-help}
shift || true
case $cmd in
  up) need_root; up "$@" ;;
  down) need_root; [[ $# -eq 1 ]] || die "down ID"; down "$1" ;;
  run) need_root; run "$@" ;;
  cleanup) need_root; cleanup_all ;;
  status) status ;;
  help|-h|--help) usage ;;
  *) usage; exit 2 ;;
esac
