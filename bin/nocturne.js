#!/usr/bin/env node
/**
 * `npx nocturne <command> [options]`: the command line without npm's own output. `npm run cli`
 * prints npm's banner on stdout before a `--json` result unless it is given `-s`; a bin run by
 * npx prints nothing of npm's, so `npx nocturne scopes --json` is one JSON document. Runs the same
 * CLI (src/cli/index.ts) in this process, through tsx as `npm run cli` does: all of tsx (what
 * `node --import tsx` loads), not only its require hook, since the CLI imports each command's
 * module with `import()` when it runs, which only tsx's ES module hooks can resolve to a .ts file.
 */
'use strict';
import('tsx').then(() => {
  const { runCli } = require('../src/cli/index.ts');
  const { redactSecrets } = require('../src/shared/redact.ts');
  runCli(process.argv.slice(2)).then(
    // Exit only once stdout has drained: a large --json result to a pipe is written asynchronously.
    (code) => process.stdout.write('', () => process.exit(code)),
    (error) => {
      process.stderr.write(`error: ${redactSecrets(error instanceof Error ? error.stack ?? error.message : String(error))}\n`);
      process.exit(1);
    },
  );
});
