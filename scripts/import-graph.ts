/**
 * Prints the import graph between the top folders of src/ (channels, agent, memory, storage,
 * ...): one line per arrow with how many files make it, then any arrow the layer table of
 * docs/architecture.md does not allow. `npm run -s import-graph` (add `--json` for machines).
 * Exit status 1 when a disallowed arrow exists.
 */
import { importGraph } from './import-graph-lib';
import { disallowedArrows, readLayerTable } from './layer-table';

const graph = importGraph('src');
const json = process.argv.includes('--json');
const edges = [...graph.entries()].sort(([a], [b]) => a.localeCompare(b));
const broken = disallowedArrows(readLayerTable(), graph);
if (json) {
  console.log(JSON.stringify({ edges: Object.fromEntries(edges.map(([edge, files]) => [edge, files.length])), disallowed: broken }));
} else {
  for (const [edge, files] of edges) console.log(`${edge.padEnd(32)} ${files.length}`);
  for (const line of broken) console.log(`NOT ALLOWED ${line}`);
}
process.exitCode = broken.length > 0 ? 1 : 0;
