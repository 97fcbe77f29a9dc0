/**
 * The memory page's files: `GET /app` (the HTML shell) and `GET /app/assets/<file>` (its script,
 * stylesheet and the chart and graph libraries). The shell holds no data and needs no auth; every
 * piece of data comes from `/app/api/*` (api/web-routes.ts), which checks who asks on each call.
 *
 * Nothing is fetched from elsewhere at run time: the page's own files live in `web-page/` beside
 * this file and the libraries are served from node_modules, found with `require.resolve`, so the
 * page works offline and inside Telegram alike, and an upgrade of a library is one line of
 * package.json. Each asset's address carries a hash of its bytes (`?v=`), so the files can be
 * cached for a year and a new release is still fetched at once.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';

/** The page's own files, beside this module. */
const PAGE_DIR = path.join(__dirname, 'web-page');

/** A year: assets are named by their content hash, so a cached copy is never stale. */
const ASSET_MAX_AGE_SECONDS = 365 * 24 * 60 * 60;

/** Characters of the content hash in an asset's address: enough to tell releases apart. */
const HASH_CHARS = 12;

/**
 * The browser build a d3 package names under `exports.umd` in its package.json. The packages
 * export only their entry points, so the file is found from the entry's folder up to the
 * package's own package.json, which says where its browser build is.
 */
function umdBuildOf(name: string): string {
  let dir = path.dirname(require.resolve(name));
  for (;;) {
    const manifest = path.join(dir, 'package.json');
    if (fs.existsSync(manifest)) {
      const parsed = JSON.parse(fs.readFileSync(manifest, 'utf8')) as { name?: string; exports?: { umd?: string } };
      if (parsed.name === name && parsed.exports?.umd) return path.join(dir, parsed.exports.umd);
    }
    const parent = path.dirname(dir);
    if (parent === dir) throw new Error(`${name} names no browser build (exports.umd) in its package.json`);
    dir = parent;
  }
}

/**
 * Every file `/app/assets/` serves, by its public name: the page's own, then the libraries (uPlot
 * draws the timeline; d3-force lays out the graph, which the page draws as SVG; d3-force's three
 * small dependencies load before it). A name not listed is a 404: no path from the request ever
 * reaches the file system.
 */
const ASSET_SOURCES: ReadonlyArray<readonly [name: string, file: () => string]> = [
  ['app.css', () => path.join(PAGE_DIR, 'app.css')],
  ['uPlot.min.css', () => require.resolve('uplot/dist/uPlot.min.css')],
  ['uPlot.iife.min.js', () => require.resolve('uplot/dist/uPlot.iife.min.js')],
  ['d3-dispatch.min.js', () => umdBuildOf('d3-dispatch')],
  ['d3-quadtree.min.js', () => umdBuildOf('d3-quadtree')],
  ['d3-timer.min.js', () => umdBuildOf('d3-timer')],
  ['d3-force.min.js', () => umdBuildOf('d3-force')],
  ['page-core.js', () => path.join(PAGE_DIR, 'page-core.js')],
  ['memories.js', () => path.join(PAGE_DIR, 'memories.js')],
  ['timeline.js', () => path.join(PAGE_DIR, 'timeline.js')],
  ['graph.js', () => path.join(PAGE_DIR, 'graph.js')],
  ['profile.js', () => path.join(PAGE_DIR, 'profile.js')],
  ['app.js', () => path.join(PAGE_DIR, 'app.js')],
];

const CONTENT_TYPES: Readonly<Record<string, string>> = {
  '.css': 'text/css; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
};

/**
 * What the browser may do with the page: scripts and styles only from this server (the libraries
 * are served here too), data calls only to it; inline styles are allowed because uPlot sizes its
 * canvas through style attributes. No `frame-ancestors`: Telegram's web client shows a Mini App in
 * a frame.
 */
const CONTENT_SECURITY_POLICY = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data: blob:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'self'",
].join('; ');

interface Asset {
  readonly body: Buffer;
  readonly type: string;
  readonly hash: string;
}

/** Reads every asset once: the files are part of the release, not data that changes while it runs. */
function loadAssets(): Map<string, Asset> {
  const assets = new Map<string, Asset>();
  for (const [name, file] of ASSET_SOURCES) {
    const body = fs.readFileSync(file());
    const hash = createHash('sha256').update(body).digest('hex').slice(0, HASH_CHARS);
    assets.set(name, { body, type: CONTENT_TYPES[path.extname(name)] ?? 'application/octet-stream', hash });
  }
  return assets;
}

/** The shell with each `{{asset:NAME}}` replaced by the asset's hashed address. */
function renderShell(assets: ReadonlyMap<string, Asset>): string {
  const template = fs.readFileSync(path.join(PAGE_DIR, 'index.html'), 'utf8');
  return template.replace(/\{\{asset:([\w.-]+)\}\}/g, (_whole, name: string) => {
    const asset = assets.get(name);
    if (!asset) throw new Error(`web-page/index.html names an asset that is not served: ${name}`);
    return `/app/assets/${name}?v=${asset.hash}`;
  });
}

/** Registers `GET /app` and `GET /app/assets/:file` on the admin API's server. */
export function registerWebPage(app: FastifyInstance): void {
  const assets = loadAssets();
  const shell = renderShell(assets);

  app.get('/app', { schema: { hide: true } }, async (_request, reply) =>
    reply
      .type('text/html; charset=utf-8')
      // The shell names the current assets, so it is asked for again each time.
      .header('cache-control', 'no-cache')
      .header('content-security-policy', CONTENT_SECURITY_POLICY)
      .header('x-content-type-options', 'nosniff')
      .header('referrer-policy', 'no-referrer')
      .send(shell),
  );

  app.get('/app/assets/:file', { schema: { hide: true } }, async (request, reply) => {
    const { file } = request.params as { file: string };
    const asset = assets.get(file);
    if (!asset) return reply.code(404).send({ error: `No asset ${file}.` });
    return reply
      .type(asset.type)
      .header('cache-control', `public, max-age=${ASSET_MAX_AGE_SECONDS}, immutable`)
      .header('x-content-type-options', 'nosniff')
      .send(asset.body);
  });
}
