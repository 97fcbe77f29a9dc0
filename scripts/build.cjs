/**
 * `npm run build`: the TypeScript sources in src/ as plain JavaScript in dist/, file for file
 * (src/a/b.ts -> dist/a/b.js), with the files that are not TypeScript (the memory page's assets)
 * copied beside them. `npm start`, `npm run cli` and `npx nocturne` run dist/, so a process loads
 * JavaScript directly instead of compiling each of ~480 files as it loads them: measured on this
 * 2-core machine, `cli --help` took 0.55 s of CPU against 1.1 s under tsx, and `cli scopes` 1.0 s
 * against 1.8 s. Types are not checked here (`npm run typecheck` and `npm test` do that).
 *
 * dist/ mirrors src/ at the same depth, so code that finds the project from its own folder
 * (PROJECT_ROOT, the worker threads beside their callers, the page's assets) finds the same
 * places from either.
 *
 * Safe beside running processes: a file is written only when its content changed, through a
 * temporary file renamed over it, so a process loading a module while another build runs reads the
 * old file or the new one, never half of one. Files whose source is gone are removed.
 *
 * Plain CommonJS, not TypeScript: it runs before anything is compiled, with nothing but node and
 * esbuild (what tsx itself compiles with).
 */
'use strict';
const fs = require('node:fs');
const path = require('node:path');

const ROOT = path.resolve(__dirname, '..');
const SOURCE = path.join(ROOT, 'src');
const OUT = path.join(ROOT, 'dist');
/** The Node version the service supports (package.json engines). */
const TARGET = 'node20';

/** Every file under `dir`, as absolute paths. */
function filesUnder(dir) {
  if (!fs.existsSync(dir)) return [];
  return fs
    .readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => path.join(entry.parentPath ?? entry.path, entry.name));
}

/** Writes `contents` to `file` unless it already holds exactly that; through a rename, never in place. */
function writeIfChanged(file, contents) {
  try {
    if (Buffer.compare(fs.readFileSync(file), contents) === 0) return false;
  } catch {
    // Not there yet: written below.
  }
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const temporary = `${file}.${process.pid}.tmp`;
  fs.writeFileSync(temporary, contents);
  fs.renameSync(temporary, file);
  return true;
}

/**
 * Builds dist/ from src/. Returns how many files were written and removed. Throws esbuild's error
 * (file, line and message) on a syntax error; nothing is written then.
 */
function buildDist() {
  const esbuild = require('esbuild');
  const sources = filesUnder(SOURCE);
  const typescript = sources.filter((file) => file.endsWith('.ts') && !file.endsWith('.d.ts'));
  const result = esbuild.buildSync({
    entryPoints: typescript,
    outbase: SOURCE,
    outdir: OUT,
    format: 'cjs',
    platform: 'node',
    target: TARGET,
    // `import()` of a module becomes a require when it runs (what TypeScript's CommonJS output
    // does): the lazily loaded parts (docs/architecture.md, "Start-up") name modules without an
    // extension, which Node's own import() of a CommonJS file would not find.
    supported: { 'dynamic-import': false },
    write: false,
    logLevel: 'silent',
  });
  const outputs = new Map(result.outputFiles.map((file) => [file.path, Buffer.from(file.contents)]));
  for (const file of sources) {
    if (!file.endsWith('.ts')) outputs.set(path.join(OUT, path.relative(SOURCE, file)), fs.readFileSync(file));
  }
  let written = 0;
  for (const [file, contents] of outputs) if (writeIfChanged(file, contents)) written++;
  let removed = 0;
  for (const file of filesUnder(OUT)) {
    // Another build's file on its way in is that build's to rename.
    if (outputs.has(file) || file.endsWith('.tmp')) continue;
    fs.rmSync(file, { force: true });
    removed++;
  }
  return { written, removed, files: outputs.size };
}

module.exports = { buildDist, OUT };

if (require.main === module) {
  try {
    buildDist();
  } catch (error) {
    process.stderr.write(`build failed: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(1);
  }
}
