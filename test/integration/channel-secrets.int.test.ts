/**
 * A secret pasted into a chat stays in its message as written (forgetting and exports stay
 * exact), but no command shows it back: /memories, /why, /forget's list of matches, /digest and
 * /export, on Telegram (real grammY against the loopback Bot API) and on the terminal, print
 * stored text only through the output filter.
 */
import fs from 'node:fs';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createTerminalChannel, type TerminalChannel } from '../../src/channels/terminal/terminal-channel';
import { createMemory } from '../../src/memory/memories/memory-writer';
import { channelServices } from '../../src/service';
import { tempDir } from '../support/databases';
import { ANA, converse, startHarness, textsIn, type Harness } from './telegram-harness';

/** An Anthropic key as a person might paste it (the credential pattern of src/shared/redact.ts). */
const SECRET = `sk-ant-api03-${'Q7x_zR2k9LmN'.repeat(4)}AA`;
const PASTED = `here is my work key ${SECRET} keep it safe`;

describe('secrets pasted into a chat', () => {
  let h: Harness;

  /** Two memories learned from the pasted message: one clean, one that repeats the key. */
  async function learnFromPaste(scopeId: string, episodeId: string): Promise<void> {
    const now = new Date();
    await h.core.db.prisma.$transaction(async (tx) => {
      await createMemory(tx, { scopeId, category: 'work', content: 'Ana uses Claude at work', confidence: 0.9, sourceEpisodeIds: [episodeId] }, { now });
      await createMemory(
        tx,
        { scopeId, category: 'work', content: `Ana keeps her key ${SECRET} in a notebook`, confidence: 0.8, sourceEpisodeIds: [episodeId] },
        { now },
      );
    });
  }

  beforeAll(async () => {
    h = await startHarness();
    h.handler.answer = () => 'noted';
  });
  afterAll(async () => h?.close());

  describe('on Telegram', () => {
    beforeAll(async () => {
      await converse(h.fake, ANA, PASTED);
      const scope = await h.core.directory.findByKey(`telegram:private:${ANA.id}`);
      const pasted = await h.core.db.prisma.episode.findFirstOrThrow({ where: { scopeId: scope!.id } });
      // Stored as written.
      expect(pasted.content).toContain(SECRET);
      await learnFromPaste(scope!.id, pasted.id);
    });

    it('/memories shows the memories without the key', async () => {
      const [list] = await converse(h.fake, ANA, '/memories');
      expect(list).toContain('1. Ana uses Claude at work');
      expect(list).toContain('2. Ana keeps her key [REDACTED] in a notebook');
      expect(list).not.toContain(SECRET);
    });

    it('/why shows the source message without the key', async () => {
      const [why] = await converse(h.fake, ANA, '/why 1');
      expect(why).toContain('“here is my work key [REDACTED] keep it safe”');
      expect(why).not.toContain(SECRET);
      const [why2] = await converse(h.fake, ANA, '/why 2');
      expect(why2).toMatch(/^2\. Ana keeps her key \[REDACTED\] in a notebook/);
      expect(why2).not.toContain(SECRET);
    });

    it('/forget words lists the matches without the key', async () => {
      const [question] = await converse(h.fake, ANA, '/forget notebook');
      expect(question).toContain('• Ana keeps her key [REDACTED] in a notebook');
      expect(question).not.toContain(SECRET);
    });

    it('/digest and /export show no key', async () => {
      const [digest] = await converse(h.fake, ANA, '/digest');
      expect(digest).toContain('Ana keeps her key [REDACTED] in a notebook');
      const before = h.fake.sent(ANA.id).length;
      h.fake.message(ANA, '/export');
      await h.fake.waitFor(() => h.fake.sent(ANA.id).length === before + 2, 5_000, 'two documents');
      for (const sent of h.fake.sent(ANA.id).slice(before)) {
        expect(sent.document!.content.toString('utf8')).not.toContain(SECRET);
      }
      // Nothing the bot sent in this chat holds the key.
      expect(textsIn(h.fake, ANA.id).filter((t) => t.includes(SECRET))).toEqual([]);
    });
  });

  describe('on the terminal', () => {
    const KEY = 'terminal:ana';
    let channel: TerminalChannel;
    let input: PassThrough;
    let printed = '';
    let exportDir: string;
    let markers = 0;

    /** Writes a command and returns what was printed for it (an unknown command marks the end). */
    async function say(line: string): Promise<string> {
      const from = printed.length;
      const marker = `/marker${markers++}`;
      const end = `I do not know ${marker}.`;
      input.write(`${line}\n${marker}\n`);
      const deadline = Date.now() + 10_000;
      while (!printed.slice(from).includes(end)) {
        if (Date.now() > deadline) throw new Error(`timed out waiting for ${line}; printed:\n${printed.slice(from)}`);
        await new Promise((r) => setTimeout(r, 10));
      }
      const text = printed.slice(from);
      return text.slice(0, text.indexOf(end));
    }

    beforeAll(async () => {
      const ingested = await h.core.episodeService.ingest(
        { key: KEY, channel: 'terminal', kind: 'user' },
        { content: PASTED, author: 'Ana', externalId: 'paste', timestamp: new Date().toISOString() },
      );
      const scope = await h.core.directory.findByKey(KEY);
      await learnFromPaste(scope!.id, ingested.episode!.id);
      exportDir = tempDir('nocturne-secrets-export-');
      input = new PassThrough();
      const output = new PassThrough();
      output.on('data', (chunk: Buffer) => (printed += chunk.toString('utf8')));
      channel = createTerminalChannel({
        ...channelServices(h.core),
        handler: h.handler,
        input,
        output,
        scopeKey: KEY,
        authorName: 'Ana',
        logger: h.core.logger,
        defaultTimeZone: 'UTC',
        exportDir,
      });
      void channel.run();
      await say('/help');
    });
    afterAll(async () => {
      input?.end();
      await channel?.stop();
    });

    it('/memories, /why, /forget words, /digest and /export show no key', async () => {
      expect(await say('/memories')).toContain('2. Ana keeps her key [REDACTED] in a notebook');
      expect(await say('/why 1')).toContain('“here is my work key [REDACTED] keep it safe”');
      expect(await say('/why 2')).toMatch(/^2\. Ana keeps her key \[REDACTED\] in a notebook/);
      // The marker line after it declines the question: nothing is forgotten.
      expect(await say('/forget notebook')).toContain('• Ana keeps her key [REDACTED] in a notebook');
      expect(await say('/digest')).toContain('Ana keeps her key [REDACTED] in a notebook');
      await say('/export');
      const written = fs.readdirSync(exportDir, { recursive: true, withFileTypes: true }).filter((e) => e.isFile());
      // The two export files, and the manifest of files written (which forget reads) beside them.
      expect(written.map((e) => e.name).filter((name) => name !== 'written.jsonl')).toHaveLength(2);
      for (const file of written) expect(fs.readFileSync(path.join(file.parentPath, file.name), 'utf8')).not.toContain(SECRET);
      expect(printed).not.toContain(SECRET);
    });
  });
});
