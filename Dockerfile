# syntax=docker/dockerfile:1
#
# Nocturne's image, used by docker-compose.yml (see docs/deploy.md).
#
# Two stages: `build` installs the dependencies (compiling better-sqlite3) and generates the Prisma
# clients and builds dist/; the runtime stage carries only node_modules, dist, prisma and the package files, and
# runs the service as an unprivileged user with its state in the /data volume.

ARG NODE_IMAGE=node:20-bookworm-slim

# ---- build -------------------------------------------------------------------------------------
FROM ${NODE_IMAGE} AS build

# better-sqlite3 compiles from source when no prebuilt binary can be downloaded.
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 make g++ \
 && rm -rf /var/lib/apt/lists/*

WORKDIR /app
COPY package.json package-lock.json ./

# `npm ci` installs exactly what the lockfile says. A lockfile written on a machine whose registry
# mirror lacks other platforms' optional packages (@swc/core-*, @unrs/resolver-binding-*) misses
# those entries, and npm ci refuses it as out of sync; npm install then completes it, as .ci/run
# does, keeping the locked versions of everything else.
# Install scripts run below, one at a time: better-sqlite3's native build is the only one the
# service needs (@prisma/engines' would download engines Nocturne never runs).
RUN npm ci --ignore-scripts --no-audit --no-fund \
 || { echo 'npm ci refused package-lock.json (incomplete for this platform); falling back to npm install' >&2; \
      npm install --ignore-scripts --no-audit --no-fund; }
RUN npm rebuild better-sqlite3

# The clients land in src/generated; src itself is copied after, so editing code does not redo
# the install or the generation (.dockerignore keeps a local src/generated out of the context).
COPY prisma.config.ts tsconfig.json ./
COPY prisma ./prisma
RUN npm run generate

# Jest, SWC and TypeScript stay in this stage; the runtime runs the JavaScript built from src/.
COPY scripts/build.cjs ./scripts/build.cjs
COPY src ./src
# JavaScript in dist/, file for file (what `npm start` builds first; scripts/build.cjs).
RUN npm run build
RUN npm prune --omit=dev --no-audit --no-fund

# ---- runtime -----------------------------------------------------------------------------------
FROM ${NODE_IMAGE} AS runtime

ENV NODE_ENV=production \
    DATA_DIR=/data \
    NPM_CONFIG_CACHE=/tmp/npm-cache \
    NPM_CONFIG_UPDATE_NOTIFIER=false

# A fixed uid/gid, so the owner of the data volume is the same in every build. /data is created
# and chowned before VOLUME: a new named volume starts as a copy of it, ownership included.
RUN groupadd --system --gid 10001 nocturne \
 && useradd --system --uid 10001 --gid nocturne --home-dir /app --no-create-home \
      --shell /usr/sbin/nologin nocturne \
 && mkdir -p /data \
 && chown nocturne:nocturne /data

WORKDIR /app
# The application belongs to root and is read-only for the service; only /data is writable.
COPY --from=build /app/package.json /app/package-lock.json ./
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/prisma ./prisma
COPY --from=build /app/dist ./dist

# Health, two questions, both must be answered yes:
# 1. Is the service up? With the admin API on (ADMIN_TOKEN), its /readyz answers 200 (the database
#    answers); without it, the database Nocturne is configured with answers and its migrations have
#    been applied (start-up applies them before the service is ready).
# 2. With Telegram configured (TELEGRAM_BOT_TOKEN), is the bot still polling? The bot writes
#    DATA_DIR/telegram-heartbeat whenever a getUpdates long poll completes (at most every 5 s); a
#    heartbeat older than TELEGRAM_HEARTBEAT_MAX_AGE seconds (default 120), or none, is unhealthy:
#    a Bot API that cannot be reached, a revoked token or a stopped runner all end up here.
#    Docker's start period (below) covers the first poll. In webhook mode (TELEGRAM_MODE=webhook)
#    nothing polls, so only question 1 is asked.
# Uses only what the image has: node and the project's own database drivers.
COPY <<'EOF' /app/docker-healthcheck.cjs
const fs = require('node:fs');
const path = require('node:path');

const env = process.env;
const dataDir = env.DATA_DIR || './data';
const query = 'SELECT COUNT(*) AS applied FROM _prisma_migrations WHERE finished_at IS NOT NULL';
const migrated = (count) => {
  if (!(Number(count) > 0)) throw new Error('no database migration has been applied');
};

async function serviceIsUp() {
  if (env.ADMIN_TOKEN) {
    const response = await fetch(`http://127.0.0.1:${env.API_PORT || 8787}/readyz`, { signal: AbortSignal.timeout(5000) });
    if (!response.ok) throw new Error(`/readyz answered ${response.status}`);
  } else if (env.DB_PROVIDER === 'postgres') {
    const { Client } = require('pg');
    const client = new Client({ connectionString: env.DATABASE_URL, connectionTimeoutMillis: 5000 });
    await client.connect();
    try {
      migrated((await client.query(query)).rows[0].applied);
    } finally {
      await client.end().catch(() => undefined);
    }
  } else {
    const url = env.DATABASE_URL || `file:${path.join(dataDir, 'nocturne.db')}`;
    const Database = require('better-sqlite3');
    const db = new Database(path.resolve(url.replace(/^file:/, '')), { readonly: true, fileMustExist: true, timeout: 5000 });
    try {
      migrated(db.prepare(query).get().applied);
    } finally {
      db.close();
    }
  }
}

function botIsPolling() {
  if (!(env.TELEGRAM_BOT_TOKEN || '').trim()) return;
  // In webhook mode Telegram posts to the replica and nothing polls: question 1 is the whole check.
  if ((env.TELEGRAM_MODE || 'polling').trim() === 'webhook') return;
  const maxAge = Number(env.TELEGRAM_HEARTBEAT_MAX_AGE || 120);
  const file = path.join(dataDir, 'telegram-heartbeat');
  let at;
  try {
    at = Date.parse(JSON.parse(fs.readFileSync(file, 'utf8')).at);
  } catch (error) {
    throw new Error(`the Telegram bot has not polled yet (no readable ${file}: ${error.code || error.message})`);
  }
  const age = (Date.now() - at) / 1000;
  if (!(age <= maxAge)) {
    throw new Error(`the Telegram bot has not completed a poll for ${Number.isFinite(age) ? Math.round(age) : '?'} s (limit ${maxAge} s): is the Bot API reachable?`);
  }
}

serviceIsUp()
  .then(botIsPolling)
  .then(
    () => process.exit(0),
    (error) => {
      console.error(`unhealthy: ${error.message}`);
      process.exit(1);
    },
  );
EOF

VOLUME ["/data"]
# The admin API (ADMIN_TOKEN) and the webhook channel (WEBHOOK_SECRET), when configured.
EXPOSE 8787 8788
USER nocturne

HEALTHCHECK --interval=30s --timeout=10s --start-period=2m --retries=3 \
  CMD ["node", "/app/docker-healthcheck.cjs"]

# The `start` script's command (package.json), run directly rather than through npm so that node
# receives SIGTERM from `docker stop` and shuts down cleanly (dist/ was built in the build stage;
# `npm start` would build it again, and the application folder is read-only here).
CMD ["node", "dist/main.js"]
