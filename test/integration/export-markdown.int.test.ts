/**
 * The Markdown export (seed 002's layout) of a scope on a real SQLite file: MEMORY.md with the
 * soul and the current memories by category, and one memory/YYYY-MM-DD.md per day in the scope's
 * time zone with that day's transcript and what was learned. Content is checked line by line,
 * not by snapshot.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { exportScope } from '../../src/export/json-export';
import { renderMarkdownExport, writeMarkdownExport, type MarkdownFiles } from '../../src/export/markdown-export';
import type { ScopeExport } from '../../src/export/scope-document';
import { createSilentLogger } from '../../src/shared/logger';
import { openDatabase, type Database } from '../../src/storage/database';
import { sqliteDatabase, tempDir } from '../support/databases';
import { seedScope } from '../support/scope-fixture';

describe('Markdown export', () => {
  let db: Database;
  let doc: ScopeExport;
  let files: MarkdownFiles;

  beforeAll(async () => {
    db = await openDatabase({ database: sqliteDatabase(), logger: createSilentLogger() });
    const { scopeId } = await seedScope(db.prisma, 'ana');
    doc = await exportScope(db.prisma, scopeId);
    files = renderMarkdownExport(doc, { defaultTimeZone: 'UTC' });
  });
  afterAll(async () => db?.close());

  it('has MEMORY.md and one daily log per local day with activity, in order', () => {
    // 09:00 UTC on 1 February is 10:00 in Madrid; every day of the fixture has a message.
    expect([...files.keys()]).toEqual(['MEMORY.md', 'memory/2024-02-01.md', 'memory/2024-02-02.md', 'memory/2024-02-03.md']);
    for (const text of files.values()) expect(text.endsWith('\n') && !text.endsWith('\n\n')).toBe(true);
  });

  it('MEMORY.md holds the soul and the current memories by category, with confidence and source dates', () => {
    const memory = files.get('MEMORY.md')!;
    expect(memory.startsWith('# MEMORY.md: Ana\n')).toBe(true);
    expect(memory).toContain('2 current memories; 2 earlier or faded versions in the daily logs; 4 messages in memory/. Dates are in Europe/Madrid.');
    // The soul's headings nest under "## Soul".
    expect(memory).toContain('## Soul\n\n### Soul of Ana\n');
    expect(memory).toContain('#### Preferences\n\n- Ana drinks green tea (0.90)');
    expect(memory).toContain('### Facts\n\n- Ana works night shifts as a nurse (confidence 0.85; from 2024-02-03)\n');
    expect(memory).toContain('### Preferences\n\n- Ana drinks green tea (confidence 0.90; from 2024-02-02)\n');
    expect(memory.indexOf('### Facts')).toBeLessThan(memory.indexOf('### Preferences', memory.indexOf('## Memories')));
    // Superseded and faded versions are history, not current memory.
    expect(memory).not.toContain('coffee');
    expect(memory).not.toContain('chess');
    expect(memory).toContain('## People and things\n\n- **Bea** (person): age: 31; relation: sister\n');
  });

  it('a daily log is that day’s transcript and what was learned, with what became of it', () => {
    const first = files.get('memory/2024-02-01.md')!;
    expect(first.split('\n').slice(0, 3)).toEqual(['# 2024-02-01', '', 'Daily log of `ana`: 2 messages, 1 memory learned. Times in Europe/Madrid.']);
    expect(first).toContain('## Conversation\n\n- **10:00 Ana (user):** I drink coffee every morning.\n- **10:06 agent:** Noted: coffee in the morning.\n');
    // Later lines of a message stay inside its item, and cannot become headings of the log.
    expect(first).toContain('\n  \\# not a heading\n  Second line.\n');
    expect(first).toContain('## Learned\n\n- Ana drinks coffee every morning (preference, confidence 0.80) (later replaced by "Ana drinks green tea")\n');
    const second = files.get('memory/2024-02-02.md')!;
    expect(second).toContain('- **12:00 Ana (user):** Actually I switched to green tea.');
    expect(second).toContain('- Ana plays chess (interest, confidence 0.05) (faded since)');
    expect(files.get('memory/2024-02-03.md')).toContain('- Ana works night shifts as a nurse (fact, confidence 0.85)');
  });

  it('uses the default time zone when the scope has none, and is deterministic', () => {
    const utc = renderMarkdownExport({ ...doc, scope: { ...doc.scope, timezone: null } }, { defaultTimeZone: 'UTC' });
    expect(utc.get('memory/2024-02-01.md')).toContain('- **09:00 Ana (user):** I drink coffee every morning.');
    expect([...renderMarkdownExport(doc, { defaultTimeZone: 'UTC' })]).toEqual([...files]);
  });

  it('writes the files into a folder', async () => {
    const dir = path.join(tempDir(), 'ana');
    const written = await writeMarkdownExport(dir, files);
    expect(written.map((file) => path.relative(dir, file))).toEqual([...files.keys()].map((key) => path.join(...key.split('/'))));
    expect(fs.readFileSync(path.join(dir, 'memory', '2024-02-02.md'), 'utf8')).toBe(files.get('memory/2024-02-02.md'));
  });
});
