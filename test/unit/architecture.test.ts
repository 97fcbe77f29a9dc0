/**
 * The layering of docs/architecture.md, read from the source as it is. The document's layer
 * table is the only list of allowed arrows: an import between top folders of src/ that the
 * table does not list fails here, naming the file; every folder must have a row, and the
 * linter's import rules (biome.layers.jsonc) must be the ones the table generates.
 */
import { describe, expect, it } from '@jest/globals';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { importGraph } from '../../scripts/import-graph-lib';
import { disallowedArrows, parseLayerTable, readLayerTable } from '../../scripts/layer-table';
import { LAYER_RULES_FILE, layerRulesText } from '../../scripts/layer-rules';

const SRC = path.join(__dirname, '../../src');
const DOORS = ['channels', 'agent', 'api', 'cli', 'mcp'];
const PRISMA = /\bprisma\b|@prisma\//;

function filesUnder(dir: string): string[] {
  if (!fs.existsSync(dir)) return [];
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    return entry.isDirectory() ? filesUnder(full) : entry.name.endsWith('.ts') ? [full] : [];
  });
}

describe('architecture', () => {
  const table = readLayerTable();

  it('the doors (channels, agent, API, CLI, MCP) never mention Prisma', () => {
    const offenders = DOORS.flatMap((door) => filesUnder(path.join(SRC, door)))
      .filter((file) => PRISMA.test(fs.readFileSync(file, 'utf8')))
      .map((file) => path.relative(SRC, file));
    expect(offenders).toEqual([]);
  });

  it('every top folder of src/ has a row in the layer table, and every row a folder', () => {
    const folders = fs
      .readdirSync(SRC, { withFileTypes: true })
      .filter((e) => e.isDirectory())
      .map((e) => e.name);
    expect([...table.keys()].sort()).toEqual(['(root)', ...folders].sort());
    for (const allowed of table.values()) for (const to of allowed) expect([...table.keys()]).toContain(to);
  });

  it('every import between top folders is an arrow the layer table allows', () => {
    expect(disallowedArrows(table, importGraph(SRC))).toEqual([]);
  });

  it('the linter enforces the same table (biome.layers.jsonc is generated from it and current)', () => {
    expect(fs.readFileSync(LAYER_RULES_FILE, 'utf8')).toBe(layerRulesText(table));
  });

  it('the check can fail: an arrow the table does not list is reported with its file', () => {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), 'nocturne-layers-'));
    try {
      fs.mkdirSync(path.join(root, 'memory', 'forget'), { recursive: true });
      fs.mkdirSync(path.join(root, 'channels'));
      fs.writeFileSync(path.join(root, 'channels', 'bot.ts'), "import { forget } from '../memory/forget/forget';\n");
      fs.writeFileSync(path.join(root, 'memory', 'forget', 'forget.ts'), "import type { Bot } from '../../channels/bot';\n");
      const doc = ['| folder | owns | may import |', '|---|---|---|', '| `channels` | chat | `memory` |', '| `memory` | rules | nothing |'].join('\n');
      expect(disallowedArrows(parseLayerTable(doc), importGraph(root))).toEqual(['memory -> channels: memory/forget/forget.ts']);
    } finally {
      fs.rmSync(root, { recursive: true, force: true });
    }
  });

  it('a table that cannot be read is an error, not an empty allowance', () => {
    expect(() => parseLayerTable('# no table here')).toThrow(/no "\| folder \| owns \| may import \|" table/);
    expect(() => parseLayerTable('| folder | owns | may import |\n|---|---|---|\n| channels | chat |')).toThrow(/cannot read the layer row/);
  });
});
