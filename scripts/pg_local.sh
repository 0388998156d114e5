#!/usr/bin/env bash
# A private PostgreSQL 15 server for the fleet test, reachable only through a
# unix socket.
#
#   scripts/pg_local.sh start DIR   initdb DIR/data (trust auth on the socket,
#                                   no TCP) unless it exists, start it with its
#                                   socket and log in DIR, create database
#                                   blocktune, print the libpq conninfo on
#                                   stdout (everything else goes to stderr):
#                                     conn=$(scripts/pg_local.sh start /tmp/pg)
#   scripts/pg_local.sh stop DIR    pg_ctl stop -m fast
#
# Binaries: $BLOCKTUNE_PG_BIN, else .deps/prefix/usr/lib/postgresql/15/bin
# (scripts/offline-deps.sh download, then unpack or build: hosts with no
# registry), else /usr/lib/postgresql/15/bin. Run as root, the server runs as
# `nobody` (postgres refuses root) and DIR is handed to it, as
# server/pg_test_server.cc does; DIR's parents must let `nobody` through.
set -euo pipefail
prefix=$(cd "$(dirname "$0")/.." && pwd)/.deps/prefix
cmd=${1:-} dir=${2:-}
if [[ ($cmd != start && $cmd != stop) || -z $dir ]]; then
  echo "usage: scripts/pg_local.sh start|stop DIR" >&2
  exit 2
fi
die() { echo "pg_local.sh: $*" >&2; exit 1; }

if [[ -n ${BLOCKTUNE_PG_BIN:-} ]]; then bin=$BLOCKTUNE_PG_BIN
elif [[ -x $prefix/usr/lib/postgresql/15/bin/postgres ]]; then
  bin=$prefix/usr/lib/postgresql/15/bin
else bin=/usr/lib/postgresql/15/bin; fi
# Binaries unpacked by dpkg -x find their share/ and lib/ files relative to
# themselves, but their libraries only through LD_LIBRARY_PATH (Debian puts
# some under /lib, so both).
if [[ $bin == "$prefix"/* ]]; then
  export LD_LIBRARY_PATH="$prefix/usr/lib/x86_64-linux-gnu:$prefix/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
for b in postgres initdb pg_ctl createdb; do
  [[ -x $bin/$b ]] || die "no $b in $bin: install postgresql-15, run" \
    "scripts/offline-deps.sh download (connected machine) then unpack, or" \
    "set BLOCKTUNE_PG_BIN"
done
missing=$(ldd "$bin"/{postgres,initdb,pg_ctl,createdb} 2>&1 |
          awk '/not found/ {print $1; next} /error while|^ldd:/' | sort -u || true)
[[ -z $missing ]] || die "libraries missing for $bin:" $missing \
  "(LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-})"

runas=()
if [[ $(id -u) == 0 ]]; then
  id nobody >/dev/null 2>&1 || die "running as root and there is no user nobody to run postgres"
  command -v setpriv >/dev/null || die "running as root and setpriv (util-linux) is missing"
  runas=(setpriv --reuid="$(id -u nobody)" --regid="$(id -g nobody)"
         --clear-groups env HOME=/)
fi

mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
data=$dir/data
if [[ $cmd == stop ]]; then
  [[ -d $data ]] || die "no cluster in $data"
  "${runas[@]}" "$bin/pg_ctl" -D "$data" -m fast -w stop >&2
  exit 0
fi

# The daemons (any user) connect through the socket in DIR.
chmod 755 "$dir"
if [[ ${#runas[@]} -gt 0 ]]; then
  chown nobody: "$dir"
  "${runas[@]}" test -w "$dir" || die "user nobody cannot write $dir (are its parents traversable?)"
fi
if [[ ! -f $data/PG_VERSION ]]; then
  "${runas[@]}" "$bin/initdb" -D "$data" -U blocktune --auth-local=trust \
    --auth-host=reject -E UTF8 --locale=C --no-instructions >&2 ||
    die "initdb failed (binaries in $bin)"
  cat >>"$data/postgresql.conf" <<EOF
listen_addresses = ''
unix_socket_directories = '$dir'
jit = off
EOF
fi
if ! "${runas[@]}" "$bin/pg_ctl" -D "$data" status >/dev/null 2>&1; then
  "${runas[@]}" "$bin/pg_ctl" -D "$data" -l "$dir/server.log" -w -t 60 start >&2 ||
    die "pg_ctl start failed; $dir/server.log says: $(tail -5 "$dir/server.log" 2>/dev/null)"
fi
if ! out=$("$bin/createdb" -h "$dir" -U blocktune blocktune 2>&1); then
  [[ $out == *"already exists"* ]] || die "createdb failed: $out"
fi
echo "host=$dir user=blocktune dbname=blocktune"
