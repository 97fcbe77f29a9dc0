#!/usr/bin/env node
/**
 * `npx nocturne <command> [options]`: the command line without npm's own output. `npm run cli`
 * prints npm's banner on stdout before a `--json` result unless it is given `-s`; a bin run by
 * npx prints nothing of npm's, so `npx nocturne scopes --json` is one JSON document. Runs the same
 * CLI in this process as `npm run cli` does: dist/ brought up to date with src/ first (what the
 * `precli` script does; it writes only what changed), then the built command line.
 */
'use strict';
require('../scripts/build.cjs').buildDist();
const { runCli } = require('../dist/cli/index.js');
const { redactSecrets } = require('../dist/shared/redact.js');

runCli(process.argv.slice(2)).then(
  // Exit only once stdout has drained: a large --json result to a pipe is written asynchronously.
  (code) => process.stdout.write('', () => process.exit(code)),
  (error) => {
    process.stderr.write(`error: ${redactSecrets(error instanceof Error ? error.stack ?? error.message : String(error))}\n`);
    process.exit(1);
  },
);
