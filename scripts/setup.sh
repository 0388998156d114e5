#!/usr/bin/env bash
# Installs the Debian 12 packages that blocktune's build and tests need.
# Idempotent: prints nothing and changes nothing when everything is present.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config git
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libsqlite3-dev libsqlitecpp-dev sqlite3
  # The PostgreSQL store (issue 22): libpqxx for the daemon, and the server
  # the store tests start on a unix socket (initdb, pg_ctl).
  libpqxx-dev libpq-dev postgresql-15
  libgtest-dev libgmock-dev
  libcli11-dev zlib1g-dev
  # libtorch 1.13 (CPU) for the surrogate. Debian's libtorch links
  # libblas.so.3, which is the slow reference BLAS unless an optimized one
  # provides it: OpenBLAS makes training and scoring ~60x faster.
  libtorch-dev libopenblas0-pthread
  # Exported headers are checked to compile warning-free with both g++ and
  # clang++.
  clang
  # The TLS test makes its CA and server certificate with openssl.
  openssl
  # The evaluation's plots and tables (bench/eval/report.py).
  python3 python3-matplotlib
  # libFuzzer and the sanitizers' runtimes for clang (scripts/fuzz.sh).
  libclang-rt-14-dev
)

missing=()
for p in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)
  [[ "$status" == "installed" ]] || missing+=("$p")
done
[[ ${#missing[@]} -eq 0 ]] && exit 0

echo "setup: installing ${missing[*]}" >&2
sudo=()
if [[ $(id -u) -ne 0 ]]; then
  command -v sudo >/dev/null || {
    echo "setup: need root (or sudo) to install: ${missing[*]}" >&2
    exit 1
  }
  sudo=(sudo)
fi
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -qq
"${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
