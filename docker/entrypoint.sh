#!/bin/bash
# The blocktune image's entry point: starts blocktuned on 0.0.0.0:PORT with
# the mounted token, after importing the shipped H100 models into a store
# that has none (first start), as scripts/run.sh does.
#
#   docker run IMAGE [blocktuned flags...]   the daemon, with extra flags
#   docker run IMAGE COMMAND [args...]       any other program (blocktune ...)
#
# Environment (docker/Dockerfile sets the defaults):
#   BLOCKTUNE_PORT               50051
#   BLOCKTUNE_TOKEN_FILE         /run/secrets/blocktune_token, required
#   BLOCKTUNE_DB                 /var/lib/blocktune/blocktune.db (the volume)
#   BLOCKTUNE_GPUS               none here, all in the GPU image
#   BLOCKTUNE_IMPORT_PRETRAINED  1: import the shipped models on first start;
#                                0: start with an empty store
set -euo pipefail

if [[ $# -gt 0 && "$1" != -* ]]; then
  exec "$@"
fi

say() { echo "blocktune-entrypoint: $*" >&2; }

port=${BLOCKTUNE_PORT:-50051}
token=${BLOCKTUNE_TOKEN_FILE:-/run/secrets/blocktune_token}
db=${BLOCKTUNE_DB:-/var/lib/blocktune/blocktune.db}
gpus=${BLOCKTUNE_GPUS:-none}

# The daemon refuses a non-loopback address without a token; say here how to
# give it one.
if [[ ! -r "$token" ]]; then
  if [[ -e "$token" ]]; then
    say "cannot read the token file $token as uid $(id -u)."
    say "On the host: chown $(id -u) FILE && chmod 600 FILE (or chmod 644 it,"
    say "which blocktuned accepts with a warning)."
  else
    say "no token file at $token: blocktuned listens beyond loopback"
    say "only with a token. Mount one (its first line, 16 characters or more):"
    say "  head -c 32 /dev/urandom | base64 > token"
    say "  chown $(id -u) token && chmod 600 token"
    say "  docker run -v \$PWD/token:$token:ro ..."
  fi
  exit 2
fi

if [[ "${BLOCKTUNE_IMPORT_PRETRAINED:-1}" == 1 ]]; then
  pretrained=/usr/share/blocktune/pretrained/h100-sxm/models.json.gz
  # A private daemon on a unix socket in the container, on the same store;
  # it is stopped before the real one starts, so the store has one owner.
  run_dir=$(mktemp -d)
  blocktuned --listen "unix:$run_dir/init.sock" --db "$db" --gpus none \
    2>"$run_dir/init.log" &
  init=$!
  for _ in $(seq 300); do
    grep -q "listening on" "$run_dir/init.log" && break
    kill -0 "$init" 2>/dev/null || { cat "$run_dir/init.log" >&2; exit 1; }
    sleep 0.1
  done
  cli=(blocktune --server "unix:$run_dir/init.sock")
  if ! "${cli[@]}" --json health | grep -Eq '"models": *[1-9]'; then
    say "first start: importing the shipped H100 models ($pretrained)"
    "${cli[@]}" import "$pretrained" >&2
  fi
  kill -TERM "$init"
  wait "$init" || true
  rm -rf "$run_dir"
fi

# exec: blocktuned is PID 1 and gets docker stop's SIGTERM itself.
exec blocktuned --listen "0.0.0.0:$port" --token-file "$token" --db "$db" \
  --gpus "$gpus" "$@"
