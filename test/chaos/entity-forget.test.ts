/**
 * Forgetting reaches what sleep made of the forgotten messages (chaos): `npm start` runs as a
 * child process with the Telegram channel on the loopback Bot API, the Anthropic double as its
 * model and the Ollama double as its embedder. The person sends a message naming a thing by a
 * unique marker word and one about their neighbour; a real sleep (the admin API's POST
 * /scopes/:id/sleep) learns memories from them, records entities named after what was said and
 * folds their observations into attributes, one of which quotes the marker message word for word
 * (the fold's audit event with it). Then every memory holding the marker is deleted through the
 * admin API's DELETE /scopes/:id/memories/:mid.
 *
 * Afterwards the marker is in no byte of `nocturne.db`, its `-wal`, `vectors.db` or its `-wal`
 * as the forget left them (no checkpoint forced by the test), in no table, and in neither of the
 * API's exports. The neighbour's entity, whose profile was folded partly from the marker message
 * (Tom gave the pet), keeps the three observations his own message supports and is folded again
 * from them at the next sleep, whose prompts never hold the marker. The same runs on PostgreSQL
 * (every row of every table read as text instead of the SQLite files).
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import fs from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { startAnthropicDouble, type AnthropicDouble } from '../doubles/anthropic-server';
import type { SeenLlmRequest } from '../doubles/llm-script';
import { startOllamaDouble, type OllamaDouble } from '../doubles/ollama-server';
import { startFakeTelegram, type FakeTelegramServer } from '../doubles/telegram-server';
import { createPostgresDatabase, postgresAvailable, postgresSkipReason } from '../support/databases';
import { startNocturne, type RunningNocturne } from '../support/service-harness';
import { chaosSeed, createMarkerFactory, markerTail, createRng, elapsed, rawFileHits, scanSqliteTables } from './chaos-support';

const ADMIN_TOKEN = 'entity-forget-admin-token-0123456789';
const ANA = { id: 7101, first_name: 'Ana' };
/** How long a reply may take (generous: a loaded 2-core machine). */
const REPLY_WAIT_MS = 120_000;

interface ApiMemory {
  readonly id: string;
  readonly content: string;
}

interface ApiEntity {
  readonly name: string;
  readonly attributes: Record<string, string> | null;
  readonly observations: unknown[];
}

/** Every row of every table of a PostgreSQL database holding a needle, as `table Name` -> needle per row. */
async function scanPostgres(url: string, needles: readonly string[]): Promise<Array<{ place: string; needle: string }>> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const listed = await client.query<{ name: string }>("SELECT tablename AS name FROM pg_tables WHERE schemaname = 'public'");
    const tables = listed.rows.map((r) => r.name);
    const out: Array<{ place: string; needle: string }> = [];
    for (const table of tables) {
      for (const needle of needles) {
        const { rows } = await client.query<{ n: string }>(`SELECT count(*) AS n FROM "${table}" t WHERE lower(t::text) LIKE $1`, [`%${needle}%`]);
        for (let i = 0; i < Number(rows[0]!.n); i++) out.push({ place: `table ${table}`, needle });
      }
    }
    return out;
  } finally {
    await client.end();
  }
}

/** A stated memory of the consolidation answer, learned from one episode. */
function stated(category: string, content: string, episode: string) {
  return { category, content, confidence: 0.9, source: 'stated', importance: 0.5, episodes: [episode] };
}

function suite(store: 'SQLite' | 'PostgreSQL', databaseEnv: () => Promise<Record<string, string>>) {
  describe(`forgetting a memory through the API takes what sleep derived from it, on ${store} (chaos)`, () => {
    const seed = chaosSeed(`entity-forget ${store}`);
    const marker = createMarkerFactory(createRng(seed), 4)();
    /** The entity's name: the marker as a name is written. */
    const Marker = marker[0]!.toUpperCase() + marker.slice(1);
    const said = `My ${Marker} Pip glows green at night and eats moss from the windowsill.`;
    const started = performance.now();
    const figures: string[] = [];
    let anthropic: AnthropicDouble;
    let ollama: OllamaDouble;
    let fake: FakeTelegramServer;
    let dataDir: string;
    let dbFile: string;
    let databaseUrl: string | undefined;
    let service: RunningNocturne;
    let api: string;
    let scopeId: string;

    const call = async (method: string, route: string, body?: unknown) => {
      const response = await fetch(`${api}${route}`, {
        method,
        headers: { authorization: `Bearer ${ADMIN_TOKEN}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const text = await response.text();
      if (!response.ok) throw new Error(`${method} ${route}: ${response.status} ${text}`);
      return text;
    };

    /**
     * The model: chat replies echo; consolidation learns from the messages it is shown; the fold
     * quotes the marker message in the pet's profile and names the gift in Tom's while his
     * observations mention it.
     */
    function answer(seen: Omit<SeenLlmRequest, 'reply'>) {
      const json = (value: unknown) => ({ kind: 'text' as const, text: JSON.stringify(value) });
      const prompt = seen.messages.at(-1)?.text ?? '';
      if (seen.system?.includes('memory consolidation system')) {
        const episode = (needle: string) => new RegExp(`^(E\\d+) [^\\n]* user[^\\n]*${needle}`, 'm').exec(prompt)?.[1];
        const [pet, tom, bread] = [episode(Marker), episode('cello'), episode('sourdough')];
        const plan: { new: object[]; entities: object[] } = { new: [], entities: [] };
        if (pet) {
          plan.new.push(
            stated('fact', `The user has a ${marker} called Pip that glows green at night`, pet),
            stated('fact', `The user feeds the ${marker} moss from the windowsill`, pet),
          );
          const observations = ['is called Pip', 'glows green at night', 'eats moss from the windowsill'];
          plan.entities.push({ name: Marker, kind: 'pet', observations, favorability: 0.1, episodes: [pet] });
        }
        if (tom) {
          plan.new.push(stated('relationship', 'The user\u2019s neighbour Tom plays the cello every evening', tom));
          // One observation comes from the marker message (Tom gave the pet): its evidence is that message.
          const observations = ['the user\u2019s neighbour', 'plays the cello', 'practises every evening'];
          if (pet) observations.push(`gave the user ${Marker} Pip`);
          plan.entities.push({ name: 'Tom', kind: 'person', observations, favorability: 0.1, episodes: pet ? [tom, pet] : [tom] });
        }
        if (bread) plan.new.push(stated('interest', 'The user bakes sourdough bread on Sundays', bread));
        return json(plan);
      }
      if (seen.system?.includes('profiles of the people')) {
        const entities = prompt.split(/^(?=## Entity )/m).flatMap((section): Array<{ entity: number; attributes: Record<string, string> }> => {
          const [, n, name] = /^## Entity (\d+): (.*) \(/.exec(section) ?? [];
          if (!n) return [];
          if (name !== 'Tom') return [{ entity: Number(n), attributes: { 'what the user said': said, food: 'moss' } }];
          const gift: Record<string, string> = section.toLowerCase().includes(marker) ? { gift: `${Marker} Pip` } : {};
          return [{ entity: Number(n), attributes: { relation: 'neighbour', plays: 'cello', ...gift } }];
        });
        return json({ entities });
      }
      return undefined;
    }

    /** Every place holding the marker: tables, raw files (as they are), the API's exports. */
    async function findMarker(): Promise<Record<string, string[]>> {
      const found: Record<string, string[]> = {};
      const add = (place: string, what: string) => (found[place] ??= []).push(what);
      // The marker and its tail (FTS5 prefix-compresses the terms it keeps).
      const needles = [marker, markerTail(marker)];
      if (databaseUrl) for (const h of await scanPostgres(databaseUrl, needles)) add(h.place, h.needle);
      else {
        const { hits } = scanSqliteTables(dbFile, needles);
        for (const h of hits) add(`table ${h.table}.${h.column}`, `${h.needle}: ${h.excerpt.replace(/[^\x20-\x7e]/g, '.')}`);
      }
      for (const file of [dbFile, path.join(dataDir, 'vectors.db')]) {
        for (const h of rawFileHits(file, needles)) add(`raw ${path.basename(h.file)}`, h.needle);
      }
      const json = (await call('GET', `/scopes/${scopeId}/export`)).toLowerCase();
      const markdown = (await call('GET', `/scopes/${scopeId}/export?format=markdown`)).toLowerCase();
      const copies = (text: string) => text.split(marker).length - 1;
      if (copies(json) > 0) add('API JSON export', `${copies(json)} copies`);
      if (copies(markdown) > 0) add('API Markdown export', `${copies(markdown)} copies`);
      return found;
    }

    /** The figures: table cells (rows on PostgreSQL) and raw files holding the whole marker, and its copies in each export. */
    const tally = (found: Record<string, string[]>) => {
      const places = Object.entries(found);
      const holdsMarker = (w: string) => w === marker || w.startsWith(`${marker}:`);
      const whole = (prefix: string) => places.filter(([p]) => p.startsWith(prefix)).reduce((n, [, what]) => n + what.filter(holdsMarker).length, 0);
      const copies = (place: string) => Number.parseInt(found[place]?.[0] ?? '0', 10);
      const tables = `${whole('table')} table ${databaseUrl ? 'rows' : 'cells'}, ${whole('raw')} raw files`;
      return `${tables}, ${copies('API JSON export')} copies in the API JSON export, ${copies('API Markdown export')} in the Markdown one`;
    };

    beforeAll(async () => {
      anthropic = await startAnthropicDouble({ responder: answer });
      ollama = await startOllamaDouble();
      fake = await startFakeTelegram();
      const database = await databaseEnv();
      databaseUrl = database.DATABASE_URL;
      service = await startNocturne({
        telegram: { use: fake, allowedUsers: [ANA.id] },
        anthropic: { use: anthropic },
        ollama: { use: ollama },
        env: { ...database, ADMIN_TOKEN },
      });
      dataDir = service.dataDir;
      dbFile = path.join(dataDir, 'nocturne.db');
      api = service.apiBase;
      for (const text of [said, 'My neighbour Tom plays the cello every evening, it is lovely.']) {
        const before = fake.sent(ANA.id).length;
        fake.message(ANA, text);
        await fake.waitFor(() => fake.sent(ANA.id).length > before, REPLY_WAIT_MS, 'the reply');
      }
      const { scopes } = JSON.parse(await call('GET', '/scopes')) as { scopes: Array<{ id: string; key: string }> };
      scopeId = scopes.find((s) => s.key === `telegram:private:${ANA.id}`)!.id;
      const slept = JSON.parse(await call('POST', `/scopes/${scopeId}/sleep`, {})) as { outcome: { status: string } };
      expect(slept.outcome.status).toBe('succeeded');
    }, 300_000);

    afterAll(async () => {
      await service?.stop();
      await fake?.close();
      await anthropic?.stop();
      await ollama?.stop();
      if (dataDir) fs.rmSync(path.dirname(dataDir), { recursive: true, force: true });
      // eslint-disable-next-line no-console
      console.log(`entity-forget on ${store}: seed ${seed}; ${figures.join('; ')}; ${elapsed(started)}`);
    });

    it('leaves the marker nowhere once every memory holding it is deleted, and folds the rest of what sleep learned again', async () => {
      const exported = () => call('GET', `/scopes/${scopeId}/export`).then((t) => JSON.parse(t) as { entities: ApiEntity[] });
      const profiles = async () => (await exported()).entities.map((e) => [e.name, e.attributes, e.observations.length]);
      // Sleep made entities of both messages and folded their observations (the scans can fail).
      expect((await profiles()).sort()).toEqual(
        [
          [Marker, { 'what the user said': said, food: 'moss' }, 3],
          ['Tom', { relation: 'neighbour', plays: 'cello', gift: `${Marker} Pip` }, 4],
        ].sort(),
      );
      const before = await findMarker();
      figures.push(`after sleep: ${tally(before)} (${Object.keys(before).join(', ')})`);
      // The raw file holds it as it is: in the database file or, until SQLite checkpoints, in its WAL.
      if (!databaseUrl) expect(Object.keys(before).filter((place) => place.startsWith('raw nocturne.db'))).not.toEqual([]);
      expect(before[databaseUrl ? 'table AuditEvent' : 'table AuditEvent.after']).toBeDefined();

      const { memories } = JSON.parse(await call('GET', `/scopes/${scopeId}/memories?state=all`)) as { memories: ApiMemory[] };
      const holding = memories.filter((m) => m.content.toLowerCase().includes(marker));
      expect(holding).toHaveLength(2);
      for (const m of holding) await call('DELETE', `/scopes/${scopeId}/memories/${m.id}`);

      const after = await findMarker();
      figures.push(`after the deletes: ${tally(after)} (${Object.keys(after).join(', ') || 'nowhere'})`);
      expect(after).toEqual({});
      // Tom's profile was folded from the forgotten message too: it waits to be folded again from the
      // three observations the other message supports.
      expect(await profiles()).toEqual([['Tom', {}, 3]]);

      // The next sleep folds Tom again from what is left; the model is never shown the marker.
      const seen = anthropic.requests.length;
      const before2 = fake.sent(ANA.id).length;
      fake.message(ANA, 'I started baking sourdough bread on Sundays, it is my new hobby.');
      await fake.waitFor(() => fake.sent(ANA.id).length > before2, 30_000, 'the reply');
      const slept = JSON.parse(await call('POST', `/scopes/${scopeId}/sleep`, {})) as { outcome: { status: string } };
      expect(slept.outcome.status).toBe('succeeded');
      expect(anthropic.requests.slice(seen).filter((r) => JSON.stringify(r.body).toLowerCase().includes(marker))).toEqual([]);
      expect(await profiles()).toEqual([['Tom', { relation: 'neighbour', plays: 'cello' }, 3]]);
      const left = JSON.parse(await call('GET', `/scopes/${scopeId}/memories`)) as { memories: ApiMemory[] };
      expect(left.memories.map((m) => m.content).sort()).toEqual([
        'The user bakes sourdough bread on Sundays',
        'The user\u2019s neighbour Tom plays the cello every evening',
      ]);
      expect(await findMarker()).toEqual({});
    }, 180_000);
  });
}

suite('SQLite', async () => ({}));
if (postgresAvailable()) suite('PostgreSQL', async () => ({ DB_PROVIDER: 'postgres', DATABASE_URL: await createPostgresDatabase() }));
else it.skip(`entity forget on PostgreSQL skipped: ${postgresSkipReason()}`, () => undefined);
