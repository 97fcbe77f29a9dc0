/**
 * Issue 17, install: `engines` in package.json says what the service needs, and agrees with the
 * dependencies. Every runtime (non-dev) package in package-lock.json must accept the lowest Node
 * version `engines` allows, except the two listed below, which `npm install` warns about
 * (EBADENGINE) but which are never loaded by `npm start`, the CLI or `prisma generate`
 * (checked with strace on Node 20.20; see README "Node.js version"). A new exception needs the
 * same check and a line here.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from '@jest/globals';
// semver is in the tree (jest, prisma, ...); a test-only use.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const semver = require('semver') as { minVersion(range: string): { version: string } | null; satisfies(version: string, range: string): boolean };

const ROOT = path.resolve(__dirname, '..', '..');

/** Wants Node >= 22 but is not loaded at runtime on Node 20. */
const NOT_LOADED: Record<string, string> = {
  // ESM-only; required by light-my-request, which fastify requires lazily, only for app.inject().
  'node_modules/cookie': 'fastify inject() only',
  // The local database server behind `prisma dev`; `prisma generate` does not load it.
  'node_modules/@prisma/streams-local': 'prisma dev only',
};

describe('engines agree with the dependencies (issue 17)', () => {
  const pkg = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { engines: { node: string } };
  const lock = JSON.parse(fs.readFileSync(path.join(ROOT, 'package-lock.json'), 'utf8')) as {
    packages: Record<string, { version?: string; dev?: boolean; engines?: { node?: string } | string[] }>;
  };
  const lowest = semver.minVersion(pkg.engines.node)!.version;

  it('the lock file carries the same engines as package.json', () => {
    expect((lock.packages[''] as { engines?: { node?: string } }).engines?.node).toBe(pkg.engines.node);
  });

  it(`every runtime dependency accepts Node ${lowest}, the lowest engines allows`, () => {
    const refusing = Object.entries(lock.packages)
      .filter(([name, entry]) => name !== '' && !entry.dev && entry.engines && !Array.isArray(entry.engines) && entry.engines.node)
      .filter(([, entry]) => !semver.satisfies(lowest, (entry.engines as { node: string }).node))
      .map(([name, entry]) => `${name}@${entry.version} wants node ${(entry.engines as { node: string }).node}`);
    expect(refusing.filter((line) => !Object.keys(NOT_LOADED).some((name) => line.startsWith(`${name}@`)))).toEqual([]);
  });

  it('the node running the tests is one engines allows', () => {
    expect(semver.satisfies(process.version, pkg.engines.node)).toBe(true);
  });
});
