#!/usr/bin/env bash
# Fetches the Node binaries the suites also run on, from the npm registry's node-linux-<arch>
# packages (the official binaries, one package per version), into a gitignored cache, and prints
# each one's bin directory, one a line: `PATH="$dir:$PATH" node_modules/.bin/vitest run …`.
#
#   scripts/node-versions.sh                 # the versions CI runs: 22.23.5 24.22.3
#   scripts/node-versions.sh 24.22.3         # one version
#
# Cache: $ONCELY_NODE_CACHE, else .cache/node in the repository; a version already there is not
# fetched again. Only bin/node is kept (about 120 MB a version unpacked; the tarball is ~50 MB).
set -euo pipefail
cd "$(dirname "$0")/.."
versions=("$@")
[ ${#versions[@]} -gt 0 ] || versions=(22.23.5 24.22.3)
case "$(uname -m)" in
  x86_64) arch=x64 ;;
  aarch64) arch=arm64 ;;
  *) echo "node-versions: no node-linux package for $(uname -m)" >&2; exit 1 ;;
esac
cache="${ONCELY_NODE_CACHE:-$PWD/.cache/node}"
for version in "${versions[@]}"; do
  dir="$cache/$version"
  if [ "$("$dir/bin/node" --version 2>/dev/null || true)" != "v$version" ]; then
    tmp=$(mktemp -d)
    # npm pack only downloads the tarball: no install, no scripts.
    (cd "$tmp" && npm pack --silent "node-linux-$arch@$version" >/dev/null)
    tar -xzf "$tmp"/node-linux-"$arch"-"$version".tgz -C "$tmp" package/bin/node
    mkdir -p "$dir/bin"
    mv "$tmp/package/bin/node" "$dir/bin/node"
    rm -rf "$tmp"
    [ "$("$dir/bin/node" --version)" = "v$version" ] || { echo "node-versions: $dir/bin/node is not v$version" >&2; exit 1; }
  fi
  echo "$dir/bin"
done
