/**
 * The import graph between the top folders of src/, read from the source text (static imports,
 * `export ... from` and dynamic `import()`). Used by `scripts/import-graph.ts` and by the
 * architecture test, so both read the code the same way; what is allowed is the layer table of
 * docs/architecture.md (`layer-table.ts`).
 */
import fs from 'node:fs';
import path from 'node:path';

/** `src/memory/forget/x.ts` -> `memory`; files directly in src/ -> `(root)`. */
export function folderOf(root: string, file: string): string {
  const rel = path.relative(root, file).split(path.sep);
  return rel.length > 1 ? rel[0]! : '(root)';
}

/** Every .ts file under `dir`, the generated Prisma clients left out. */
export function sourceFiles(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return entry.name === 'generated' ? [] : sourceFiles(full);
    return entry.name.endsWith('.ts') ? [full] : [];
  });
}

const IMPORT = /(?:\bfrom\s+|\bimport\s*\(\s*|\bimport\s+)['"](\.{1,2}\/[^'"]+)['"]/g;

/** Every arrow `from -> to` between different top folders, with the files that make it. */
export function importGraph(root: string): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const file of sourceFiles(root)) {
    const from = folderOf(root, file);
    for (const match of fs.readFileSync(file, 'utf8').matchAll(IMPORT)) {
      const target = path.resolve(path.dirname(file), match[1]!);
      const to = folderOf(root, target);
      if (to === from || to.startsWith('..')) continue;
      const edge = `${from} -> ${to}`;
      const files = graph.get(edge) ?? [];
      if (!files.includes(path.relative(root, file))) files.push(path.relative(root, file));
      graph.set(edge, files);
    }
  }
  return graph;
}
