#!/usr/bin/env bash
# Fetches a newer nats-server than the machine's (Debian bookworm ships 2.9.10) from Debian's own
# archive, without installing it: apt-get downloads the package with a private source list and
# state directory, dpkg-deb unpacks it, and the binary lands in .cache/nats-server/<version>/
# (gitignored). Debian builds nats-server as a static Go binary, so trixie's or sid's runs on
# bookworm. Then run tests or benchmarks with it (test/support/installed.ts):
#
#   scripts/fetch-nats-server.sh                 # trixie's 2.10.27-1+b2
#   scripts/fetch-nats-server.sh 2.15.1-1 sid    # another version from another suite
#   NATS_SERVER_BIN=$PWD/.cache/nats-server/2.10.27-1+b2/nats-server npm run bench -- --only fanout-scale
#
# Why a newer server: docs/decisions/which-nats-server.md. Prints the binary's path.
set -euo pipefail
cd "$(dirname "$0")/.."

version=${1:-2.10.27-1+b2}
suite=${2:-trixie}
case "$suite" in
  bookworm | trixie | forky | sid) ;;
  *)
    echo "fetch-nats-server: unknown Debian suite '$suite' (bookworm, trixie, forky or sid)" >&2
    exit 2
    ;;
esac
out=".cache/nats-server/$version"
if [ -x "$out/nats-server" ]; then
  echo "$PWD/$out/nats-server"
  exit 0
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/lists/partial" "$work/cache/archives/partial"
echo "deb http://deb.debian.org/debian $suite main" >"$work/sources.list"
apt=(
  -o "Dir::Etc::SourceList=$work/sources.list" -o Dir::Etc::SourceParts=/dev/null
  -o "Dir::State::Lists=$work/lists" -o "Dir::Cache=$work/cache" -o APT::Sandbox::User=root
)
apt-get "${apt[@]}" update -qq >&2
(cd "$work" && apt-get "${apt[@]}" download "nats-server=$version") >&2
dpkg-deb -x "$work"/nats-server_*.deb "$work/x"
mkdir -p "$out"
cp "$work/x/usr/sbin/nats-server" "$out/nats-server"
"$out/nats-server" --version >&2
echo "$PWD/$out/nats-server"
