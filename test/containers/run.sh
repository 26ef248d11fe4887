#!/usr/bin/env bash
# npm run test:containers: the image and the store of docker-compose.yml in a real Docker engine,
# through testcontainers (test/containers/store.test.ts). Not part of `npm test`; .ci/run runs it.
#
# The engine: Debian's docker.io, started here (as root) when not running, as
# `dockerd --iptables=false --bridge=none`: host networking only, every container on loopback.
# When the engine cannot be had, this says why and exits 0. The base image node:24-slim is made
# locally when missing (docker/base-image.sh), since no image registry may be reachable.
set -uo pipefail
cd "$(dirname "$0")/../.."

skip() {
  echo "test:containers: not run: $*"
  exit 0
}

if ! command -v dockerd >/dev/null 2>&1 && ! docker info >/dev/null 2>&1; then
  [[ $(id -u) == 0 ]] || skip "no Docker engine, and installing docker.io needs root"
  echo "test:containers: installing docker.io"
  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq docker.io >/dev/null; } ||
    skip "apt-get install docker.io failed"
fi

if ! docker info >/dev/null 2>&1; then
  [[ $(id -u) == 0 ]] || skip "the Docker engine is not running, and starting it needs root"
  log=$(mktemp /tmp/regbridge-dockerd.XXXXXX.log)
  echo "test:containers: starting dockerd --iptables=false --bridge=none (log: $log)"
  setsid nohup dockerd --iptables=false --bridge=none >"$log" 2>&1 &
  for _ in $(seq 1 60); do
    docker info >/dev/null 2>&1 && break
    kill -0 $! 2>/dev/null || break
    sleep 1
  done
  docker info >/dev/null 2>&1 || skip "dockerd did not start: $(grep -m3 -iE 'error|fatal|failed' "$log" | tr '\n' ' ')"
fi
echo "test:containers: engine $(docker version --format '{{.Server.Version}}' 2>/dev/null)"

docker/base-image.sh || exit 1

# Ryuk, testcontainers' reaper, is an image from Docker Hub: the suite removes its containers itself.
export TESTCONTAINERS_RYUK_DISABLED=true
# Containers share the host's network: testcontainers reaches them on loopback (left to itself,
# inside a container it looks for the bridge network's gateway, which does not exist here).
export TESTCONTAINERS_HOST_OVERRIDE=127.0.0.1
exec npx vitest run --config test/containers/vitest.config.ts
