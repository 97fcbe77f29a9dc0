/**
 * What the channel-neutral commands (src/channels/commands/) work with: the scope a command is
 * about, the domain services they use (each narrowed to the verbs called), and two small text
 * helpers. Telegram's chat scope and the terminal's scope both satisfy {@link CommandScope}, so
 * each command's logic and wording is written once and every channel only decides how to show
 * it (a message with buttons, a line on a terminal).
 */
import type { ScopeArchive } from '../../export/scope-archive';
import type { DigestBook } from '../../memory/digests/digest-book';
import type { ForgetService } from '../../memory/forget/forget-service';
import type { MemoryCatalog } from '../../memory/memories/memory-catalog';
import type { DigestScheduleService } from '../../memory/scopes/digest-schedule';
import type { ScopeControls } from '../../memory/scopes/scope-controls';
import type { ConflictBook } from '../../memory/memories/conflict-book';
import type { ConsolidationControl } from '../../memory/scopes/consolidation-control';
import type { ReminderBook } from '../../memory/reminders/reminder-book';
import type { MemoryCorrections } from '../../memory/memories/memory-corrections';

/**
 * The domain services behind the commands, by name: the memory catalog (/memories, /why), the
 * digest book (/digest, digest numbers), forgetting (/forget), the scope archive (/export), the
 * sleep scheduler (/sleep, /pause, /resume), the digest schedule (/digest at, /timezone), the
 * scope controls (/settings) and the conflict book (/keep). Every text they return is already filtered.
 */
export interface CommandServices {
  readonly catalog: Pick<MemoryCatalog, 'page' | 'categories' | 'explain' | 'isAbout'>;
  readonly digestBook: Pick<DigestBook, 'latestSent' | 'undelivered' | 'build' | 'claim' | 'currentContent' | 'markSent' | 'markFailed' | 'runChanges'>;
  readonly forget: Pick<ForgetService, 'prepareForget' | 'forgetMatching'>;
  readonly archive: Pick<ScopeArchive, 'export'>;
  readonly scheduler: Pick<ConsolidationControl, 'consolidateNow' | 'pause' | 'resume'>;
  /** The digest time, on/off and time zone (/digest at, /digest off, /timezone). */
  readonly digestSchedule: Pick<DigestScheduleService, 'get' | 'set'>;
  /** Capped mode, the sleep window and the daily budgets (/settings). */
  readonly scopeControls: Pick<ScopeControls, 'get' | 'set'>;
  /** Settling a contradiction the person answered (/keep N, a button under the digest). */
  readonly conflicts: Pick<ConflictBook, 'keep'>;
  /** The scope's reminders to come (/reminders, /reminders cancel N); absent: the command says they are unavailable. */
  readonly reminders?: Pick<ReminderBook, 'upcoming' | 'cancel'>;
  /** Correcting and pinning a memory (/fix N, /pin N, /unpin N); absent: the commands say they are unavailable. */
  readonly corrections?: Pick<MemoryCorrections, 'correct' | 'pin'>;
}

/** The scope a command acts on. */
export interface CommandScope {
  readonly id: string;
  readonly key: string;
  /** IANA zone for dates shown to the person (the scope's own, else the service default). */
  readonly timeZone: string;
}

/** `text` on one line (runs of white space folded), cut at `max` characters with an ellipsis. */
export function excerpt(text: string, max: number): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}
