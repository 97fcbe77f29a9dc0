/**
 * Forgetting by words reaches reminders: a reminder whose text holds the words goes whole (sent,
 * waiting or cancelled alike), since a reminder with the words cut out would remind of nothing.
 * One still waiting is then never sent: its delivery reads the row again after the claim.
 */
import type { Tx } from '../forget/redact-derived';

/** Deletes the scope's reminders whose text holds the words; returns how many went. */
export async function forgetReminderWords(tx: Pick<Tx, 'reminder'>, scopeId: string, holds: (text: string) => boolean): Promise<number> {
  const rows = await tx.reminder.findMany({ where: { scopeId }, select: { id: true, text: true } });
  const gone = rows.filter((r) => holds(r.text)).map((r) => r.id);
  if (gone.length > 0) await tx.reminder.deleteMany({ where: { scopeId, id: { in: gone } } });
  return gone.length;
}
