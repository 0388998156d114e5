#!/usr/bin/env bash
# Builds blocktune on an air-gapped GPU host that has a compiler, CMake,
# CUDA and a pip PyTorch (for libtorch), but no package registry.
#
#   On a connected Debian 12 machine:   scripts/offline-deps.sh download
#     fetches the Debian packages of gRPC, protobuf's compiler plugin,
#     abseil, re2, c-ares, SQLite, SQLiteCpp, GoogleTest, CLI11, libpqxx and
#     the PostgreSQL 15 server and client (for scripts/pg_local.sh) into
#     .deps/debs (git-ignored); copy the checkout, .deps included.
#   On the GPU host:                    scripts/offline-deps.sh build
#     unpacks them into .deps/prefix with dpkg -x and configures and builds
#     into build-gpu/ against them and the pip libtorch.
#                                       scripts/offline-deps.sh unpack
#     only unpacks (enough for scripts/pg_local.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
deps=.deps
packages=(libgrpc++-dev libgrpc++1.51 libgrpc29 libgrpc-dev
          protobuf-compiler-grpc libprotoc32 libabsl-dev libabsl20220623
          libre2-dev libre2-9 libc-ares-dev libc-ares2 libsqlite3-dev
          libsqlite3-0 libsqlitecpp-dev libgtest-dev
          libgmock-dev libcli11-dev libpqxx-dev libpqxx-6.4 libpq-dev libpq5
          libldap-2.5-0 libsasl2-2
          # The server (postgres, initdb, pg_ctl) and psql/createdb, with the
          # libraries they link. Ubuntu 24.04 lacks libicu72 (it has 74) and
          # libldap-2.5 (it has 2.6, libldap.so.2); the rest it has at the same
          # soname but not always installed, and these are leaves safe to
          # carry. Not carried, as Ubuntu's own are newer and must not be
          # shadowed: libstdc++6, libgcc-s1, libsystemd0, libpam0g, zlib1g,
          # libzstd1 (dpkg itself links it there).
          # llvmjit.so (libLLVM-14) is unused: pg_local.sh sets jit=off.
          postgresql-15 postgresql-client-15 libicu72 libxml2 liblz4-1
          libssl3 libgssapi-krb5-2 libkrb5-3 libk5crypto3
          libkrb5support0 libkeyutils1 libcom-err2 libreadline8)

case "${1:-}" in
  download)
    mkdir -p "$deps/debs"
    (cd "$deps/debs" && apt-get download "${packages[@]}")
    ls "$deps/debs"
    ;;
  unpack|build)
    prefix="$PWD/$deps/prefix"
    mkdir -p "$prefix"
    for deb in "$deps"/debs/*.deb; do dpkg -x "$deb" "$prefix"; done
    [[ $1 == unpack ]] && { echo "unpacked into $prefix"; exit 0; }
    lib="$prefix/usr/lib/x86_64-linux-gnu"
    export LIBRARY_PATH="$lib${LIBRARY_PATH:+:$LIBRARY_PATH}"
    export LD_LIBRARY_PATH="$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    export PATH="$prefix/usr/bin:$PATH"
    # libpqxx and libpq are found through pkg-config: their .pc files say
    # /usr, which the sysroot maps into the prefix.
    export PKG_CONFIG_PATH="$lib/pkgconfig"
    export PKG_CONFIG_SYSROOT_DIR="$prefix"
    torch_prefix=$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)' 2>/dev/null || true)
    cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      -DCMAKE_PREFIX_PATH="$prefix/usr;$lib/cmake;$torch_prefix"
    # OFFLINE_TARGETS="blocktuned blocktune blocktune-worker": only those.
    targets=()
    for t in ${OFFLINE_TARGETS:-}; do targets+=(--target "$t"); done
    cmake --build build-gpu -j "$(nproc)" "${targets[@]}"
    echo "built in build-gpu/; run with LD_LIBRARY_PATH=$lib"
    ;;
  *)
    echo "usage: scripts/offline-deps.sh download|unpack|build" >&2
    exit 2
    ;;
esac
