#!/usr/bin/env bash
# The image's smoke test (docs/deploy.md "Docker"). Where a Docker daemon answers: builds the image,
# reports its size, runs it on the embedded engine (health check, `recaudo` on PATH, as the
# non-root user) and stops it. Without one (this project's machines and CI): lays out the runtime
# stage of the Dockerfile by hand in a temporary directory — package.json and the lock,
# `npm ci --omit=dev --ignore-scripts`, dist/, migrations/, bin/, no sources, no dev dependencies —
# and checks the same things running as an unprivileged user, so a file the image would lack or a
# dev dependency the build would need at run time fails here too. Needs dist/ (npm run build).
set -euo pipefail
cd "$(dirname "$0")/.."
[ -f dist/main.js ] || { echo "image-smoke: no dist/main.js (npm run build first)" >&2; exit 1; }

port=$(node -e "const s=require('node:net').createServer().listen(0,'127.0.0.1',()=>{console.log(s.address().port);s.close()})")
health() { # the Dockerfile's HEALTHCHECK command, against $port
  PORT=$port node -e "fetch('http://127.0.0.1:' + (process.env.PORT || 3000) + '/health').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"
}
wait_healthy() {
  for _ in $(seq 1 240); do health && return 0; sleep 0.5; done
  return 1
}

if docker info >/dev/null 2>&1; then
  echo "--- docker build"
  docker build -t recaudo:smoke .
  docker image ls recaudo:smoke --format 'image size: {{.Size}}'
  id=$(docker run -d -p "127.0.0.1:$port:3000" recaudo:smoke)
  trap 'docker rm -f "$id" >/dev/null' EXIT
  wait_healthy || { docker logs "$id"; exit 1; }
  docker exec "$id" recaudo companies create --name "Smoke SAS" --json | grep -q '"sk_test_'
  [ "$(docker exec "$id" id -u)" != 0 ] || { echo "image-smoke: the container runs as root" >&2; exit 1; }
  docker stop -t 15 "$id" >/dev/null
  echo "image-smoke: the image starts, answers /health, runs the CLI and stops"
  exit 0
fi

echo "--- no Docker daemon: the image's runtime stage laid out by hand"
root=$(mktemp -d /tmp/recaudo-image.XXXXXX)
app="$root/app"
data="$root/data"
cleanup() {
  [ -n "${server:-}" ] && kill "$server" 2>/dev/null && wait "$server" 2>/dev/null
  rm -rf "$root"
}
trap cleanup EXIT
mkdir -p "$app" "$data"
cp package.json package-lock.json "$app/"
(cd "$app" && npm ci --omit=dev --ignore-scripts --no-audit --no-fund --prefer-offline --loglevel=error)
cp -r dist migrations bin "$app/"
chmod -R a+rX "$root"
[ ! -e "$app/src" ] && [ ! -e "$app/node_modules/tsx" ] && [ ! -e "$app/node_modules/typescript" ] \
  || { echo "image-smoke: sources or dev dependencies in the runtime layout" >&2; exit 1; }

# The image's user is `node`; here any unprivileged one (nobody) when running as root.
as_user=()
if [ "$(id -u)" = 0 ]; then
  chown -R nobody "$data"
  as_user=(setpriv --reuid=nobody --regid=nogroup --clear-groups --)
fi
run_env=(env -i PATH="$PATH" HOME="$data" NODE_ENV=production PORT="$port" HOST=127.0.0.1 DATA_DIR="$data" LOG_LEVEL=warn)

(cd "$app" && exec "${as_user[@]}" "${run_env[@]}" node dist/main.js) &
server=$!
if ! wait_healthy; then
  echo "image-smoke: node dist/main.js did not answer /health" >&2
  exit 1
fi
# The CLI as the image puts it on PATH (a symlink to bin/recaudo.mjs), through the server's socket.
ln -s "$app/bin/recaudo.mjs" "$root/recaudo"
(cd "$app" && "${as_user[@]}" "${run_env[@]}" "$root/recaudo" companies create --name "Smoke SAS" --json) | grep -q '"sk_test_'
kill -TERM "$server"
wait "$server" || { echo "image-smoke: the server did not stop cleanly on SIGTERM" >&2; exit 1; }
server=
size_app=$(du -sm "$app" | cut -f1)
size_modules=$(du -sm "$app/node_modules" | cut -f1)
echo "image-smoke: the runtime layout starts as an unprivileged user, answers /health, runs the CLI and stops on SIGTERM"
echo "image-smoke: the application layer would be ${size_app} MB (${size_modules} MB of it production node_modules), on top of node:22-bookworm-slim"
