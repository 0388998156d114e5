#!/usr/bin/env bash
# Builds the blocktune daemon image (docker/Dockerfile) and, with --gpu, its
# GPU variant (docker/Dockerfile.gpu) on Debian 12 packages.
#
#   scripts/docker-build.sh [--gpu] [--tag NAME]
#
#   --gpu        also build NAME-gpu (default blocktune:gpu) from the image
#   --tag NAME   the image's name (default blocktune:latest)
#
#   BLOCKTUNE_BASE_IMAGE=IMAGE   build FROM this Debian 12 image and skip the
#                                search below
#   BLOCKTUNE_DEBIAN_MIRROR=URL  the mirror debootstrap uses (default: the
#                                first bookworm mirror in apt's sources)
#
# The base is debian:12 when it is present or can be pulled. Where no
# registry is reachable it is blocktune-base:bookworm, a minimal Debian 12
# made here with debootstrap from the Debian mirror apt already uses and
# loaded with `docker import` (once; later builds reuse it). That needs
# root and the debootstrap package.
#
# The docker daemon is the one DOCKER_HOST names, else the default socket.
# Builds run with --network host so apt inside the build reaches the same
# mirror as this machine, and use only the classic Dockerfile syntax (no
# BuildKit features), so an old docker.io and a new docker both build it.
set -euo pipefail
cd "$(dirname "$0")/.."

tag=blocktune:latest
gpu=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --gpu) gpu=1 ;;
    --tag) tag=$2; shift ;;
    -h|--help) sed -n '2,24p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "docker-build: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done

say() { echo "docker-build: $*" >&2; }

command -v docker >/dev/null || {
  say "no docker client; on Debian: apt-get install docker.io"
  exit 3
}
if ! docker info >/dev/null 2>&1; then
  say "no docker daemon answers at ${DOCKER_HOST:-unix:///var/run/docker.sock}."
  say "Start one (systemctl start docker), or a private one as root:"
  say "  mkdir -p /tmp/dockerd && dockerd --iptables=false \\"
  say "    -H unix:///tmp/dockerd/docker.sock --data-root /var/lib/docker-bt &"
  say "  export DOCKER_HOST=unix:///tmp/dockerd/docker.sock"
  say "or point DOCKER_HOST at a running daemon; then run this again."
  exit 3
fi

# The first bookworm mirror in apt's sources, one-line or deb822 format.
debian_mirror() {
  local f
  for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
    [[ -f "$f" ]] || continue
    awk '$1 == "deb" && / bookworm / {
           for (i = 2; i <= NF; i++) if ($i ~ /^[a-z]+:\/\//) { print $i; exit }
         }' "$f"
  done
  for f in /etc/apt/sources.list.d/*.sources; do
    [[ -f "$f" ]] || continue
    awk 'BEGIN { RS = ""; FS = "\n" }
         /(^|\n)Suites:[^\n]*bookworm([ \t\n]|$)/ {
           for (i = 1; i <= NF; i++)
             if ($i ~ /^URIs:/) { split($i, u, /[ \t]+/); print u[2]; exit }
         }' "$f"
  done
}

make_base() {
  local mirror=${BLOCKTUNE_DEBIAN_MIRROR:-}
  [[ -n "$mirror" ]] || mirror=$(debian_mirror | grep -v -- '-security' | head -1)
  [[ -n "$mirror" ]] || mirror=http://deb.debian.org/debian
  if [[ $(id -u) -ne 0 ]] || ! command -v debootstrap >/dev/null; then
    say "debian:12 cannot be pulled, and making a local base needs root and"
    say "debootstrap (apt-get install debootstrap); or set BLOCKTUNE_BASE_IMAGE"
    say "to a Debian 12 image that this daemon has."
    exit 3
  fi
  local root
  root=$(mktemp -d /var/tmp/blocktune-base.XXXXXX)
  trap 'rm -rf "$root"' EXIT
  say "debian:12 cannot be pulled: making blocktune-base:bookworm with"
  say "debootstrap --variant=minbase bookworm from $mirror"
  local start=$SECONDS
  nice debootstrap --variant=minbase bookworm "$root" "$mirror" \
    >"$root.log" 2>&1 || { tail -20 "$root.log" >&2; exit 1; }
  rm -f "$root.log"
  # The same suites an official debian:12 image has.
  local security=${mirror%/debian}/debian-security
  [[ "$mirror" == */debian ]] || security=http://deb.debian.org/debian-security
  rm -f "$root/etc/apt/sources.list"
  printf '%s\n' \
    "Types: deb" "URIs: $mirror" "Suites: bookworm bookworm-updates" \
    "Components: main" \
    "Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg" "" \
    "Types: deb" "URIs: $security" "Suites: bookworm-security" \
    "Components: main" \
    "Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg" \
    >"$root/etc/apt/sources.list.d/debian.sources"
  rm -rf "${root:?}"/var/cache/apt/archives/*.deb "${root:?}"/var/lib/apt/lists/* \
    "${root:?}"/var/log/*.log "${root:?}"/tmp/* "${root:?}"/proc/* "${root:?}"/sys/* "${root:?}"/dev/*
  tar --numeric-owner -C "$root" -c . |
    docker import --change 'CMD ["bash"]' - blocktune-base:bookworm >/dev/null
  rm -rf "$root"
  trap - EXIT
  say "blocktune-base:bookworm made in $((SECONDS - start)) s"
}

base=${BLOCKTUNE_BASE_IMAGE:-}
if [[ -z "$base" ]]; then
  if docker image inspect debian:12 >/dev/null 2>&1; then
    base=debian:12
  elif docker image inspect blocktune-base:bookworm >/dev/null 2>&1; then
    base=blocktune-base:bookworm
  elif timeout 120 docker pull -q debian:12 >/dev/null 2>&1; then
    base=debian:12
  else
    make_base
    base=blocktune-base:bookworm
  fi
fi
say "base image: $base"

build() {
  local start=$SECONDS
  # DOCKER_BUILDKIT=0: the classic builder, which every docker has and which
  # honours --network host for RUN steps without further setup.
  DOCKER_BUILDKIT=0 docker build --network host "$@"
  say "built in $((SECONDS - start)) s"
}

say "building $tag from docker/Dockerfile"
build --build-arg "BASE_IMAGE=$base" -f docker/Dockerfile -t "$tag" .
if [[ $gpu -eq 1 ]]; then
  gpu_tag=${tag%%:*}:gpu
  [[ "$tag" == *:* && "${tag##*:}" != latest ]] && gpu_tag=$tag-gpu
  say "building $gpu_tag from docker/Dockerfile.gpu"
  build --build-arg "BLOCKTUNE_IMAGE=$tag" -f docker/Dockerfile.gpu \
    -t "$gpu_tag" docker
fi
