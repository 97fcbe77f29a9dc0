/**
 * What the chaos tests share: a seeded PRNG (the seed is printed and can be replayed with
 * CHAOS_SEED), marker words that survive tokenizing and stemming unchanged, a free loopback port,
 * and readers that look for text everywhere a SQLite store keeps it (every table, the raw bytes
 * of the files after a checkpoint).
 */
import fs from 'node:fs';
import Database from 'better-sqlite3';

/** mulberry32: small, fast, good enough to pick test cases; the same seed gives the same run. */
export interface Rng {
  readonly seed: number;
  next(): number;
  int(maxExclusive: number): number;
  pick<T>(items: readonly T[]): T;
  shuffle<T>(items: readonly T[]): T[];
  sample<T>(items: readonly T[], n: number): T[];
}

export function createRng(seed: number): Rng {
  let state = seed >>> 0;
  const next = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const rng: Rng = {
    seed,
    next,
    int: (max) => Math.floor(next() * max),
    pick: (items) => items[Math.floor(next() * items.length)]!,
    shuffle(items) {
      const out = [...items];
      for (let i = out.length - 1; i > 0; i--) {
        const j = Math.floor(next() * (i + 1));
        [out[i], out[j]] = [out[j]!, out[i]!];
      }
      return out;
    },
    sample: (items, n) => rng.shuffle(items).slice(0, n),
  };
  return rng;
}

/** The seed of this run: CHAOS_SEED when set (to replay a failure), else a fresh one; printed either way. */
export function chaosSeed(testName: string): number {
  const given = process.env.CHAOS_SEED;
  const seed = given !== undefined && given !== '' ? Number(given) >>> 0 : (Date.now() ^ (process.pid << 8)) >>> 0;
  // eslint-disable-next-line no-console
  console.log(`${testName}: CHAOS_SEED=${seed} (set CHAOS_SEED=${seed} to replay this run)`);
  return seed;
}

const CONSONANTS = 'bdfgklmnprstvz';
const VOWELS = 'aeiou';

/**
 * A marker without its first four letters: what the full-text index's prefix compression may leave
 * of it in a page, so the scans for forgotten text look for it too.
 */
export function markerTail(word: string): string {
  return word.slice(4);
}

/**
 * Marker words: lower-case, pronounceable (tokenizers and embedders treat them as words), no two
 * starting with the same three letters, none holding another's {@link markerTail}, and ending in
 * `x`, which no Porter stemming step touches, so the full-text index holds each marker exactly as
 * written. `syllables` (default 3) sets the length: 2 × syllables + 3 letters.
 */
export function createMarkerFactory(rng: Rng, syllables = 3): () => string {
  const used = new Set<string>();
  const usedHeads = new Set<string>();
  return () => {
    for (;;) {
      let word = '';
      for (let i = 0; i < syllables; i++) word += rng.pick([...CONSONANTS]) + rng.pick([...VOWELS]);
      word += `${rng.pick([...CONSONANTS])}ox`;
      const head = word.slice(0, 3);
      if (used.has(word) || usedHeads.has(head)) continue;
      // A scan for one marker's tail must not find another marker ("levidox" is in "futilevidox").
      const tail = markerTail(word);
      if ([...used].some((other) => other.includes(tail) || word.includes(markerTail(other)))) continue;
      used.add(word);
      usedHeads.add(head);
      return word;
    }
  };
}

/** The markers of `markers` that occur in `text` (case-insensitive). */
export function markersIn(text: string, markers: Iterable<string>): string[] {
  const lower = text.toLowerCase();
  return [...markers].filter((m) => lower.includes(m));
}

export { freePort } from '../support/free-port';

/** One place a needle was found in a SQLite database. */
export interface TableHit {
  readonly table: string;
  readonly column: string;
  readonly needle: string;
  /** The first characters around the hit (for the failure message). */
  readonly excerpt: string;
}

/**
 * Every table of a SQLite file (plain, virtual and the FTS5 shadow tables: `search_fts_data`,
 * `_idx`, `_docsize`, `_config`, ...), every column, as text and as bytes: where do the needles
 * occur? Opened read-only on a connection of its own, so it sees what the service committed.
 */
export function scanSqliteTables(file: string, needles: readonly string[]): { tables: string[]; hits: TableHit[] } {
  const db = new Database(file, { readonly: true, fileMustExist: true });
  try {
    const tables = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").pluck().all() as string[];
    const hits: TableHit[] = [];
    for (const table of tables) {
      let rows: Record<string, unknown>[];
      try {
        rows = db.prepare(`SELECT * FROM "${table.replace(/"/g, '""')}"`).all() as Record<string, unknown>[];
      } catch {
        continue; // a virtual table whose module is not loaded here (none in the main store)
      }
      for (const row of rows) {
        for (const [column, value] of Object.entries(row)) {
          if (value === null || value === undefined) continue;
          const bytes = Buffer.isBuffer(value) ? value : Buffer.from(String(value), 'utf8');
          const lower = Buffer.from(bytes.toString('latin1').toLowerCase(), 'latin1');
          for (const needle of needles) {
            const at = lower.indexOf(needle.toLowerCase());
            if (at !== -1) hits.push({ table, column, needle, excerpt: bytes.toString('utf8', Math.max(0, at - 40), at + needle.length + 40) });
          }
        }
      }
    }
    return { tables, hits };
  } finally {
    db.close();
  }
}

/** Checkpoints the WAL into the main file and truncates it (from a connection of its own). */
export function checkpoint(file: string): { busy: number; log: number; checkpointed: number } {
  const db = new Database(file, { fileMustExist: true });
  try {
    const [row] = db.pragma('wal_checkpoint(TRUNCATE)') as Array<{ busy: number; log: number; checkpointed: number }>;
    return row!;
  } finally {
    db.close();
  }
}

/** Which needles occur anywhere in the raw bytes of the database file and its WAL. */
export function rawFileHits(file: string, needles: readonly string[]): Array<{ file: string; needle: string }> {
  const out: Array<{ file: string; needle: string }> = [];
  for (const f of [file, `${file}-wal`, `${file}-journal`]) {
    if (!fs.existsSync(f)) continue;
    const bytes = fs.readFileSync(f);
    const lower = Buffer.from(bytes.toString('latin1').toLowerCase(), 'latin1');
    for (const needle of needles) if (lower.includes(needle.toLowerCase())) out.push({ file: f, needle });
  }
  return out;
}

/** Milliseconds since `started`, rounded, for the printed figures. */
export function elapsed(started: number): string {
  return `${((performance.now() - started) / 1000).toFixed(1)} s`;
}
