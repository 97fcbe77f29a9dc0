/**
 * The layer table of docs/architecture.md, read as data: each top folder of src/ and the folders
 * it may import. The table is the one statement of the layering; the architecture test, the import
 * graph printer and the linter's import rules (biome.layers.json) are all derived from it, so a
 * new arrow is allowed by editing the document, and only there.
 */
import fs from 'node:fs';
import path from 'node:path';

/** The document that holds the table, and the line that starts it. */
export const ARCHITECTURE_DOC = path.join(__dirname, '..', 'docs', 'architecture.md');
const HEADER = /^\|\s*folder\s*\|\s*owns\s*\|\s*may import\s*\|\s*$/;
const NAME = /`([^`]+)`/g;

/** folder -> the folders its files may import (itself always may). */
export type LayerTable = ReadonlyMap<string, ReadonlySet<string>>;

/**
 * Parses the `| folder | owns | may import |` table: the first cell names the folder (`(root)`
 * is the files directly in src/), the last lists the allowed folders in backticks ("nothing"
 * when none). Throws when the table is missing or a row cannot be read.
 */
export function parseLayerTable(markdown: string): LayerTable {
  const lines = markdown.split('\n');
  const start = lines.findIndex((line) => HEADER.test(line.trim()));
  if (start < 0) throw new Error('docs/architecture.md has no "| folder | owns | may import |" table');
  const table = new Map<string, Set<string>>();
  for (const line of lines.slice(start + 2)) {
    if (!line.trim().startsWith('|')) break;
    const cells = line
      .trim()
      .slice(1, -1)
      .split('|')
      .map((cell) => cell.trim());
    const folder = [...(cells[0] ?? '').matchAll(NAME)][0]?.[1];
    if (!folder || cells.length < 3) throw new Error(`docs/architecture.md: cannot read the layer row "${line.trim()}"`);
    table.set(folder, new Set([...cells[cells.length - 1]!.matchAll(NAME)].map((m) => m[1]!)));
  }
  return table;
}

/** The table as docs/architecture.md has it now. */
export function readLayerTable(file = ARCHITECTURE_DOC): LayerTable {
  return parseLayerTable(fs.readFileSync(file, 'utf8'));
}

/** The arrows of `graph` (`from -> to`, as importGraph gives them) the table does not allow. */
export function disallowedArrows(table: LayerTable, graph: ReadonlyMap<string, readonly string[]>): string[] {
  return [...graph.entries()]
    .filter(([edge]) => {
      const [from, to] = edge.split(' -> ') as [string, string];
      return !table.get(from)?.has(to);
    })
    .map(([edge, files]) => `${edge}: ${files.join(', ')}`)
    .sort();
}
