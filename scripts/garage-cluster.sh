#!/usr/bin/env bash
# A three-node Garage cluster on loopback, for Spindle's S3 cold tier tests.
#
#   scripts/garage-cluster.sh start DIR     start it in DIR (created), print its env
#   scripts/garage-cluster.sh env DIR       print the env again
#   scripts/garage-cluster.sh kill DIR N    kill -9 node N (1..3), as a crash
#   scripts/garage-cluster.sh stop DIR      stop every node
#
# Each node has its own config (DIR/nodeN.toml: metadata and data
# folders, RPC/S3/admin ports on 127.0.0.1, one shared rpc_secret),
# replication_factor = 3, and the layout puts each node in its own zone.
# `start` creates the bucket `spindle` and a key allowed to read and
# write it, and writes DIR/env:
#   GARAGE_ENDPOINTS   the three S3 endpoints, comma-separated
#   GARAGE_REGION GARAGE_BUCKET GARAGE_ACCESS_KEY GARAGE_SECRET_KEY
#   GARAGE_DIR
# The garage binary: $GARAGE_BIN, else `garage` on PATH, else cargo's bin
# folder (scripts/ci.d/85-tiers.sh installs it there).
set -euo pipefail

cmd=${1:-}
dir=${2:-}
[[ -n "$cmd" && -n "$dir" ]] || { sed -n '2,18p' "$0"; exit 2; }

garage_bin() {
  if [[ -n "${GARAGE_BIN:-}" ]]; then echo "$GARAGE_BIN"; return; fi
  if command -v garage >/dev/null 2>&1; then command -v garage; return; fi
  local c="${CARGO_HOME:-$HOME/.cargo}/bin/garage"
  [[ -x "$c" ]] && { echo "$c"; return; }
  echo "garage-cluster: no garage binary (install: cargo install garage --locked)" >&2
  exit 1
}

free_ports() { # N free TCP ports on 127.0.0.1
  python3 - "$1" <<'EOF'
import socket, sys
socks = []
for _ in range(int(sys.argv[1])):
    s = socket.socket(); s.bind(("127.0.0.1", 0)); socks.append(s)
print(" ".join(str(s.getsockname()[1]) for s in socks))
EOF
}

g() { # g N args...: the garage CLI against node N
  local n=$1; shift
  "$GARAGE" -c "$dir/node$n.toml" "$@"
}

retry() { # retry SECONDS cmd...: until it succeeds
  local until=$((SECONDS + $1)); shift
  until "$@" >/dev/null 2>"$dir/last-error"; do
    if ((SECONDS >= until)); then
      echo "garage-cluster: gave up on: $*" >&2; cat "$dir/last-error" >&2; return 1
    fi
    sleep 0.5
  done
}

case "$cmd" in
start)
  GARAGE=$(garage_bin)
  mkdir -p "$dir"
  dir=$(cd "$dir" && pwd)
  secret=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
  read -r -a ports <<<"$(free_ports 9)"
  endpoints=()
  for n in 1 2 3; do
    rpc=${ports[$(((n - 1) * 3))]} s3=${ports[$(((n - 1) * 3 + 1))]} admin=${ports[$(((n - 1) * 3 + 2))]}
    mkdir -p "$dir/node$n/meta" "$dir/node$n/data"
    cat >"$dir/node$n.toml" <<EOF
metadata_dir = "$dir/node$n/meta"
data_dir = "$dir/node$n/data"
db_engine = "sqlite"
replication_factor = 3

rpc_bind_addr = "127.0.0.1:$rpc"
rpc_public_addr = "127.0.0.1:$rpc"
rpc_secret = "$secret"

[s3_api]
s3_region = "garage"
api_bind_addr = "127.0.0.1:$s3"
root_domain = ".s3.garage.localhost"

[admin]
api_bind_addr = "127.0.0.1:$admin"
admin_token = "$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')"
EOF
    endpoints+=("http://127.0.0.1:$s3")
    RUST_LOG=warn "$GARAGE" -c "$dir/node$n.toml" server >"$dir/node$n.log" 2>&1 &
    echo $! >"$dir/node$n.pid"
  done
  for n in 1 2 3; do retry 60 g "$n" status; done
  ids=()
  for n in 1 2 3; do ids+=("$(g "$n" node id -q)"); done
  for n in 2 3; do retry 30 g 1 node connect "${ids[$((n - 1))]}"; done
  for n in 1 2 3; do
    retry 30 g 1 layout assign -z "zone$n" -c 1G "${ids[$((n - 1))]%%@*}"
  done
  retry 30 g 1 layout apply --version 1
  retry 60 g 1 bucket create spindle
  key_json=$(g 1 json-api CreateKey '{"name":"spindle"}')
  read -r access secret_key < <(python3 -c 'import json,sys; k=json.load(sys.stdin); print(k["accessKeyId"], k["secretAccessKey"])' <<<"$key_json")
  retry 30 g 1 bucket allow --read --write --owner spindle --key "$access"
  cat >"$dir/env" <<EOF
GARAGE_DIR=$dir
GARAGE_ENDPOINTS=$(IFS=,; echo "${endpoints[*]}")
GARAGE_REGION=garage
GARAGE_BUCKET=spindle
GARAGE_ACCESS_KEY=$access
GARAGE_SECRET_KEY=$secret_key
EOF
  cat "$dir/env"
  ;;
env)
  cat "$dir/env"
  ;;
kill)
  n=${3:?node number}
  kill -9 "$(cat "$dir/node$n.pid")"
  ;;
stop)
  for n in 1 2 3; do
    if [[ -f "$dir/node$n.pid" ]]; then
      pid=$(cat "$dir/node$n.pid")
      kill "$pid" 2>/dev/null || true
      for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      kill -9 "$pid" 2>/dev/null || true
      rm -f "$dir/node$n.pid"
    fi
  done
  ;;
*)
  sed -n '2,18p' "$0"; exit 2
  ;;
esac
