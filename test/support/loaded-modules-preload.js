/**
 * Preloaded into an entry point's process (`NODE_OPTIONS=--require <this file>`) by
 * test/integration/startup-modules.int.test.ts: when the process exits, the files it loaded
 * through require are written, one a line, to the file NOCTURNE_TEST_LOADED_MODULES names. Under
 * tsx every module of src/ is there (a static import is a require, and a module of src/ named in
 * an `import()` is loaded by tsx as CommonJS too), and so is every package a static import loads.
 * Plain JavaScript: it runs before tsx is registered.
 */
'use strict';
const fs = require('node:fs');

const out = process.env.NOCTURNE_TEST_LOADED_MODULES;
if (out) process.on('exit', () => fs.writeFileSync(out, Object.keys(require.cache).join('\n')));
