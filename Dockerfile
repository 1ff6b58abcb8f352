# Build: compile TypeScript, then keep only production dependencies. No compiler: better-sqlite3
# ships Node-API binaries. Node 24: the newest of the versions the README names, which .ci/run tests.
FROM node:24-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
# Without scripts: the sources are not here yet for the build that `prepare` runs, and no dependency
# of the server needs one (only esbuild has one, for tsx and vitest).
RUN npm ci --ignore-scripts
COPY tsconfig.json tsconfig.build.json ./
COPY scripts ./scripts
COPY src ./src
COPY migrations ./migrations
RUN npm run build \
 && npm prune --omit=dev \
 && chmod 0755 dist/src/cli/main.js

# Runtime: no compiler, no sources, no dev dependencies; the application files belong to root and
# only /data is writable by the unprivileged user the server runs as.
FROM node:24-bookworm-slim
# V8's young generation capped at 8 MB a half instead of 16: about 10 MB less resident memory and no
# measurable cost in throughput (README "Memory"); the same flag as `npm start` and `wharf serve`.
ENV NODE_ENV=production \
    NODE_OPTIONS=--max-semi-space-size=8 \
    WHARF_DATA_DIR=/data \
    WHARF_HOST=0.0.0.0 \
    WHARF_PORT=8624
WORKDIR /app
COPY --from=build /app/package.json ./package.json
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY --from=build /app/migrations ./migrations
# `docker exec <container> wharf feeds list` works on the same data directory.
RUN ln -s /app/dist/src/cli/main.js /usr/local/bin/wharf \
 && mkdir -p /data \
 && chown node:node /data
USER node
VOLUME /data
EXPOSE 8624
# Asks /health where WHARF_HOST and WHARF_PORT say the server listens (0.0.0.0 and :: on their
# loopback), so that overriding either does not make a healthy container look unhealthy.
HEALTHCHECK --interval=30s --timeout=5s --start-period=15s --retries=3 \
  CMD ["node", "dist/src/cli/main.js", "healthcheck"]
# The server handles SIGTERM itself (finishes in-flight requests, closes the database, exits 0).
STOPSIGNAL SIGTERM
CMD ["node", "dist/src/cli/main.js", "serve"]
