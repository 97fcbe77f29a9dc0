/**
 * The terminal channel end to end through its streams (PassThrough in and out), on real SQLite
 * files (full-text index, sqlite-vec) with the real agent loop answering through the real
 * Anthropic SDK against the loopback double: a conversation stored as episodes, pasted lines
 * answered in order, every slash command, failures that do not stop the conversation, and the
 * ways a session ends (end of input, /quit, stop() during a turn).
 */
import fs from 'node:fs';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createAgent, type Agent } from '../../src/agent/agent';
import { agentServices } from '../../src/service';
import { COMMAND_FAILED_TEXT, END_TEXT, HANDLER_FAILED_TEXT } from '../../src/channels/commands/replies';
import type { ConversationHandler } from '../../src/channels/conversation-handler';
import type { InboundMessage } from '../../src/agent/inbound-message';
import { createTerminalChannel, type TerminalChannel } from '../../src/channels/terminal/terminal-channel';
import type { Core } from '../../src/core';
import { createMemory } from '../../src/memory/memories/memory-writer';
import { buildDigest, digestItems } from '../../src/memory/digests/digest';
import { startAnthropicDouble, type AnthropicDouble } from '../doubles/anthropic-server';
import { channelServices } from '../../src/service';
import { tempDir } from '../support/databases';
import { agentModel, openAgentCore, type AgentCore, type ModelRules } from './agent-harness';

const KEY = 'terminal:ana';

interface Session {
  readonly channel: TerminalChannel;
  readonly running: Promise<void>;
  readonly input: PassThrough;
  /** Everything printed so far. */
  output(): string;
  /** Waits until the output (from `from` on) satisfies `done`. */
  waitFor(done: (printed: string) => boolean, label: string, from?: number): Promise<string>;
  /**
   * Writes `lines` in one chunk (a paste) and returns what was printed for them: a marker command
   * follows them, and lines are handled in order, so its answer means theirs are all printed.
   */
  say(...lines: string[]): Promise<string>;
  /** Whether run() has resolved. */
  ended(): boolean;
}

let markers = 0;

/** Opens a session and waits for its greeting. */
async function openSession(
  core: Core,
  handler: ConversationHandler,
  options: { exportDir?: string; scopeKey?: string; digestCheckMs?: number } = {},
): Promise<Session> {
  const input = new PassThrough();
  const out = new PassThrough();
  let printed = '';
  out.on('data', (chunk: Buffer) => (printed += chunk.toString('utf8')));
  const channel = createTerminalChannel({
    ...channelServices(core),
    handler,
    input,
    output: out,
    scopeKey: options.scopeKey ?? KEY,
    authorName: 'Ana',
    logger: core.logger,
    defaultTimeZone: 'UTC',
    exportDir: options.exportDir ?? tempDir('nocturne-terminal-export-'),
    digestCheckMs: options.digestCheckMs,
  });
  let ended = false;
  const running = channel.run().then(() => void (ended = true));
  const session: Session = {
    channel,
    running,
    input,
    output: () => printed,
    async waitFor(done, label, from = 0) {
      const deadline = Date.now() + 15_000;
      while (!done(printed.slice(from))) {
        if (Date.now() > deadline) throw new Error(`timed out waiting for ${label}; printed:\n${printed.slice(from)}`);
        await new Promise((r) => setTimeout(r, 10));
      }
      return printed.slice(from);
    },
    async say(...lines) {
      const from = printed.length;
      const marker = `/marker${markers++}`;
      const markerAnswer = `I do not know ${marker}. /help lists what I understand.\n`;
      input.write(`${[...lines, marker].join('\n')}\n`);
      const text = await session.waitFor((p) => p.includes(markerAnswer), `the answers to ${JSON.stringify(lines)}`, from);
      return text.slice(0, text.indexOf(markerAnswer));
    },
    ended: () => ended,
  };
  await session.waitFor((p) => p.includes('/quit leaves.\n'), 'the greeting');
  return session;
}

describe('terminal channel', () => {
  let double: AnthropicDouble;
  let h: AgentCore;
  let core: Core;
  let agent: Agent;
  let handler: ConversationHandler & { active: number; maxActive: number; seen: string[] };
  let session: Session;
  let scopeId: string;
  let exportDir: string;
  const rules: ModelRules = {};
  const ids: Record<string, string> = {};
  const replyRequests = () => h.requests.filter((r) => r.purpose === 'reply').length;

  async function traces(words: string) {
    await core.embeddingWorker.drain();
    return {
      rows: await core.db.prisma.memory.count({ where: { scopeId, content: { contains: words } } }),
      fullText: (await core.fullText.search({ scopeId, kind: 'memory', query: words, limit: 20 })).length,
      vectors: await core.vectorIndex.count(scopeId, 'memory'),
    };
  }

  beforeAll(async () => {
    double = await startAnthropicDouble({ responder: (seen) => agentModel(rules)(seen) });
    h = await openAgentCore({ dataDir: tempDir('nocturne-terminal-'), provider: 'anthropic', url: double.url });
    core = h.core;
    agent = createAgent(agentServices(core));
    handler = {
      active: 0,
      maxActive: 0,
      seen: [],
      async reply(message: InboundMessage) {
        handler.seen.push(message.text);
        handler.maxActive = Math.max(handler.maxActive, ++handler.active);
        try {
          return (await agent.handle(message)).text;
        } finally {
          handler.active--;
        }
      },
      end: (key: string) => agent.endConversation(key, '/end').then(() => undefined),
    };
    exportDir = tempDir('nocturne-terminal-export-');

    // Ana's scope as an earlier session left it: a message, memories, and a digest not shown yet.
    const scope = await core.scopes.ensure({ key: KEY, channel: 'terminal', kind: 'user' });
    scopeId = scope.id;
    const zoo = await core.episodeService.ingest(
      { key: KEY, channel: 'terminal', kind: 'user' },
      { content: 'I went to the zoo and saw porcelain flamingos', author: 'Ana', externalId: 'zoo', timestamp: new Date(Date.now() - 3_600_000).toISOString() },
    );
    const now = new Date();
    await core.db.prisma.$transaction(async (tx) => {
      for (let i = 0; i < 12; i++)
        ids[`pref${i}`] = (
          await createMemory(
            tx,
            { scopeId, category: 'preference', content: `Ana prefers tea blend number ${i}`, confidence: 0.95 - i * 0.01 },
            { by: 'owner', now },
          )
        ).id;
      ids.flamingo = (
        await createMemory(
          tx,
          { scopeId, category: 'interest', content: 'Ana collects porcelain flamingos', confidence: 0.7, sourceEpisodeIds: [zoo.episode!.id] },
          { now },
        )
      ).id;
      ids.flamingo2 = (
        await createMemory(
          tx,
          { scopeId, category: 'interest', content: 'Ana wants more porcelain flamingos for the hall', confidence: 0.69 },
          { by: 'owner', now },
        )
      ).id;
      ids.jazz = (
        await createMemory(tx, { scopeId, category: 'interest', content: 'Ana listens to jazz on Sundays', confidence: 0.68 }, { by: 'owner', now })
      ).id;
      ids.cousin = (
        await createMemory(tx, { scopeId, category: 'relationship', content: 'Ana has a cousin called Bruno', confidence: 0.6 }, { by: 'owner', now })
      ).id;
    });
    await buildDigest(core.db.prisma, scopeId, { periodEnd: new Date(now.getTime() + 1000), now: new Date(now.getTime() + 1000) });
    // Another person's memory, which no command of Ana's may touch.
    const other = await core.scopes.ensure({ key: 'terminal:ben', channel: 'terminal', kind: 'user' });
    ids.ben = (
      await core.db.prisma.$transaction((tx) =>
        createMemory(tx, { scopeId: other.id, category: 'interest', content: 'Ben also collects porcelain flamingos', confidence: 0.9 }, { by: 'owner', now }),
      )
    ).id;
    await core.embeddingWorker.drain();

    session = await openSession(core, handler, { exportDir });
  });

  afterAll(async () => {
    session?.input.end();
    await session?.channel.stop();
    await core?.close();
    await double?.stop();
  });

  it('greets, shows the digest that was waiting and marks it sent, owning the scope', async () => {
    const start = await session.waitFor((p) => p.includes('To make me forget an item'), 'the waiting digest');
    expect(start).toMatch(/^Hello, Ana! I am Nocturne; what you tell me here is remembered in terminal:ana\./);
    expect(start).toMatch(/What I learned \(\d{4}-\d\d-\d\d \d\d:\d\d – .*, UTC\)/);
    expect(start).toContain('Ana has a cousin called Bruno');
    expect(start).not.toContain('#'); // printed as plain text
    const digest = await core.db.prisma.digest.findFirstOrThrow({ where: { scopeId } });
    expect(digest).toMatchObject({ status: 'sent', attempts: 1 });
    expect((await core.db.prisma.scope.findUniqueOrThrow({ where: { id: scopeId } })).ownerId).toBe('Ana');
    expect(session.ended()).toBe(false);

    // Before any /memories, numbers are the digest's.
    const cousin = digestItems(digest).find((i) => i.memoryId === ids.cousin)!;
    expect(await session.say(`/forget ${cousin.n}`, 'y')).toBe(
      `Item ${cousin.n} of your latest digest:\n\n• ${cousin.text}\n\nForget it? (y/n)\nDone: I forgot 1 memory. It is gone from my memory, my search index and my notes about you.\n`,
    );
    expect(await traces('Bruno')).toMatchObject({ rows: 0, fullText: 0 });
  });

  it('sends a message to the agent, prints the answer, and stores both as episodes', async () => {
    const before = replyRequests();
    expect(await session.say('hello, I like green tea')).toBe('ok: hello, I like green tea\n');
    expect(replyRequests()).toBe(before + 1);
    const episodes = (await core.db.prisma.episode.findMany({ where: { scopeId }, orderBy: { timestamp: 'asc' } })).filter((e) => e.externalId !== 'zoo');
    expect(episodes.map((e) => [e.role, e.channel, e.content])).toEqual([
      ['user', 'terminal', 'hello, I like green tea'],
      ['agent', 'terminal', 'ok: hello, I like green tea'],
    ]);
    expect(episodes[0]!.author).toBe('Ana');
    expect(episodes[0]!.externalId).toMatch(/^terminal:/);
  });

  it('answers lines pasted at once one after the other, in order', async () => {
    const printed = await session.say('first line', 'second line', 'third line', '/usr/bin is a folder');
    expect(printed).toBe('ok: first line\nok: second line\nok: third line\nok: /usr/bin is a folder\n');
    expect(handler.seen.slice(-4)).toEqual(['first line', 'second line', 'third line', '/usr/bin is a folder']);
    expect(handler.maxActive).toBe(1);
  });

  it('/memories pages with next, prev and a page number, and filters by category', async () => {
    const first = await session.say('/memories');
    expect(first).toMatch(
      /^Memories 1–10 of 15 \(page 1\/2\)\n\n1\. Ana prefers tea blend number 0\n {4}preference · confidence 0\.95 · from \d{4}-\d\d-\d\d\n/,
    );
    expect(first).toContain('10. Ana prefers tea blend number 9');
    expect(first).not.toContain('11.');
    expect(first).toContain('More: /memories next · /memories N for page N');
    expect(first).toContain('Categories: interest, preference (/memories <category>)');

    const second = await session.say('/memories next');
    expect(second).toMatch(/^Memories 11–15 of 15 \(page 2\/2\)/);
    expect(second).toContain('11. Ana prefers tea blend number 10');
    expect(second).toContain('13. Ana collects porcelain flamingos');
    expect(second).toContain('More: /memories prev · /memories N for page N');
    expect(await session.say('/memories prev')).toMatch(/^Memories 1–10 of 15 \(page 1\/2\)/);
    expect(await session.say('/memories 2')).toMatch(/^Memories 11–15 of 15 \(page 2\/2\)/);

    const interest = await session.say('/memories Interest');
    expect(interest).toMatch(/^Memories in “interest” 1–3 of 3 \(page 1\/1\)/);
    expect(interest).toContain('1. Ana collects porcelain flamingos');
    expect(interest).not.toContain('tea blend');
    expect(interest).toContain('/memories all');
    // Paging keeps the filter (and stops at the last page).
    expect(await session.say('/memories next')).toMatch(/^Memories in “interest” 1–3 of 3/);
    expect(await session.say('/memories nonsense')).toBe(
      'No current memories in “nonsense”.\nCategories: interest, preference (/memories <category>, /memories all)\n',
    );
    expect(await session.say('/memories all')).toMatch(/^Memories 1–10 of 15/);
  });

  it('/why N shows the messages an item of the last list came from', async () => {
    await session.say('/memories interest');
    expect(await session.say('/why 1')).toMatch(
      /^1\. Ana collects porcelain flamingos\n\nI learned it from this message:\n• \d{4}-\d\d-\d\d \d\d:\d\d, Ana: “I went to the zoo and saw porcelain flamingos”\n$/,
    );
    expect(await session.say('/why 2')).toMatch(/I have no record of the messages behind it/);
    expect(await session.say('/why 9')).toBe('There is no number 9 in the last /memories list you saw (it showed 1–3).\n');
    expect(await session.say('/why')).toMatch(/^Which one\? \/why 3/);
  });

  it('/forget words asks, and "n" keeps everything', async () => {
    const from = session.output().length;
    session.input.write('/forget jazz\n');
    const question = await session.waitFor((p) => p.includes('(y/n)'), 'the question', from);
    expect(question).toBe('This memory mentions “jazz”:\n\n• Ana listens to jazz on Sundays\n\nForget it? (y/n)\n');
    expect(await session.say('n')).toBe('Kept: I forgot nothing.\n');
    expect(await traces('jazz')).toMatchObject({ rows: 1, fullText: 1 });
  });

  it('/forget words then "y" forgets every match everywhere, in this scope only', async () => {
    const before = await traces('flamingos');
    expect(before).toMatchObject({ rows: 2, fullText: 2 });
    const from = session.output().length;
    session.input.write('/forget porcelain flamingos\n');
    const question = await session.waitFor((p) => p.includes('(y/n)'), 'the question', from);
    expect(question).toBe(
      'These 2 memories mention “porcelain flamingos”:\n\n• Ana collects porcelain flamingos\n• Ana wants more porcelain flamingos for the hall\n\n1 message of our conversations goes with it; its text will be replaced by a placeholder.\n\nForget them? (y/n)\n',
    );
    expect(await traces('flamingos')).toMatchObject({ rows: 2 }); // nothing goes before the answer
    expect(await session.say('y')).toBe(
      'Done: I forgot 2 memories. They are gone from my memory, my search index and my notes about you. Also changed: 1 message (replaced by a placeholder).\n',
    );
    expect(await traces('flamingos')).toEqual({ rows: 0, fullText: 0, vectors: before.vectors - 2 });
    const ben = (await core.scopes.findByKey('terminal:ben'))!;
    expect(await core.db.prisma.memory.count({ where: { id: ids.ben } })).toBe(1);
    expect((await core.fullText.search({ scopeId: ben.id, kind: 'memory', query: 'flamingos', limit: 5 })).length).toBe(1);
  });

  it('an answer other than y or n keeps the memories and is handled as a line of its own', async () => {
    const from = session.output().length;
    session.input.write('/forget jazz\n');
    await session.waitFor((p) => p.includes('(y/n)'), 'the question', from);
    expect(await session.say('/memories interest')).toMatch(/^Kept: I forgot nothing\.\nMemories in “interest” 1–1 of 1/);
    expect(await core.db.prisma.memory.count({ where: { id: ids.jazz } })).toBe(1);
    expect(await session.say('/forget zeppelins')).toBe('Nothing I remember mentions “zeppelins”.\n');
    expect(await session.say('/forget')).toMatch(/^Tell me what to forget/);
  });

  it('/forget N shows that item of the last (filtered) /memories list and forgets it after "y"', async () => {
    expect(await session.say('/memories preference')).toContain('2. Ana prefers tea blend number 1\n');
    expect(await session.say('/forget 2', 'n')).toBe(
      'Item 2 of the last /memories list you saw:\n\n• Ana prefers tea blend number 1\n\nForget it? (y/n)\nKept: I forgot nothing.\n',
    );
    expect(await core.db.prisma.memory.count({ where: { id: ids.pref1 } })).toBe(1);
    expect(await session.say('/forget 2', 'y')).toBe(
      'Item 2 of the last /memories list you saw:\n\n• Ana prefers tea blend number 1\n\nForget it? (y/n)\nDone: I forgot 1 memory. It is gone from my memory, my search index and my notes about you.\n',
    );
    expect(await core.db.prisma.memory.count({ where: { id: ids.pref1 } })).toBe(0);
    expect(await core.db.prisma.memory.count({ where: { id: ids.pref0 } })).toBe(1);
    expect(await traces('number 1')).toMatchObject({ rows: 2 }); // 10 and 11 are still there, 1 is not
    expect(await session.say('/forget 2')).toBe('Item 2 is already forgotten.\n');
    expect(await session.say('/forget 99')).toBe('There is no number 99 in the last /memories list you saw (it showed 1–10).\n');
  });

  it('/digest prints what was learned since the last digest, once, and marks it sent', async () => {
    // The fixture's digest ends a second after it was built; what is learned before then is its own.
    const first = await core.db.prisma.digest.findFirstOrThrow({ where: { scopeId }, orderBy: { periodEnd: 'desc' } });
    while (Date.now() <= first.periodEnd.getTime()) await new Promise((r) => setTimeout(r, 50));
    await core.db.prisma.$transaction((tx) =>
      createMemory(tx, { scopeId, category: 'goal', content: 'Ana wants to learn the cello', confidence: 0.9 }, { by: 'owner', now: new Date() }),
    );
    const printed = await session.say('/digest');
    expect(printed).toMatch(/^What I learned \(/);
    expect(printed).toContain('1. Ana wants to learn the cello');
    expect(printed).not.toContain('#');
    const latest = await core.db.prisma.digest.findFirstOrThrow({ where: { scopeId }, orderBy: { periodEnd: 'desc' } });
    expect(latest).toMatchObject({ status: 'sent', attempts: 1 });
    expect(latest.sentAt).not.toBeNull();
    expect(await session.say('/digest')).toMatch(/^Nothing new since your last digest/);
    // Its numbers are what /forget N means now.
    expect(await session.say('/forget 1', 'yes')).toMatch(
      /^Item 1 of your latest digest:\n\n• Ana wants to learn the cello\n\nForget it\? \(y\/n\)\nDone: I forgot 1 memory\./,
    );
    expect(await traces('cello')).toMatchObject({ rows: 0 });
  });

  it('/export writes the JSON export and the Markdown file, and prints their paths', async () => {
    const printed = await session.say('/export');
    // In the scope's own folder under the export directory, named from its id (export-paths.ts).
    // The scope's folder (beside it, the manifest of written files: export-registry.ts).
    const [folder] = fs
      .readdirSync(exportDir, { withFileTypes: true })
      .filter((e) => e.isDirectory())
      .map((e) => e.name);
    expect(folder).toMatch(/^terminal-ana-[0-9a-f]{16}$/);
    const jsonPath = path.join(exportDir, folder!, 'nocturne-terminal-ana.json');
    const markdownPath = path.join(exportDir, folder!, 'nocturne-terminal-ana.md');
    expect(printed).toContain(`  ${jsonPath} — as JSON`);
    expect(printed).toContain(`  ${markdownPath} — the same, to read`);
    const doc = JSON.parse(fs.readFileSync(jsonPath, 'utf8')) as {
      format: string;
      scope: { key: string };
      memories: Array<{ content: string }>;
      episodes: Array<{ content: string }>;
    };
    expect(doc.format).toBe('nocturne.scope-export');
    expect(doc.scope.key).toBe(KEY);
    expect(doc.memories.map((m) => m.content)).toContain('Ana listens to jazz on Sundays');
    expect(doc.memories.map((m) => m.content)).not.toContain('Ana collects porcelain flamingos');
    expect(doc.episodes.map((e) => e.content)).toContain('hello, I like green tea');
    expect(JSON.stringify(doc)).not.toContain('Ben also collects');
    expect(printed).toMatch(new RegExp(`\\(${doc.memories.length} memories, ${doc.episodes.length} messages\\)`));
    const markdown = fs.readFileSync(markdownPath, 'utf8');
    expect(markdown).toContain('<!-- MEMORY.md -->');
    expect(markdown).toContain('Ana listens to jazz on Sundays');
  });

  it('/pause, /sleep while paused, /resume', async () => {
    expect(await session.say('/pause')).toMatch(/^Paused: I will not learn anything new/);
    expect((await core.db.prisma.scope.findUniqueOrThrow({ where: { id: scopeId } })).paused).toBe(true);
    expect(await session.say('/pause')).toMatch(/already paused/);
    expect(await session.say('/sleep')).toBe('Nothing to do (consolidation is paused for this scope).\n');
    expect(await session.say('/resume')).toMatch(/^Resumed:/);
    expect((await core.db.prisma.scope.findUniqueOrThrow({ where: { id: scopeId } })).paused).toBe(false);
    expect(await session.say('/resume')).toBe('Learning was not paused.\n');
    const audit = await core.db.prisma.auditEvent.findMany({ where: { scopeId, reason: { contains: 'in the terminal' } } });
    expect(audit.length).toBeGreaterThanOrEqual(2);
  });

  it('/help and /start list the commands; an unknown command does not reach the model', async () => {
    const help = await session.say('/help');
    for (const command of [
      'memories [--all] [category | next | prev | N]',
      'forget N | words',
      'why N',
      'digest [at HH:MM | off | on]',
      'timezone [Zone]',
      'sleep',
      'pause',
      'resume',
      'export',
      'end',
      'help',
    ])
      expect(help).toContain(`/${command} — `);
    expect(help).toContain('/quit');
    expect(await session.say('/start')).toMatch(/^Hello, Ana! What you tell me here stays in your memory \(terminal:ana\)\.\n\nI remember our conversations/);
    const before = replyRequests();
    expect(await session.say('/frobnicate now')).toBe('I do not know /frobnicate. /help lists what I understand.\n');
    expect(replyRequests()).toBe(before);
    expect(handler.seen).not.toContain('/frobnicate now');
  });

  it('/timezone and /digest at set the digest schedule from the terminal too', async () => {
    expect(await session.say('/timezone Pacific/Nowhere')).toMatch(/^“Pacific\/Nowhere” is not a time zone I know\./);
    expect(await session.say('/timezone Europe/Madrid')).toMatch(/^Done: your time zone is now Europe\/Madrid; /);
    expect(await session.say('/digest at 7:45')).toMatch(
      /^Done: your digest will come every day at 07:45 \(Europe\/Madrid\)\. The next one: \d{4}-\d\d-\d\d at 07:45\.\n$/,
    );
    expect(await session.say('/timezone')).toMatch(/^Your time zone is Europe\/Madrid; it is \d\d:\d\d there now\./);
    expect(await session.say('/digest off')).toMatch(/^Done: no more evening digests\./);
    expect(await core.db.prisma.auditEvent.count({ where: { scopeId, action: 'settings' } })).toBe(3);
  });

  it('/end ends the open conversation', async () => {
    expect(await core.db.prisma.conversation.count({ where: { scopeId, status: 'open' } })).toBe(1);
    expect(await session.say('/end')).toBe(`${END_TEXT}\n`);
    expect(await core.db.prisma.conversation.count({ where: { scopeId, status: 'open' } })).toBe(0);
    expect(await core.db.prisma.conversation.count({ where: { scopeId, status: 'ended', endReason: '/end' } })).toBe(1);
    // The next message starts a new one.
    expect(await session.say('back again')).toBe('ok: back again\n');
    expect(await core.db.prisma.conversation.count({ where: { scopeId, status: 'open' } })).toBe(1);
  });

  it('prints a short line when a reply or a command fails, and goes on', async () => {
    let failing = true;
    const flaky: ConversationHandler = {
      reply: async (m) => {
        if (failing) throw new Error('the model is on fire');
        return m.text === 'escape' ? 'title\u001b]0;pwned\u0007 \u001b[2Jcleared\r\n\tindented' : `fine: ${m.text}`;
      },
      end: async () => {
        throw new Error('cannot end');
      },
    };
    const s = await openSession(core, flaky, { scopeKey: 'terminal:flaky' });
    expect(await s.say('hello')).toBe(`${HANDLER_FAILED_TEXT}\n`);
    expect(await s.say('/end')).toBe(`${COMMAND_FAILED_TEXT}\n`);
    failing = false;
    expect(await s.say('hello again')).toBe('fine: hello again\n');
    expect(await s.say('escape')).toBe('title]0;pwned [2Jcleared\n\tindented\n');
    s.input.end();
    await s.running;
  });

  it('shows a digest written while the terminal is open after the next answer, once', async () => {
    const s = await openSession(core, handler, { scopeKey: 'terminal:evening', digestCheckMs: 0 });
    const evening = (await core.scopes.findByKey('terminal:evening'))!;
    const now = new Date();
    await core.db.prisma.$transaction((tx) =>
      createMemory(tx, { scopeId: evening.id, category: 'goal', content: 'Ana plans a trip to Lisbon', confidence: 0.8 }, { by: 'owner', now }),
    );
    const digest = await buildDigest(core.db.prisma, evening.id, { periodEnd: new Date(now.getTime() + 1), now });
    expect(digest.status).toBe('pending');
    expect(await s.say('good evening')).toMatch(/^ok: good evening\nWhat I learned \(.*\n\nNew\n\n1\. Ana plans a trip to Lisbon\n/);
    expect(await core.db.prisma.digest.findUniqueOrThrow({ where: { id: digest.id } })).toMatchObject({ status: 'sent', attempts: 1 });
    expect(await s.say('still here')).toBe('ok: still here\n');
    s.input.end();
    await s.running;
  });

  it('answers every line of a paste that ends the input, then run() resolves', async () => {
    const s = await openSession(core, handler, { scopeKey: 'terminal:eof' });
    s.input.end('one\n/pause\ntwo');
    await s.running;
    expect(s.output()).toMatch(/ok: one\nPaused: .*\nok: two\n$/);
  });

  it('/quit resolves run() and leaves the rest of a paste unread', async () => {
    const s = await openSession(core, handler, { scopeKey: 'terminal:quit' });
    const seen = handler.seen.length;
    s.input.write('before\n/quit\nafter\n');
    await s.running;
    expect(s.output()).toMatch(/ok: before\n$/);
    expect(handler.seen.slice(seen)).toEqual(['before']);
    expect(s.input.writableEnded).toBe(false); // it did not wait for the end of input
  });

  it('stop() waits for the line in progress and drops the lines after it', async () => {
    let release: () => void = () => undefined;
    const started: string[] = [];
    const slow: ConversationHandler = {
      reply: async (m) => {
        started.push(m.text);
        await new Promise<void>((r) => (release = r));
        return `slow: ${m.text}`;
      },
      end: async () => undefined,
    };
    const s = await openSession(core, slow, { scopeKey: 'terminal:slow' });
    s.input.write('first\nsecond\n');
    await s.waitFor(() => started.length === 1, 'the first turn to start');
    let stopped = false;
    const stopping = s.channel.stop().then(() => void (stopped = true));
    await new Promise((r) => setTimeout(r, 50));
    expect(stopped).toBe(false);
    release();
    await stopping;
    await s.running;
    expect(s.output()).toMatch(/slow: first\n$/);
    expect(started).toEqual(['first']);
  });
});
