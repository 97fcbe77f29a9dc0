/**
 * Prints the import graph between the top folders of src/ (channels, agent, memory, storage,
 * ...): one line per arrow with how many imports make it, then any arrow the layering forbids
 * (docs/architecture.md). `npm run -s import-graph` (add `--json` for machines). Exit status 1
 * when a forbidden arrow exists.
 */
import { FORBIDDEN, folderOf, importGraph } from './import-graph-lib';

const graph = importGraph('src');
const json = process.argv.includes('--json');
const edges = [...graph.entries()].sort(([a], [b]) => a.localeCompare(b));
const broken = edges.filter(([edge]) => FORBIDDEN.some(([from, to]) => edge === `${from} -> ${to}`));
if (json) {
  console.log(JSON.stringify({ edges: Object.fromEntries(edges.map(([edge, files]) => [edge, files.length])), forbidden: broken.map(([edge]) => edge) }));
} else {
  for (const [edge, files] of edges) console.log(`${edge.padEnd(32)} ${files.length}`);
  for (const [edge, files] of broken) console.log(`FORBIDDEN ${edge}: ${files.join(', ')}`);
}
void folderOf;
process.exitCode = broken.length > 0 ? 1 : 0;
