/**
 * Reminders through the real service: `npm start` (child processes) long polling the loopback Bot
 * API, or two replicas in webhook mode on one PostgreSQL, with the loopback model calling
 * `reminder_set` the way a model answers "remind me in 40 s to ...", in the person's local time.
 *
 * - A reminder set before a SIGTERM fires after the restart, at its time (not before), once.
 * - One due while the service was down is sent at the restart, once, marked "(late)".
 * - The time is the scope's own zone (set by /timezone), not the service's TZ nor UTC.
 * - `/reminders` lists them in the person's zone and `/reminders cancel N` cancels number N.
 * - Forgetting words (the CLI's `forget --words`) deletes the reminders holding them.
 * - Two replicas on one PostgreSQL, both looking every second, send each reminder exactly once.
 * - In the terminal of `npm start`: printed when due while it is open, and "(late)" at the next
 *   start when it came due while it was closed.
 *
 * The three tests run side by side (each has its own doubles and store): most of their time is
 * waiting for reminders to come due, and each due time is set from what its test needs.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { spawn } from 'node:child_process';
import path from 'node:path';
import pg from 'pg';
import { startAnthropicDouble, type AnthropicDouble } from '../doubles/anthropic-server';
import { lastUserText, type ScriptedLlmReply, type SeenLlmRequest } from '../doubles/llm-script';
import { startOllamaDouble } from '../doubles/ollama-server';
import { startFakeTelegram, type FakeTelegramServer, type FakeUser } from '../doubles/telegram-server';
import { freePort, startReplica, stopReplica, webhookEnv } from '../integration/telegram-webhook-support';
import { createPostgresDatabase, migratedDataDir, postgresAvailable, postgresSkipReason, tempDir } from '../support/databases';
import { cleanEnv, nodeArgs, ROOT } from '../support/run-process';
import type { Entry } from './crash-support';
import { openSqlite, runCliToEnd, sleepMs, startNow } from './crash-support';

/** The service's default zone; the person's own (set by /timezone) is another, hours apart from it and from UTC. */
const SERVICE_ZONE = 'Asia/Tokyo';
const PERSON_ZONE = 'America/New_York';
/** Reminders are looked for every second; one sent more than LATE_S after its time says "(late)". */
const CHECK_S = 1;
/**
 * Ten passes: a reminder due while the service runs is claimed within a pass or two of its time
 * (0.0-0.3 s after it, seen on the loaded 2-core machine), far inside this; every wait for a
 * missed reminder is derived from it.
 */
const LATE_S = 10;
/** A missed reminder is this far past the late threshold when the service comes back. */
const PAST_LATE_S = 5;
/**
 * After the last send a test waits for, this many passes more (of every replica) have run: a
 * duplicate would come from the pass after the send, so a few passes are time enough for one.
 */
const DUPLICATE_WATCH_MS = 3 * CHECK_S * 1000;
/**
 * The least time a restart is given before the reminder it must send on time comes due; more
 * when the first start was slow (a restart of the same store on the same machine takes about as
 * long, without the migrations a first start may run).
 */
const MIN_RESTART_MS = 20_000;
const RESTART_ALLOWANCE_FACTOR = 3;
/** The replicas test's reminders are due this long after it begins setting them (nine replies: ~2 s). */
const REPLICAS_SET_LEAD_MS = 20_000;
/** Time allowed for anything a loaded 2-core machine does slowly (start-up, a reply). */
const SLOW_MS = 90_000;

const ana: FakeUser = { id: 7_300_001, first_name: 'Ana' };

/** `YYYY-MM-DD HH:MM:SS`: the wall clock of `zone` at `instant`, as the model writes a local time. */
function localStamp(instant: Date, zone: string): string {
  const parts = Object.fromEntries(
    new Intl.DateTimeFormat('en-US', {
      timeZone: zone,
      hourCycle: 'h23',
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      second: '2-digit',
    })
      .formatToParts(instant)
      .map((p) => [p.type, p.value]),
  );
  return `${parts.year}-${parts.month}-${parts.day} ${parts.hour}:${parts.minute}:${parts.second}`;
}

/** "remind me in 40 s to X" or "remind me at <epoch ms> to X": the instant (whole seconds) and X. */
const ASK = /remind me (?:in (\d+) s|at (\d{13})) to ([^\n]+)/;

/**
 * A model that answers "remind me ..." with a `reminder_set` call in the person's local time, and
 * the tool's result with "Done: <result>". `asked` records each reminder's instant by its text.
 */
async function startReminderModel(zone: string): Promise<{ double: AnthropicDouble; asked: Map<string, number> }> {
  const asked = new Map<string, number>();
  const double = await startAnthropicDouble({
    responder: (seen: Omit<SeenLlmRequest, 'reply'>): ScriptedLlmReply => {
      if (seen.tools.length === 0) return { kind: 'text', text: '{}' };
      const last = seen.messages[seen.messages.length - 1];
      if (last?.role === 'tool') return { kind: 'text', text: `Done: ${last.text}` };
      const match = ASK.exec(lastUserText(seen.messages));
      if (!match) return { kind: 'text', text: 'Noted.' };
      const at = match[2] ? Number(match[2]) : Math.floor((Date.now() + Number(match[1]) * 1000) / 1000) * 1000;
      const text = match[3]!.trim();
      asked.set(text, at);
      return { kind: 'tool_use', calls: [{ id: `call-${asked.size}`, name: 'reminder_set', arguments: { text, at: localStamp(new Date(at), zone) } }] };
    },
  });
  return { double, asked };
}

/** The bot's messages to a chat that are reminders of `text`, with when they were sent. */
function remindersOf(fake: FakeTelegramServer, chatId: number, text: string): Array<{ text: string; at: number }> {
  return fake
    .calls('sendMessage')
    .filter((c) => Number(c.payload.chat_id) === chatId && !c.fault)
    .map((c) => ({ text: String(c.payload.text ?? ''), at: c.at }))
    .filter((m) => m.text.startsWith('⏰ Reminder') && m.text.includes(text));
}

/** Sends `text` and waits for the bot's next message to the chat; returns its text. */
async function say(fake: FakeTelegramServer, person: FakeUser, text: string, expect: RegExp): Promise<string> {
  const before = fake.sent(person.id).length;
  fake.message(person, text);
  await fake.waitFor(
    () =>
      fake
        .sent(person.id)
        .slice(before)
        .some((m) => expect.test(m.text ?? '')),
    SLOW_MS,
    `the answer to "${text}"`,
  );
  return fake
    .sent(person.id)
    .slice(before)
    .map((m) => m.text ?? '')
    .find((t) => expect.test(t))!;
}

/** `npm start` with the terminal on stdin (kept open until `close()`); its output as it comes. */
function startTerminal(env: NodeJS.ProcessEnv) {
  const child = spawn(process.execPath, nodeArgs('src/main.ts'), { env, cwd: ROOT, stdio: ['pipe', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (err += chunk.toString()));
  const ended = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
  return {
    say: (line: string) => void child.stdin.write(`${line}\n`),
    output: () => out,
    logs: () => err,
    /** Ends the input (the terminal is left, the service stops); SIGKILL when it has not ended after 20 s. */
    async close(): Promise<number | null> {
      child.stdin.end();
      const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
      const code = await ended;
      clearTimeout(timer);
      return code;
    },
  };
}

async function until(condition: () => boolean, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (!condition() && Date.now() < deadline) await sleepMs(100);
  return condition();
}

/** Lines of terminal output that are reminders of `text`. */
const printed = (output: string, text: string): string[] => output.split('\n').filter((l) => l.startsWith('⏰ Reminder') && l.includes(text));

describe('reminders: at the person’s local time, once, across restarts and replicas', () => {
  const cleanups: Array<() => Promise<unknown>> = [];
  afterAll(async () => {
    for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
  });
  const track = (entry: Entry): Entry => {
    cleanups.push(() => stopReplica(entry, 10_000));
    return entry;
  };

  async function acrossARestart(): Promise<void> {
    const fake = await startFakeTelegram();
    cleanups.push(() => fake.close());
    const model = await startReminderModel(PERSON_ZONE);
    cleanups.push(() => model.double.stop());
    const ollama = await startOllamaDouble({ models: ['nomic-embed-text'] });
    cleanups.push(() => ollama.stop());
    const dataDir = migratedDataDir(path.join(tempDir('nocturne-reminders-'), 'data'));
    const env = cleanEnv({
      DATA_DIR: dataDir,
      TERMINAL: 'off',
      SLEEP_ENABLED: 'false',
      TZ: SERVICE_ZONE,
      TELEGRAM_BOT_TOKEN: fake.token,
      TELEGRAM_API_ROOT: fake.apiRoot,
      TELEGRAM_ALLOWED_USERS: String(ana.id),
      ANTHROPIC_API_KEY: 'sk-ant-reminders-test-0000000000',
      ANTHROPIC_BASE_URL: model.double.url,
      EMBEDDER: 'ollama',
      EMBEDDING_MODEL: 'nomic-embed-text',
      OLLAMA_HOST: ollama.url,
      REMINDER_CHECK_SECONDS: String(CHECK_S),
      REMINDER_LATE_SECONDS: String(LATE_S),
      LOG_LEVEL: 'info',
    });

    const startedAt = Date.now();
    const first = track(await startReplica(env));
    const firstStartMs = Date.now() - startedAt;
    await say(fake, ana, `/timezone ${PERSON_ZONE}`, /New_York/);
    // Missed: due 15 s from now, while the service is down (the rest of this session takes a few seconds).
    const missedAnswer = await say(fake, ana, 'remind me in 15 s to water the ferns', /^Done: /);
    // The restart comes once the ferns are past the late threshold. On time: due after the restart,
    // once it has had time to be ready (a whole second, as the model writes it).
    const fernsAt = model.asked.get('water the ferns')!;
    const restartAt = fernsAt + (LATE_S + PAST_LATE_S) * 1000;
    const restartAllowanceMs = Math.max(MIN_RESTART_MS, RESTART_ALLOWANCE_FACTOR * firstStartMs);
    const dentistDue = Math.ceil((restartAt + restartAllowanceMs) / 1000) * 1000;
    const onTimeAnswer = await say(fake, ana, `remind me at ${dentistDue} to call the dentist`, /^Done: /);
    await say(fake, ana, 'remind me in 3600 s to renew the passport', /^Done: /);
    const listed = await say(fake, ana, '/reminders', /^Your reminders/);
    const cancelled = await say(fake, ana, '/reminders cancel 3', /^Cancelled|^There is no|^Reminder 3/);
    const listedAfterCancel = await say(fake, ana, '/reminders', /^Your reminders|^No reminders/);
    await stopReplica(first, 20_000);
    const stoppedAt = Date.now();
    const sentWhileUp = remindersOf(fake, ana.id, 'ferns').length + remindersOf(fake, ana.id, 'dentist').length;

    // Down until the ferns are well past their time (and past the late threshold).
    await sleepMs(Math.max(0, restartAt - Date.now()));
    const downMs = Date.now() - stoppedAt;
    const second = track(await startReplica(env));
    const secondReadyAt = Date.now();
    const dentistAt = model.asked.get('call the dentist')!;
    await fake.waitFor(() => remindersOf(fake, ana.id, 'ferns').length > 0, SLOW_MS, 'the missed reminder after the restart').catch(() => undefined);
    await fake
      .waitFor(() => remindersOf(fake, ana.id, 'dentist').length > 0, dentistAt - Date.now() + SLOW_MS, 'the reminder at its time')
      .catch(() => undefined);
    // A few passes more: time enough for a duplicate, if there were going to be one.
    await sleepMs(DUPLICATE_WATCH_MS);
    const ferns = remindersOf(fake, ana.id, 'ferns');
    const dentist = remindersOf(fake, ana.id, 'dentist');
    const passport = remindersOf(fake, ana.id, 'passport');
    await stopReplica(second, 20_000);

    const readRows = () => {
      const db = openSqlite(path.join(dataDir, 'nocturne.db'), { readonly: true });
      const found = db.prepare('SELECT text, status, late FROM Reminder ORDER BY dueAt').all() as Array<{ text: string; status: string; late: number }>;
      db.close();
      return found;
    };
    const rows = readRows();
    // Forgetting words reaches the reminders that hold them (the CLI, as an operator or the person's /forget would).
    const forgot = (await runCliToEnd(['forget', '--scope', `telegram:private:${ana.id}`, '--words', 'ferns', '--yes'], env)).stdout();
    const afterForget = readRows().map((r) => r.text);
    // eslint-disable-next-line no-console
    console.log(
      `reminders across a restart (down ${(downMs / 1000).toFixed(1)} s, first start ${(firstStartMs / 1000).toFixed(1)} s, restart ready ` +
        `${((dentistAt - secondReadyAt) / 1000).toFixed(1)} s before the dentist was due): while up ${sentWhileUp}; ferns sent ${ferns.length} ` +
        `(${ferns.map((m) => `${((m.at - fernsAt) / 1000).toFixed(1)} s after due`).join(', ')}), dentist sent ${dentist.length} ` +
        `(${dentist.map((m) => `${((m.at - dentistAt) / 1000).toFixed(1)} s after due`).join(', ')}), passport ${passport.length}; ` +
        `rows ${JSON.stringify(rows)}; after forget ferns ${JSON.stringify(afterForget)} (${JSON.stringify(forgot.trim().slice(0, 200))})`,
    );

    expect(missedAnswer).toMatch(/reminder set for .* \(America\/New_York\): water the ferns/);
    expect(onTimeAnswer).toMatch(/call the dentist/);
    expect(listed.split('\n').filter((l) => /^\d\. /.test(l))).toEqual([
      expect.stringMatching(/^1\. .* — water the ferns$/),
      expect.stringMatching(/^2\. .* — call the dentist$/),
      expect.stringMatching(/^3\. .* — renew the passport$/),
    ]);
    // The list shows the person's wall clock: the hour of New York, not of Tokyo or UTC.
    const hour = localStamp(new Date(dentistAt), PERSON_ZONE).slice(11, 16);
    expect(listed).toContain(hour);
    expect(cancelled).toMatch(/^Cancelled: .* — renew the passport$/);
    expect(listedAfterCancel).not.toContain('passport');
    expect(sentWhileUp).toBe(0);
    expect(ferns).toHaveLength(1);
    expect(ferns[0]!.text).toMatch(/^⏰ Reminder \(late\): water the ferns\n\(It was due /);
    expect(dentist).toHaveLength(1);
    expect(dentist[0]!.text).toBe('⏰ Reminder: call the dentist');
    // At its time (to the second), not before, and well within the late threshold.
    expect(dentist[0]!.at).toBeGreaterThanOrEqual(dentistAt);
    expect(dentist[0]!.at - dentistAt).toBeLessThan(LATE_S * 1000);
    expect(passport).toHaveLength(0);
    expect(rows.map((r) => [r.text, r.status, r.late])).toEqual([
      ['water the ferns', 'sent', 1],
      ['call the dentist', 'sent', 0],
      ['renew the passport', 'cancelled', 0],
    ]);
    expect(afterForget).toEqual(['call the dentist', 'renew the passport']);
    // What the forget says it changed counts the reminder.
    expect(forgot).toContain('1 reminder');
  }

  async function twoReplicas(): Promise<void> {
    const fake = await startFakeTelegram();
    cleanups.push(() => fake.close());
    const model = await startReminderModel(SERVICE_ZONE);
    cleanups.push(() => model.double.stop());
    const ollama = await startOllamaDouble({ models: ['nomic-embed-text'] });
    cleanups.push(() => ollama.stop());
    const url = await createPostgresDatabase();
    const root = tempDir('nocturne-reminder-replicas-');
    const ports = [await freePort(), await freePort()];
    const people: FakeUser[] = Array.from({ length: 3 }, (_, i) => ({ id: 7_310_000 + i, first_name: `Person${i}` }));
    const env = (i: number) =>
      webhookEnv({
        dataDir: path.join(root, `replica-${i}`),
        port: ports[i]!,
        apiRoot: fake.apiRoot,
        token: fake.token,
        modelUrl: model.double.url,
        ollamaUrl: ollama.url,
        allowedUsers: people.map((p) => p.id),
        extra: {
          DB_PROVIDER: 'postgres',
          DATABASE_URL: url,
          SLEEP_ENABLED: 'false',
          TZ: SERVICE_ZONE,
          REMINDER_CHECK_SECONDS: String(CHECK_S),
          REMINDER_LATE_SECONDS: String(LATE_S),
        },
      });
    // The first replica applies the migrations; the second finds them applied.
    track(await startReplica(env(0)));
    track(await startReplica(env(1)));
    fake.routeWebhook(ports.map((port) => `http://127.0.0.1:${port}/telegram`));

    // Every reminder is due at the same second: both replicas find all of them due in the same pass.
    // The people ask at once, each person's three in turn (a chat's messages are answered in order).
    const dueAt = Math.ceil((Date.now() + REPLICAS_SET_LEAD_MS) / 1000) * 1000;
    const texts: Array<{ person: FakeUser; text: string }> = people.flatMap((person, i) =>
      Array.from({ length: 3 }, (_, k) => ({ person, text: `feed the cat number ${i}-${k}` })),
    );
    await Promise.all(
      people.map(async (person) => {
        for (const { text } of texts.filter((t) => t.person === person)) {
          await say(fake, person, `remind me at ${dueAt} to ${text}`, new RegExp(`^Done: .*${text}`));
        }
      }),
    );
    const setBy = Date.now();
    const all = () => texts.every(({ person, text }) => remindersOf(fake, person.id, text).length > 0);
    await fake.waitFor(all, dueAt - Date.now() + SLOW_MS, 'every reminder').catch(() => undefined);
    await sleepMs(DUPLICATE_WATCH_MS);
    const counts = texts.map(({ person, text }) => remindersOf(fake, person.id, text).length);
    const early = texts.flatMap(({ person, text }) => remindersOf(fake, person.id, text)).filter((m) => m.at < dueAt).length;
    const db = new pg.Client({ connectionString: url });
    await db.connect();
    const statuses = (await db.query<{ status: string; n: string }>(`SELECT status, COUNT(*) AS n FROM "Reminder" GROUP BY status`)).rows;
    await db.end();
    // eslint-disable-next-line no-console
    console.log(
      `reminders on two replicas: ${texts.length} set (${((dueAt - setBy) / 1000).toFixed(1)} s before due), sent per reminder ${JSON.stringify(counts)}, ` +
        `early ${early}; rows ${JSON.stringify(statuses)}`,
    );

    expect(counts).toEqual(texts.map(() => 1));
    expect(early).toBe(0);
    expect(statuses.map((s) => [s.status, Number(s.n)])).toEqual([['sent', texts.length]]);
  }

  async function terminalReminders(): Promise<void> {
    const model = await startReminderModel(SERVICE_ZONE);
    cleanups.push(() => model.double.stop());
    const ollama = await startOllamaDouble({ models: ['nomic-embed-text'] });
    cleanups.push(() => ollama.stop());
    const env = cleanEnv({
      DATA_DIR: migratedDataDir(path.join(tempDir('nocturne-terminal-reminders-'), 'data')),
      TERMINAL: 'on',
      TERMINAL_USER: 'ana',
      SLEEP_ENABLED: 'false',
      TZ: SERVICE_ZONE,
      ANTHROPIC_API_KEY: 'sk-ant-terminal-reminders-000000',
      ANTHROPIC_BASE_URL: model.double.url,
      EMBEDDER: 'ollama',
      EMBEDDING_MODEL: 'nomic-embed-text',
      OLLAMA_HOST: ollama.url,
      REMINDER_CHECK_SECONDS: String(CHECK_S),
      REMINDER_LATE_SECONDS: String(LATE_S),
    });

    // The water comes due at least 5 s after the stretch (it is asked for after the stretch's
    // answer): time for the terminal, closed once the stretch is printed, to be gone.
    const first = startTerminal(env);
    first.say('remind me in 10 s to stretch');
    await until(() => first.output().includes('Done: reminder set'), SLOW_MS);
    first.say('remind me in 15 s to drink water');
    await until(() => (first.output().match(/Done: reminder set/g) ?? []).length >= 2, SLOW_MS);
    const stretchAt = model.asked.get('stretch')!;
    await until(() => printed(first.output(), 'stretch').length > 0, stretchAt - Date.now() + SLOW_MS);
    const shownAt = Date.now();
    const firstCode = await first.close();
    const drinkAt = model.asked.get('drink water')!;
    // Closed until the water reminder is well past its time.
    await sleepMs(Math.max(0, drinkAt + (LATE_S + PAST_LATE_S) * 1000 - Date.now()));
    const second = startTerminal(env);
    await until(() => printed(second.output(), 'drink water').length > 0, SLOW_MS);
    await sleepMs(DUPLICATE_WATCH_MS);
    const secondCode = await second.close();
    const stretch = [...printed(first.output(), 'stretch'), ...printed(second.output(), 'stretch')];
    const water = [...printed(first.output(), 'drink water'), ...printed(second.output(), 'drink water')];
    // eslint-disable-next-line no-console
    console.log(
      `terminal reminders: stretch printed ${stretch.length} (${((shownAt - stretchAt) / 1000).toFixed(1)} s after due, seen by the test), ` +
        `water printed ${water.length} at the next start: ${JSON.stringify(water)}; exit codes ${firstCode}, ${secondCode}`,
    );

    expect(stretch).toEqual(['⏰ Reminder: stretch']);
    expect(water).toEqual(['⏰ Reminder (late): drink water']);
    expect(printed(first.output(), 'drink water')).toEqual([]);
    expect([firstCode, secondCode]).toEqual([0, 0]);
  }

  // The three run side by side from the start (most of each is waiting for a reminder to come
  // due); each test waits for its own.
  const outcomes: Partial<Record<'restart' | 'replicas' | 'terminal', () => Promise<void>>> = {};
  beforeAll(() => {
    outcomes.restart = startNow(acrossARestart);
    if (postgresAvailable()) outcomes.replicas = startNow(twoReplicas);
    outcomes.terminal = startNow(terminalReminders);
  });

  it('fires a reminder set before a SIGTERM once after the restart, sends a missed one "(late)", lists and cancels', () => outcomes.restart!(), 420_000);

  const run = postgresAvailable() ? it : it.skip;
  if (!postgresAvailable()) console.warn(`reminders on two replicas: skipped (${postgresSkipReason()})`);
  run('two replicas on one PostgreSQL send each reminder exactly once', () => outcomes.replicas!(), 300_000);

  it('prints a terminal reminder when due, and one due while the terminal was closed "(late)" at the next start', () => outcomes.terminal!(), 300_000);
});
