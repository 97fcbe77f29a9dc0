/**
 * A scope's digest schedule as its person sets it: the local time of the daily digest
 * (`/digest at 21:30`), whether it is sent at all (`/digest off`, `/digest on`), and the scope's
 * time zone (`/timezone Europe/Madrid`). Chat commands, the CLI and the admin API all change it
 * here, so every door validates the same way and every change is audited the same way
 * (`AuditEvent` action `settings` on the scope, with the fields before and after, like
 * `pause`/`resume`).
 *
 * The digest time and on/off live in the `Scope.settings` document (other keys in it are kept);
 * the zone in `Scope.timezone`. Every turn and job resolves the scope policy (`scope-policy.ts`)
 * from the row as it is then, so a change takes effect at the next reply or check, without a
 * restart; a new zone also renders the soul again, since it states the zone. A change also records `digestFrom` (now): a digest
 * time that had already passed today when it was set is due at its next occurrence, so setting
 * 21:30 at 22:00 never produces an immediate digest of a period that ended before the change.
 */
import { NotFoundError, ValidationError } from '../../shared/errors';
import { digestInstant, isValidTimeZone, parseClockTime } from '../../shared/local-time';
import type { Prisma, PrismaClient, Scope } from '../../storage/prisma';
import { regenerateSoulIn } from '../profiles/soul';
import { DEFAULT_CONSOLIDATION_ATTEMPTS, requirePolicy } from './scope-policy';
import { requireReadableSettings, settingsAuditEvent } from './settings-write';

/** What a person sees of their digest schedule. */
export interface DigestSchedule {
  readonly scopeId: string;
  readonly scopeKey: string;
  /** Whether the scheduled digest is sent. */
  readonly enabled: boolean;
  /** HH:MM in {@link DigestSchedule.timeZone}. */
  readonly time: string;
  /** Whether the time is the service's DIGEST_TIME (none set for the scope). */
  readonly timeIsDefault: boolean;
  /** IANA zone. */
  readonly timeZone: string;
  /** Whether the zone is the service's TZ (none set for the scope). */
  readonly timeZoneIsDefault: boolean;
  /** The next scheduled digest; null when off. */
  readonly next: Date | null;
  /**
   * Whether scheduled digests can reach anyone: they go to a scope's owner (a private chat's
   * person). A group has no owner; its digest is read with `/digest`.
   */
  readonly delivered: boolean;
  /** When this was read (the service's clock). */
  readonly at: Date;
}

/** A change of the schedule; absent fields stay as they are. */
export interface DigestScheduleChange {
  /** HH:MM, 24-hour. */
  readonly time?: string;
  readonly enabled?: boolean;
  /** IANA zone, e.g. Europe/Madrid (any case; stored in its canonical spelling). */
  readonly timeZone?: string;
}

/** Who asked, for the audit event's reason. */
export interface ScheduleOrigin {
  readonly reason?: string;
}

export interface DigestScheduleService {
  /** The schedule of a scope (NotFoundError for an unknown one). */
  get(scopeId: string): Promise<DigestSchedule>;
  /**
   * Validates and applies a change (ValidationError naming the field; nothing written), audits
   * the fields that changed, and returns the schedule as it is now.
   */
  set(scopeId: string, change: DigestScheduleChange, origin?: ScheduleOrigin): Promise<DigestSchedule>;
}

export interface DigestScheduleDefaults {
  /** DIGEST_TIME. */
  readonly digestTime: string;
  /** TZ. */
  readonly timeZone: string;
  /** SOUL_MAX_TOKENS: the soul is rendered again when the zone changes (it states the zone). */
  readonly soulMaxTokens?: number;
}

const DAY_MS = 24 * 60 * 60 * 1000;

/** The canonical spelling of an IANA zone (`europe/madrid` -> `Europe/Madrid`), or null when it is not one. */
export function canonicalTimeZone(zone: string): string | null {
  const trimmed = zone.trim();
  if (trimmed === '' || !isValidTimeZone(trimmed)) return null;
  return new Intl.DateTimeFormat('en-US', { timeZone: trimmed }).resolvedOptions().timeZone;
}

/** The first digest instant at or after `from` (today's, or tomorrow's when today's has passed). */
export function nextDigestInstant(from: Date, time: string, timeZone: string): Date {
  const today = digestInstant(from, time, timeZone);
  if (today.getTime() >= from.getTime()) return today;
  // A day later on the wall clock: 24 h lands on the next local date even on 23- and 25-hour days.
  return digestInstant(new Date(today.getTime() + DAY_MS), time, timeZone);
}

function settingsObject(value: Prisma.JsonValue | null): Record<string, unknown> {
  return value && typeof value === 'object' && !Array.isArray(value) ? { ...(value as Record<string, unknown>) } : {};
}

export function createDigestScheduleService(
  prisma: PrismaClient,
  defaults: DigestScheduleDefaults,
  clock: () => Date = () => new Date(),
): DigestScheduleService {
  function describe(scope: Scope, now: Date): DigestSchedule {
    const stored = settingsObject(scope.settings);
    // Only the digest's part of the policy is read here; the budgets are not shown.
    const settings = requirePolicy(scope, {
      digestTime: defaults.digestTime,
      dailyTokenBudget: 0,
      idleMinutes: 0,
      timeZone: defaults.timeZone,
      consolidationAttempts: DEFAULT_CONSOLIDATION_ATTEMPTS,
    });
    const from = settings.digestFrom && settings.digestFrom.getTime() > now.getTime() ? settings.digestFrom : now;
    return {
      scopeId: scope.id,
      scopeKey: scope.key,
      enabled: settings.digestEnabled,
      time: settings.digestTime,
      timeIsDefault: typeof stored.digestTime !== 'string',
      timeZone: settings.timeZone,
      timeZoneIsDefault: settings.timeZoneIsDefault,
      next: settings.digestEnabled ? nextDigestInstant(from, settings.digestTime, settings.timeZone) : null,
      delivered: scope.ownerId !== null,
      at: now,
    };
  }

  async function load(scopeId: string): Promise<Scope> {
    const scope = await prisma.scope.findUnique({ where: { id: scopeId } });
    if (!scope) throw new NotFoundError(`no scope ${scopeId}`, { code: 'scope.not_found' });
    return scope;
  }

  function validate(change: DigestScheduleChange): { time?: string; enabled?: boolean; timeZone?: string } {
    const problems: string[] = [];
    let timeZone: string | undefined;
    if (change.time !== undefined) {
      try {
        parseClockTime(change.time);
      } catch {
        problems.push(`time: "${change.time}" is not a time of day as HH:MM, 24-hour (e.g. 21:30)`);
      }
    }
    if (change.timeZone !== undefined) {
      timeZone = canonicalTimeZone(change.timeZone) ?? undefined;
      if (!timeZone) problems.push(`timezone: "${change.timeZone}" is not an IANA time zone such as Europe/Madrid, America/New_York or UTC`);
    }
    if (change.enabled !== undefined && typeof change.enabled !== 'boolean') problems.push('enabled: must be true or false');
    if (problems.length > 0) {
      throw new ValidationError(problems.join('; '), { code: 'scope.settings_invalid', details: { problems } });
    }
    return { time: change.time, enabled: change.enabled, timeZone };
  }

  return {
    async get(scopeId) {
      return describe(await load(scopeId), clock());
    },

    async set(scopeId, change, origin = {}) {
      const wanted = validate(change);
      const now = clock();
      await prisma.$transaction(async (tx) => {
        const scope = await tx.scope.findUnique({ where: { id: scopeId } });
        if (!scope) throw new NotFoundError(`no scope ${scopeId}`, { code: 'scope.not_found' });
        const settings = settingsObject(scope.settings);
        const before: Record<string, unknown> = {};
        const after: Record<string, unknown> = {};
        if (wanted.time !== undefined && settings.digestTime !== wanted.time) {
          before.digestTime = settings.digestTime ?? null;
          after.digestTime = wanted.time;
          settings.digestTime = wanted.time;
        }
        if (wanted.enabled !== undefined && (settings.digestEnabled ?? true) !== wanted.enabled) {
          before.digestEnabled = settings.digestEnabled ?? true;
          after.digestEnabled = wanted.enabled;
          settings.digestEnabled = wanted.enabled;
        }
        const zoneChanged = wanted.timeZone !== undefined && scope.timezone !== wanted.timeZone;
        if (zoneChanged) {
          before.timezone = scope.timezone;
          after.timezone = wanted.timeZone;
        }
        if (Object.keys(after).length === 0) return;
        // Times set (or moved by a new zone) apply from their next occurrence after now.
        settings.digestFrom = now.toISOString();
        // The stored document must stay readable by the scheduler: check it before writing.
        requireReadableSettings(settings);
        await tx.scope.update({
          where: { id: scopeId },
          data: { settings: settings as Prisma.InputJsonObject, ...(zoneChanged ? { timezone: wanted.timeZone } : {}) },
        });
        await tx.auditEvent.create({ data: settingsAuditEvent(scopeId, { before, after }, origin.reason ?? null, now) });
        // The soul states the zone and its "last updated" time in it: rendered again now, in the
        // same transaction, the next reply's prompt shows the new zone (not the old one until sleep).
        if (zoneChanged) await regenerateSoulIn(tx, scopeId, { now, defaultTimeZone: defaults.timeZone, maxTokens: defaults.soulMaxTokens });
      });
      return describe(await load(scopeId), now);
    },
  };
}
