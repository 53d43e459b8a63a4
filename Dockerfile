# syntax=docker/dockerfile:1
# Recaudo's production image (docs/deploy.md): the compiled service on Node 22, no dev dependencies,
# no TypeScript sources, a non-root user. One image for every role:
#   docker run IMAGE                       API + workers (RUN_WORKERS=false: API only)
#   docker run IMAGE node dist/main.js worker   workers only
#   docker run IMAGE recaudo migrate       any operator command (the CLI is on PATH)
# With no DATABASE_URL the embedded engine keeps its data in the /data volume.

ARG NODE_IMAGE=node:22-bookworm-slim

# --- build: every dependency, then tsc to dist/ ---------------------------------------------
FROM ${NODE_IMAGE} AS build
WORKDIR /app
COPY package.json package-lock.json ./
# --ignore-scripts: `prepare` would build before the sources are here; the build runs below.
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY scripts/build.mjs scripts/
COPY src/ src/
# The build also makes the embedded engine's template data directory (dist/embedded-template) by
# running every migration once.
COPY migrations/ migrations/
RUN npm run build

# --- runtime: production dependencies and the build ------------------------------------------
FROM ${NODE_IMAGE} AS runtime
ENV NODE_ENV=production \
    PORT=3000 \
    HOST=0.0.0.0 \
    DATA_DIR=/data
WORKDIR /app
COPY package.json package-lock.json ./
# No install script is needed by a production dependency; none runs.
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund \
    && npm cache clean --force \
    && mkdir -p /data && chown node:node /data \
    && ln -s /app/bin/recaudo.mjs /usr/local/bin/recaudo
COPY --from=build /app/dist/ dist/
COPY migrations/ migrations/
COPY bin/ bin/
USER node
VOLUME ["/data"]
EXPOSE 3000
# Workers do not listen: compose.yaml turns this off for them.
HEALTHCHECK --interval=15s --timeout=5s --start-period=60s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.PORT || 3000) + '/health').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# node itself as PID 1 (no npm in between): SIGTERM reaches the service's graceful shutdown.
CMD ["node", "dist/main.js"]
