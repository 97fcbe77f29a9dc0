/**
 * A dry run's plan as a readable diff: what would be learned (+), confirmed (=), corrected (~),
 * flagged as contradicted (!), weakened (v) and linked (<>), reflection's insights (*), and what
 * was refused (x) and why.
 */
import type { Episode, Memory } from '../../storage/prisma';
import type { Plan } from './plan';
import { plural } from '../../shared/plural';

function cut(text: string, max = 120): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}

export function renderPlanDiff(plan: Plan, shown: { episodes: readonly Episode[]; memories: readonly Memory[] }): string {
  const memory = new Map(shown.memories.map((m) => [m.id, m]));
  const episode = new Map(shown.episodes.map((e) => [e.id, e]));
  const cite = (ids: readonly string[]) => ids.map((id) => episode.get(id)?.externalId ?? id.slice(0, 8)).join(', ');
  const text = (id: string) => cut(memory.get(id)?.content ?? id);
  const conf = (id: string) => memory.get(id)?.confidence.toFixed(2) ?? '?';
  const lines: string[] = [`Plan for ${plural(plan.episodeIds.length, 'episode')} (dry run: nothing applied)`, ''];
  for (const m of plan.create)
    lines.push(`+ [${m.category} ${m.confidence.toFixed(2)} ${m.sourceType}] ${cut(m.content)}   (from ${cite(m.sourceEpisodeIds)})`);
  for (const r of plan.reinforce)
    lines.push(
      `= ${text(r.memoryId)}   (confidence ${conf(r.memoryId)} -> ${Math.min(1, (memory.get(r.memoryId)?.confidence ?? 0) + 0.05).toFixed(2)}; ${r.reason || 'confirmed'})`,
    );
  for (const u of plan.update) lines.push(`~ ${text(u.memoryId)}`, `  -> ${cut(u.content)}   (${u.reason || 'corrected'}; from ${cite(u.sourceEpisodeIds)})`);
  for (const c of plan.contradict)
    lines.push(
      `! ${text(c.memoryId)}   (confidence ${conf(c.memoryId)} -> ${Math.max(0.1, (memory.get(c.memoryId)?.confidence ?? 0) - 0.2).toFixed(2)})`,
      `  conflicts with: ${cut(c.statement.content)}   (${c.reason || 'conflict'})`,
    );
  for (const d of plan.decay)
    lines.push(`v ${text(d.memoryId)}   (confidence ${conf(d.memoryId)} -> ${d.confidence.toFixed(2)}; ${d.reason || 'less likely'})`);
  for (const c of plan.connect) lines.push(`<> ${text(c.fromId)}  <->  ${text(c.toId)}   (${c.relationship})`);
  for (const m of plan.insights) lines.push(`* [insight ${m.confidence.toFixed(2)} inferred] ${cut(m.content)}   (from ${cite(m.sourceEpisodeIds)})`);
  for (const e of plan.entities) lines.push(`@ ${e.name} (${e.kind})${e.observations.length ? `: ${e.observations.map((o) => cut(o, 60)).join('; ')}` : ''}`);
  if (plan.summaries.length) lines.push(`  ${plural(plan.summaries.length, 'long episode')} summarized`);
  if (plan.importance.length) lines.push(`  ${plural(plan.importance.length, 'episode importance score')} from the model`);
  for (const r of plan.rejected) lines.push(`x ${r.operation}: ${r.reason}`);
  if (lines.length === 2) lines.push('(no changes)');
  return lines.join('\n');
}
