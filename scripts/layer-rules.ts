/**
 * Writes biome.layers.jsonc, the linter's import rules, from the layer table of
 * docs/architecture.md: for the files of each top folder, an import of a folder the table does
 * not allow is an error in the editor and in `npm test`. `npm run -s layer-rules` rewrites the
 * file; `--check` exits 1 when it is stale (the architecture test does the same check).
 */
import fs from 'node:fs';
import path from 'node:path';
import { readLayerTable, type LayerTable } from './layer-table';

/** Where the generated rules live (biome.json extends it). */
export const LAYER_RULES_FILE = path.join(__dirname, '..', 'biome.layers.jsonc');
/** How deep below a top folder files sit (src/memory/a/b/c.ts is depth 3); deeper files get no rule. */
const MAX_DEPTH = 4;

/** The Biome configuration that forbids, per folder, every import the table does not allow. */
export function layerRules(table: LayerTable): object {
  const folders = [...table.keys()].filter((f) => f !== '(root)').sort();
  const overrides: object[] = [];
  for (const folder of ['(root)', ...folders]) {
    const allowed = table.get(folder)!;
    const banned = folders.filter((f) => f !== folder && !allowed.has(f));
    if (banned.length === 0) continue;
    for (let depth = 0; depth < MAX_DEPTH; depth += 1) {
      if (folder === '(root)' && depth > 0) break;
      const up = folder === '(root)' ? './' : '../'.repeat(depth + 1);
      const includes = folder === '(root)' ? ['src/*.ts'] : [`src/${folder}/${'*/'.repeat(depth)}*.ts`];
      const patterns = banned.map((to) => ({
        group: [`${up}${to}`, `${up}${to}/**`],
        message: `${folder} may not import ${to}: see the layer table in docs/architecture.md`,
      }));
      overrides.push({ includes, linter: { rules: { style: { noRestrictedImports: { level: 'error', options: { patterns } } } } } });
    }
  }
  return { overrides };
}

/** The file's text as the generator writes it. */
export function layerRulesText(table: LayerTable = readLayerTable()): string {
  return `// Generated from the layer table of docs/architecture.md by \`npm run -s layer-rules\`; do not edit.\n${JSON.stringify(layerRules(table), null, 2)}\n`;
}

if (require.main === module) {
  const text = layerRulesText();
  if (process.argv.includes('--check')) {
    const stale = !fs.existsSync(LAYER_RULES_FILE) || fs.readFileSync(LAYER_RULES_FILE, 'utf8') !== text;
    if (stale) console.error('biome.layers.jsonc is stale: run `npm run -s layer-rules`');
    process.exitCode = stale ? 1 : 0;
  } else {
    fs.writeFileSync(LAYER_RULES_FILE, text);
  }
}
