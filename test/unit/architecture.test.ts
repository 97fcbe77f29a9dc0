/**
 * The layering of docs/architecture.md, read from the source as it is: the doors (channels,
 * agent, API, CLI) never use Prisma, and no import runs against the layers' direction. A new
 * file that reaches around the memory domain fails here, naming the file.
 */
import { describe, expect, it } from '@jest/globals';
import fs from 'node:fs';
import path from 'node:path';
import { FORBIDDEN, importGraph } from '../../scripts/import-graph-lib';

const SRC = path.join(__dirname, '../../src');
const DOORS = ['channels', 'agent', 'api', 'cli', 'mcp'];
const PRISMA = /\bprisma\b|@prisma\//;

function filesUnder(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    return entry.isDirectory() ? filesUnder(full) : entry.name.endsWith('.ts') ? [full] : [];
  });
}

describe('architecture', () => {
  it('channels, agent, API, CLI and MCP never mention Prisma', () => {
    const offenders = DOORS.flatMap((door) => filesUnder(path.join(SRC, door)))
      .filter((file) => PRISMA.test(fs.readFileSync(file, 'utf8')))
      .map((file) => path.relative(SRC, file));
    expect(offenders).toEqual([]);
  });

  it('no import runs against the layering', () => {
    const graph = importGraph(SRC);
    const broken = FORBIDDEN.map(([from, to]) => `${from} -> ${to}`)
      .filter((edge) => graph.has(edge))
      .map((edge) => `${edge}: ${graph.get(edge)!.join(', ')}`);
    expect(broken).toEqual([]);
  });

  it('the graph reader sees the arrows the code has (it can fail)', () => {
    const graph = importGraph(SRC);
    expect(graph.get('sleep -> memory')?.length ?? 0).toBeGreaterThan(0);
    expect(graph.get('(root) -> memory')?.length ?? 0).toBeGreaterThan(0);
    expect(graph.get('mcp -> memory')?.length ?? 0).toBeGreaterThan(0);
  });
});
