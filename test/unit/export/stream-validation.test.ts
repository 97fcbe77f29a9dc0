/**
 * The streamed import's two passes (stream-validation.ts, stream-rows.ts) against the import of a
 * whole document (parseScopeExport, scopeBatches): for valid documents the same rows, for bad ones
 * the same error message, whatever the chunk boundaries. The streamed pass reads a file in chunks
 * of a few bytes here, so every element, string, escape and number crosses a boundary somewhere.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from '@jest/globals';
import { openImportFile } from '../../../src/export/import-file';
import { parseScopeExport } from '../../../src/export/import-validation';
import { scopeBatches, type RowBatch } from '../../../src/export/insert-scope';
import { JsonSyntaxError, type ByteReader } from '../../../src/export/json-byte-cursor';
import { JsonScanner } from '../../../src/export/json-scanner';
import { planBatches } from '../../../src/export/stream-rows';
import { scanScopeExport } from '../../../src/export/stream-validation';
import { tempDir } from '../../support/databases';
import { exportEpisode, exportMemory, exportTime } from '../../support/export-rows';

/** The ingest limits of a default configuration (EPISODE_MAX_BYTES 4 MiB). */
const LIMITS = { maxEpisodeBytes: 4 * 1024 * 1024 };

const at = exportTime;

function episode(i: number, extra: Record<string, unknown> = {}) {
  return exportEpisode(i, {
    content: `message ${i} "quoted" \\ back\u00e9 \ud83d\ude00`,
    conversationId: i === 0 ? 'conv-1' : null,
    metadata: { n: i, f: -1.5e-3, list: [true, false, null], nested: { a: [1, [2, [3]]] } },
    tags: [{ kind: 'topic', value: `t${i % 3}` }],
    ...extra,
  });
}

function memory(i: number, extra: Record<string, unknown> = {}) {
  return exportMemory(i, extra);
}

/** A valid document with a bit of every table, and a supersession chain against document order. */
function validDoc(): Record<string, unknown> {
  return {
    format: 'nocturne.scope-export',
    version: 1,
    scope: {
      id: 'scope-1',
      key: 'import:one',
      channel: 'import',
      kind: 'private',
      title: null,
      ownerId: null,
      timezone: null,
      paused: false,
      settings: { digest: 'ep-1' },
      lastMessageAt: at(9),
      createdAt: at(0),
      updatedAt: at(9),
    },
    profile: { soul: 'kind', data: { x: 1 }, version: 2, updatedAt: at(3) },
    conversations: [{ id: 'conv-1', status: 'open', startedAt: at(0), lastActivityAt: at(1), endedAt: null, endReason: null, summary: null, state: null }],
    episodes: Array.from({ length: 7 }, (_, i) => episode(i)),
    memories: [memory(0, { supersededById: 'mem-1' }), memory(1, { supersededById: 'mem-2' }), memory(2), memory(3)],
    memoryLinks: [{ id: 'link-1', fromId: 'mem-0', toId: 'mem-3', kind: 'related', score: 0.4, reason: null, createdAt: at(2) }],
    entities: [
      {
        id: 'ent-1',
        key: 'ana',
        name: 'Ana',
        kind: 'person',
        attributes: null,
        favorability: 0.1,
        interactionCount: 2,
        createdAt: at(0),
        updatedAt: at(1),
        observations: [{ id: 'obs-1', episodeId: 'ep-1', content: 'likes tea', consolidated: false, createdAt: at(1) }],
      },
    ],
    digests: [
      {
        id: 'dig-1',
        periodStart: at(0),
        periodEnd: at(5),
        content: 'a day',
        items: [{ id: 'mem-1' }],
        status: 'sent',
        attempts: 1,
        sentAt: at(6),
        createdAt: at(6),
      },
    ],
    sleepRuns: [
      {
        id: 'run-1',
        kind: 'consolidation',
        status: 'done',
        startedAt: at(4),
        finishedAt: at(5),
        episodeCount: 3,
        llmCalls: 1,
        inputTokens: 10,
        outputTokens: 5,
        stats: null,
        error: null,
      },
    ],
    auditEvents: [
      {
        id: 'aud-1',
        runId: 'run-1',
        action: 'create',
        subjectType: 'memory',
        subjectId: 'mem-1',
        before: null,
        after: { content: 'x' },
        reason: null,
        createdAt: at(5),
      },
    ],
  };
}

/** A reader over `bytes` in chunks of `size`. */
function chunks(bytes: Buffer, size: number): ByteReader {
  let pos = 0;
  return {
    read() {
      if (pos >= bytes.length) return null;
      const chunk = Buffer.from(bytes.subarray(pos, pos + size));
      pos += size;
      return chunk;
    },
  };
}

/** What the whole-document import says of `text`: its rows by table, or its error. */
function whole(text: string): { error: string } | { rows: Record<string, unknown[]> } {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { error: 'not JSON' };
  }
  try {
    return { rows: byTable(scopeBatches(parseScopeExport(value, LIMITS), 3)) };
  } catch (error) {
    return { error: (error as Error).message };
  }
}

/** What the streamed import says of `text`, read from a file in chunks of `size` bytes. */
function streamed(text: string, size: number): { error: string } | { rows: Record<string, unknown[]> } {
  let outcome;
  try {
    outcome = scanScopeExport(chunks(Buffer.from(text), size), LIMITS);
  } catch (error) {
    if (error instanceof JsonSyntaxError) return { error: 'not JSON' };
    throw error;
  }
  if (!outcome.result.ok) return { error: outcome.result.error.message };
  const file = path.join(tempDir(), 'doc.json');
  fs.writeFileSync(file, text);
  const reader = openImportFile({ path: file });
  try {
    return { rows: byTable(planBatches(reader, outcome.result.plan, 3)) };
  } finally {
    reader.close();
  }
}

function byTable(batches: Iterable<RowBatch>): Record<string, unknown[]> {
  const out: Record<string, unknown[]> = {};
  for (const batch of batches) (out[batch.table] ??= []).push(...batch.rows.map((row) => JSON.parse(JSON.stringify(row)) as unknown));
  return out;
}

const variants: Array<[string, (doc: Record<string, unknown>) => unknown]> = [
  ['valid', (d) => d],
  ['a wrong format and version', (d) => ({ ...d, format: 'x', version: 2 })],
  ['missing arrays and unknown keys', (d) => ({ zzz: 1, ...d, episodes: undefined, memories: 5, extra: [] })],
  ['not an object', () => [1, 2, 3]],
  ['a string', () => 'hello'],
  ['null', () => null],
  [
    'bad fields in rows',
    (d) => ({
      ...d,
      episodes: [episode(0, { importance: 'high' }), episode(1, { role: '', bogus: 1 })],
      memories: [memory(0, { confidence: null, sourceEpisodeIds: ['ep-0'] })],
    }),
  ],
  [
    'a NUL and a lone surrogate',
    (d) => ({
      ...d,
      scope: { ...(d.scope as object), title: 'a\u0000b' },
      episodes: [episode(0, { content: 'x\ud800', metadata: { 'k\u0000': 1 } }), ...(d.episodes as unknown[]).slice(1)],
    }),
  ],
  ['control characters', (d) => ({ ...d, episodes: [episode(0, { content: 'bell\u0007', author: 'tab\u000b' }), ...(d.episodes as unknown[]).slice(1)] })],
  [
    'duplicates everywhere',
    (d) => ({
      ...d,
      episodes: [
        ...(d.episodes as unknown[]),
        episode(1, {
          tags: [
            { kind: 'a', value: 'b' },
            { kind: 'a', value: 'b' },
          ],
        }),
        episode(9, { externalId: 'x-2' }),
      ],
      conversations: [...(d.conversations as unknown[]), ...(d.conversations as unknown[])],
      entities: [...(d.entities as unknown[]), { ...(d.entities as Array<Record<string, unknown>>)[0], id: 'ent-2' }],
      digests: [...(d.digests as unknown[]), ...(d.digests as unknown[])],
    }),
  ],
  [
    'dangling references and a cycle',
    (d) => ({
      ...d,
      memories: [
        memory(0, { supersededById: 'mem-1' }),
        memory(1, { supersededById: 'mem-0', sourceEpisodeIds: ['ep-99', 'ep-1', 'ep-1'] }),
        memory(2, { supersededById: 'mem-2' }),
        memory(3, { supersededById: 'nope' }),
      ],
      memoryLinks: [{ id: 'l', fromId: 'mem-0', toId: 'gone', kind: 'k', score: null, reason: null, createdAt: at(0) }],
    }),
  ],
  [
    'an observation of another scope\u2019s episode, a year-9999 time and invisible content',
    (d) => ({
      ...d,
      episodes: [
        episode(0, { timestamp: '9999-12-31T00:00:00.000Z' }),
        episode(1, { createdAt: '1969-12-31T23:59:59.000Z', content: '\u200b\u200c\u2060\u00ad \u3164' }),
        ...Array.from({ length: 5 }, (_, i) => episode(i + 2)),
      ],
      entities: [
        {
          ...(d.entities as Array<Record<string, unknown>>)[0],
          observations: [
            { id: 'obs-1', episodeId: 'ep-elsewhere', content: 'likes tea', consolidated: false, createdAt: at(1) },
            { id: 'obs-2', episodeId: 'ep-2', content: 'x', consolidated: false, createdAt: at(1) },
          ],
        },
      ],
    }),
  ],
  ['more than 20 issues', (d) => ({ ...d, episodes: Array.from({ length: 30 }, (_, i) => episode(i, { importance: 'x' })) })],
  [
    'metadata nested too deep',
    (d) => ({ ...d, episodes: [episode(0, { metadata: JSON.parse(`${'['.repeat(80)}${']'.repeat(80)}`) as unknown }), episode(1, { importance: 'x' })] }),
  ],
  [
    'settings nested too deep',
    (d) => ({ ...d, scope: { ...(d.scope as object), settings: JSON.parse(`${'{"a":'.repeat(75)}1${'}'.repeat(75)}`) as unknown } }),
  ],
  ['a __proto__ key', (d) => JSON.parse(JSON.stringify(d).replace('{"format"', '{"__proto__":{"x":1},"format"')) as unknown],
  ['metadata over 64 KiB', (d) => ({ ...d, episodes: [episode(0, { metadata: { blob: 'x'.repeat(70_000) } }), ...(d.episodes as unknown[]).slice(1)] })],
  ['a __proto__ key in a row', (d) => JSON.parse(JSON.stringify(d).replace('{"id":"conv-1"', '{"__proto__":{"x":1},"id":"conv-1"')) as unknown],
];

describe('the streamed import reads what the whole-document import reads', () => {
  for (const [name, make] of variants) {
    it(`${name}: the same rows or the same error, in chunks of 1, 7 and 4096 bytes`, () => {
      const doc = make(validDoc());
      const text = JSON.stringify(doc, null, 2);
      // The clock an out-of-range time is measured against is named in the message; each pass reads it.
      const clockless = (outcome: unknown) => JSON.parse(JSON.stringify(outcome).replace(/clock, [0-9TZ:.-]+\)/g, 'clock)')) as unknown;
      const expected = clockless(whole(text));
      for (const size of [1, 7, 4096]) expect(clockless(streamed(text, size))).toEqual(expected);
    });
  }

  it('a duplicate top-level key counts once, the last one, as JSON.parse does', () => {
    const text = JSON.stringify(validDoc()).replace('"memoryLinks":', '"episodes":[{"bad":1}],"memoryLinks":');
    const later = JSON.stringify(validDoc()).replace('"episodes":', '"episodes":[{"bad":1}],"episodes":');
    for (const t of [text, later]) expect(streamed(t, 5)).toEqual(whole(t));
  });

  it('finds a syntax error anywhere, naming its line and column', () => {
    const good = JSON.stringify(validDoc(), null, 2);
    const bad = [
      good.replace('"kind": "person"', '"kind": person'),
      good.replace(/\}\s*$/, ''),
      `${good} x`,
      good.replace('"ana"', '"a\\qna"'),
      good.replace('0.8', '08'),
      good.replace('"sent"', '"se\nnt"'),
      '',
      '{',
      '{"a":1,}',
      '[1,]',
    ];
    for (const text of bad) {
      expect(() => JSON.parse(text)).toThrow();
      expect(() => scanScopeExport(chunks(Buffer.from(text), 3), LIMITS)).toThrow(JsonSyntaxError);
    }
    expect(() => scanScopeExport(chunks(Buffer.from(bad[0]!), 3), LIMITS)).toThrow(/unexpected "p" at line \d+, column \d+/);
  });

  it('accepts what JSON.parse accepts, at any depth, without recursion', () => {
    const deep = `${'['.repeat(100_000)}${']'.repeat(100_000)}`;
    for (const text of [deep, ' { "a" : [ 1 , -0.5e+3 , "\\u00e9\\n" , true , false , null , {} , [ ] ] } ', '"\\ud800"', '-0', '1E5']) {
      const scanner = new JsonScanner(chunks(Buffer.from(text), 2));
      scanner.skipValue();
      expect(() => scanner.expectEnd()).not.toThrow();
    }
  });

  it('a copy keeps the rows and gives them new ids', () => {
    const text = JSON.stringify(validDoc());
    const outcome = scanScopeExport(chunks(Buffer.from(text), 64), LIMITS);
    if (!outcome.result.ok) throw outcome.result.error;
    expect(outcome.result.plan.oldIds.slice(0, 3)).toEqual(['scope-1', 'conv-1', 'ep-0']);
    expect(outcome.result.plan.counts).toMatchObject({ episodes: 7, episodeTags: 7, memories: 4, memorySources: 4, entityObservations: 1, profile: 1 });
  });
});

describe('a value too large to hold', () => {
  const MIB = 1024 * 1024;
  /** The document with `change` applied, as bytes (no 20 MiB string is built twice). */
  const bytesOf = (change: (d: Record<string, unknown>) => unknown) => Buffer.from(JSON.stringify(change(validDoc())));
  const errorOf = (bytes: Buffer) => {
    const outcome = scanScopeExport(chunks(bytes, 64 * 1024), LIMITS);
    return outcome.result.ok ? 'imported' : outcome.result.error.message;
  };

  it('is refused by the size of its largest string, decoded, naming the field and EPISODE_MAX_BYTES', () => {
    const huge = 'a'.repeat(20 * MIB);
    expect(errorOf(bytesOf((d) => ({ ...d, episodes: [episode(0), episode(1, { content: huge })] })))).toBe(
      'The scope export is not valid; nothing was imported:\n  episodes[1].content: is 20.0 MiB; the limit is 4.0 MiB (EPISODE_MAX_BYTES)',
    );
    expect(errorOf(bytesOf((d) => ({ ...d, memories: [memory(0, { content: huge })], profile: { ...(d.profile as object), soul: huge } })))).toMatch(
      /profile\.soul: is 20\.0 MiB; the limit is 4\.0 MiB \(EPISODE_MAX_BYTES\)\n {2}memories\[0\]\.content: is 20\.0 MiB/,
    );
    // 18 MiB of JSON escapes decode to 3 MiB: under the limit, but more JSON than any row can take.
    expect(errorOf(bytesOf((d) => ({ ...d, episodes: [episode(0, { content: '\u0001'.repeat(3 * MIB) })] })))).toMatch(
      /episodes\[0\]: is 18\.\d MiB of JSON; no row of an export can be larger than 17\.0 MiB \(4 x EPISODE_MAX_BYTES \+ 1 MiB\)/,
    );
  });

  it('an episode over EPISODE_MAX_BYTES but small enough to read: the same error as the whole-document import', () => {
    const text = JSON.stringify({
      ...validDoc(),
      episodes: [episode(0), episode(1, { content: '\u00e9\n'.repeat(1_600_000) }), episode(2, { importance: 'x' })],
    });
    const expected = whole(text);
    expect(expected).toEqual({
      error: 'The scope export is not valid; nothing was imported:\n  episodes[1].content: is 4.6 MiB; the limit is 4.0 MiB (EPISODE_MAX_BYTES)',
    });
    for (const size of [7, 4096]) expect(streamed(text, size)).toEqual(expected);
  });

  it('counts escapes as the bytes they decode to', () => {
    const text = `{"a":"\\u00e9\\n\\u4e2d\\ud83d\\ude00xy","b":[{"c":"${'z'.repeat(100)}"}]}`;
    expect(JSON.parse(text)).toBeTruthy();
    const capture = new JsonScanner(chunks(Buffer.from(text), 3)).captureBounded(10);
    expect(capture.bytes).toBeNull();
    expect(capture.size).toBe(Buffer.byteLength(text));
    expect(capture.largest).toEqual({ bytes: 100, field: 'b' });
    const small = new JsonScanner(chunks(Buffer.from(text), 3)).captureBounded(1_000);
    expect(small.bytes?.toString()).toBe(text);
    expect(new JsonScanner(chunks(Buffer.from('"\\u00e9\\n\\u4e2d\\ud83d\\ude00xy"'), 2)).captureBounded(1).largest).toEqual({
      bytes: Buffer.byteLength('\u00e9\n\u4e2d\ud83d\ude00xy'),
    });
  });
});

describe('a spooled body', () => {
  it('is encrypted on disk, read back exactly from any offset, and removed', async () => {
    const { Readable } = await import('node:stream');
    const { removeImportFile, spoolToFile, SpoolTooLarge } = await import('../../../src/export/import-file');
    const text = Buffer.from(JSON.stringify(validDoc()).repeat(40));
    const dir = tempDir();
    const file = await spoolToFile(Readable.from([text.subarray(0, 1000), text.subarray(1000)]), { limit: text.length, dir });
    const onDisk = fs.readFileSync(file.path);
    expect(onDisk.length).toBe(text.length);
    expect(onDisk.toString('latin1')).not.toContain('nocturne.scope-export');
    const reader = openImportFile(file);
    for (const [start, end] of [
      [0, 10],
      [17, 333],
      [4095, 4097],
      [text.length - 5, text.length],
    ] as const)
      expect(reader.range(start, end)).toEqual(text.subarray(start, end));
    const chunks: Buffer[] = [];
    const from = reader.from(31);
    for (let chunk = from.read(); chunk; chunk = from.read()) chunks.push(chunk);
    expect(Buffer.concat(chunks)).toEqual(text.subarray(31));
    reader.close();
    await removeImportFile(file);
    expect(fs.readdirSync(dir)).toEqual([]);
    await expect(spoolToFile(Readable.from([text]), { limit: text.length - 1, dir })).rejects.toBeInstanceOf(SpoolTooLarge);
    expect(fs.readdirSync(dir)).toEqual([]);
  });
});
