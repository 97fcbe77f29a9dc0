/**
 * The memory page's timeline: night by night, what sleep learned, changed and let fade, read from
 * the memory writer's audit events (`create` of a new memory, `update` when a new version replaced
 * one, `deactivate` when one faded), and that night's digest. Days are the scope's local dates (its
 * own zone, else the default), so a chart's bars fall where the person's evenings do.
 *
 * For a member of a group who is not its administrator, only events on memories in their reach
 * are counted, and no digest is shown (a digest speaks of the whole group).
 */
import type { PrismaClient } from '../../storage/prisma';
import { aboutSpeaker } from '../memories/speakers';
import { showStored } from '../output-filter';
import { scopeTimeZone } from '../scopes/scope-policy';
import type { PageReach } from './page-memories';

/** One night on the timeline. */
export interface TimelineNight {
  /** The local date, YYYY-MM-DD. */
  readonly date: string;
  readonly learned: number;
  readonly updated: number;
  readonly faded: number;
  /** The digest of that day's period, when one was written. */
  readonly digest: string | null;
}

/** Longest timeline asked for, in days. */
export const MAX_TIMELINE_DAYS = 366;
const DAY_MS = 86_400_000;

/** Audit actions of the memory writer, by what the timeline counts them as. */
const COUNTED: Readonly<Record<string, 'learned' | 'updated' | 'faded'>> = { create: 'learned', update: 'updated', deactivate: 'faded' };

/** YYYY-MM-DD of `at` in `timeZone`. */
function localDate(at: Date, timeZone: string): string {
  return new Intl.DateTimeFormat('en-CA', { timeZone, year: 'numeric', month: '2-digit', day: '2-digit' }).format(at);
}

export interface PageTimeline {
  /** The last `days` local dates up to `now`, oldest first, every one present (zeros when quiet). */
  nights(reach: PageReach, days: number, now: Date): Promise<TimelineNight[]>;
}

export function createPageTimeline(deps: { prisma: PrismaClient; defaultTimeZone: string }): PageTimeline {
  const { prisma } = deps;
  return {
    async nights(reach, days, now) {
      const scope = await prisma.scope.findUnique({ where: { id: reach.scopeId }, select: { timezone: true } });
      const zone = scopeTimeZone({ timezone: scope?.timezone ?? null }, deps.defaultTimeZone);
      const since = new Date(now.getTime() - days * DAY_MS);
      const events = await prisma.auditEvent.findMany({
        where: { scopeId: reach.scopeId, subjectType: 'memory', action: { in: Object.keys(COUNTED) }, createdAt: { gte: since } },
        select: { action: true, subjectId: true, after: true, createdAt: true },
      });
      let inReach: Set<string> | undefined;
      if (reach.speakerId !== undefined) {
        const rows = await prisma.memory.findMany({ where: { scopeId: reach.scopeId, ...aboutSpeaker(reach.speakerId) }, select: { id: true } });
        inReach = new Set(rows.map((r) => r.id));
      }
      const nights = new Map<string, { learned: number; updated: number; faded: number; digest: string | null }>();
      for (let i = days - 1; i >= 0; i--) nights.set(localDate(new Date(now.getTime() - i * DAY_MS), zone), { learned: 0, updated: 0, faded: 0, digest: null });
      for (const event of events) {
        if (inReach && !inReach.has(event.subjectId ?? '')) continue;
        // A new version is counted once, as the change of the memory it replaced.
        const after = event.after as { supersedes?: unknown } | null;
        if (event.action === 'create' && after?.supersedes) continue;
        const night = nights.get(localDate(event.createdAt, zone));
        if (night) night[COUNTED[event.action]!]++;
      }
      if (!inReach) {
        const digests = await prisma.digest.findMany({
          where: { scopeId: reach.scopeId, periodEnd: { gte: since }, status: { not: 'empty' } },
          orderBy: { periodEnd: 'asc' },
          select: { periodEnd: true, content: true },
        });
        for (const digest of digests) {
          const night = nights.get(localDate(digest.periodEnd, zone));
          if (night) night.digest = showStored(digest.content);
        }
      }
      return [...nights].map(([date, n]) => ({ date, ...n }));
    },
  };
}
