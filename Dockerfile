# regbridge: one image for every role (serve, broker, fanout, watch, demo); docs/docker.md.
# Build stage: every dependency, the TypeScript build, then the dev dependencies pruned away.
# Runtime stage: dist/, bin/ and the production node_modules only, as user `node`.
#
#   docker build --network host -t regbridge:local .
#
# (--network host where the engine has no bridge network, as on machines whose dockerd runs with
# --bridge=none; elsewhere plain `docker build` works.)

FROM node:24-slim AS build
# Compilers for native dependencies built from source when no prebuilt binary is reachable, and
# the image's own Node headers for node-gyp (so it downloads none).
RUN apt-get update \
  && apt-get install -y --no-install-recommends python3 make g++ \
  && rm -rf /var/lib/apt/lists/*
ENV npm_config_nodedir=/usr/local
WORKDIR /app
# Dependencies first: this layer is rebuilt only when the lock file changes. The package's own
# `prepare` build needs the sources, so it runs below.
COPY package.json package-lock.json ./
RUN npm ci --ignore-scripts --no-audit --no-fund && npm rebuild && npm cache clean --force
COPY tsconfig.json tsconfig.build.json ./
COPY scripts/build.mjs scripts/code-cache.mjs ./scripts/
COPY scripts/mqtt-fixes ./scripts/mqtt-fixes
# The build starts `serve` through the bin once, for its code cache (scripts/code-cache.mjs).
COPY bin/regbridge.js ./bin/regbridge.js
COPY src ./src
COPY bridge ./bridge
COPY broker ./broker
COPY controller ./controller
COPY cli ./cli
RUN npm run build && npm prune --omit=dev --no-audit --no-fund

FROM node:24-slim AS runtime
ENV NODE_ENV=production
WORKDIR /app
COPY --from=build /app/package.json ./
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY bin/regbridge.js ./bin/regbridge.js
# Never root at run time.
USER node
# 8080: the device REST API (serve); 1883: MQTT (broker, or serve's embedded broker).
EXPOSE 8080 1883
# The device's /health on its REGBRIDGE_PORT (default 8080). A broker or controller container
# sets its own check (docker-compose.yml does for the broker).
HEALTHCHECK --interval=5s --timeout=3s --start-period=5s --retries=10 \
  CMD ["node", "-e", "fetch(`http://127.0.0.1:${process.env.REGBRIDGE_PORT || 8080}/health`).then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
CMD ["node", "bin/regbridge.js", "serve"]
