/** Jest: TypeScript through SWC (no type-check here; `npm test` runs tsc first). */
/** @type {import('jest').Config} */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  transform: {
    '^.+\\.(t|j|mj)s$': ['@swc/jest', { jsc: { target: 'es2022' }, module: { type: 'commonjs' } }],
  },
  // The schema engine's bindings and secretlint's rule preset are ES modules; SWC turns them into CommonJS for Jest.
  transformIgnorePatterns: ['/node_modules/(?!@prisma/schema-engine-wasm/|@secretlint/secretlint-rule-preset-recommend/)'],
  globalSetup: '<rootDir>/test/support/global-setup.ts',
  globalTeardown: '<rootDir>/test/support/global-teardown.ts',
  testTimeout: 60_000,
  maxWorkers: 2,
};
