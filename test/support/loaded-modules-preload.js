/**
 * Preloaded into an entry point's process (`NODE_OPTIONS=--require <this file>`) by
 * test/integration/startup-modules.int.test.ts: when the process exits, the files it loaded
 * through require are written, one a line, to the file NOCTURNE_TEST_LOADED_MODULES names. Under
 * the built dist/ (and under tsx) every module of src/ is there, a module named in an `import()`
 * included (the build turns it into a require), and so is every package a static import loads.
 * Plain JavaScript: it runs before anything else.
 */
'use strict';
const fs = require('node:fs');

const out = process.env.NOCTURNE_TEST_LOADED_MODULES;
if (out) process.on('exit', () => fs.writeFileSync(out, Object.keys(require.cache).join('\n')));
