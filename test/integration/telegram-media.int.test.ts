/**
 * Photos, documents, voice and the other kinds of message, through the real service as `npm start`
 * runs it (src/main.ts in a child process, SIGTERM'd at the end): grammY polling the loopback Bot
 * API (which now serves getFile and file downloads), replies and photo descriptions from the
 * loopback Anthropic double through the real SDK, embeddings from the Ollama double, voice from the
 * loopback transcription server, all on a real SQLite file read back as it is.
 *
 * Two runs: one whose model can see and with a transcription server; one whose model refuses
 * images and without transcription (each notice is said once, not with every photo or voice).
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import path from 'node:path';
import type { Message } from 'grammy/types';
import { freePort, rawFileHits, scanSqliteTables } from '../chaos/chaos-support';
import { openSqlite, startEntry, type Entry } from '../chaos/crash-support';
import { startAnthropicDouble, type AnthropicDouble } from '../doubles/anthropic-server';
import { lastUserText } from '../doubles/llm-script';
import { startOllamaDouble, type OllamaDouble } from '../doubles/ollama-server';
import { startFakeTelegram, type FakeTelegramServer, type SentMessage } from '../doubles/telegram-server';
import { startTranscriptionDouble, type TranscriptionDouble } from '../doubles/transcription-server';
import { tempDir } from '../support/databases';
import { pdfWithPages } from '../support/pdf-file';
import { cleanEnv } from '../support/run-process';

const ANA = { id: 5151, first_name: 'Ana' };
const SCOPE = `telegram:private:${ANA.id}`;
const ADMIN_TOKEN = 'media-admin-token-0123456789';
const DESCRIPTION = 'A porcelain flamingo standing on a kitchen shelf next to a blue teapot.';
const SPOKEN = 'the plumber comes on Thursday at nine';
/** Bytes that stand for a photo: a JPEG start and a marker that must never reach the store. */
const PHOTO = Buffer.concat([Buffer.from([0xff, 0xd8, 0xff, 0xe0]), Buffer.from('PHOTO-BYTES-MARKER-7731 jpeg body')]);
const VOICE = Buffer.from('OggS VOICE-BYTES-MARKER-4412 opus frames');
/** How long a reply may take on a loaded machine (a child process, a model double, SQLite). */
const REPLY_MS = 30_000;

interface Episode {
  readonly content: string;
  readonly metadata: string | null;
  readonly conversationId: string | null;
  readonly externalId: string | null;
}

interface Run {
  readonly fake: FakeTelegramServer;
  readonly model: AnthropicDouble;
  readonly dbFile: string;
  readonly apiPort: number;
  readonly entry: Entry;
}

/** Starts `src/main.ts` against the doubles; resolves once the bot polls. */
async function startRun(options: { fake: FakeTelegramServer; model: AnthropicDouble; ollama: OllamaDouble; env?: Record<string, string> }): Promise<Run> {
  const dataDir = tempDir('nocturne-media-');
  const apiPort = await freePort();
  const entry = startEntry(
    'src/main.ts',
    [],
    cleanEnv({
      DATA_DIR: dataDir,
      LLM_PROVIDER: 'anthropic',
      ANTHROPIC_API_KEY: 'sk-ant-media-test-000000000',
      ANTHROPIC_BASE_URL: options.model.url,
      EMBEDDER: 'ollama',
      OLLAMA_HOST: options.ollama.url,
      TELEGRAM_BOT_TOKEN: options.fake.token,
      TELEGRAM_API_ROOT: options.fake.apiRoot,
      TELEGRAM_ALLOWED_USERS: String(ANA.id),
      ADMIN_TOKEN,
      API_PORT: String(apiPort),
      TERMINAL: 'off',
      SLEEP_ENABLED: 'false',
      LOG_LEVEL: 'info',
      MEDIA_MAX_FILE_MB: '1',
      DOCUMENT_MAX_PAGES: '3',
      DOCUMENT_MAX_PARTS: '20',
      ...options.env,
    }),
  );
  await options.fake.waitFor(() => options.fake.calls('getUpdates').length > 0 || !entry.running(), 60_000, 'the bot to poll');
  if (!entry.running()) throw new Error(`the service ended at start:\n${entry.stderr().slice(-3_000)}`);
  return { fake: options.fake, model: options.model, dbFile: path.join(dataDir, 'nocturne.db'), apiPort, entry };
}

async function stopRun(run: Run | undefined): Promise<void> {
  if (!run?.entry.running()) return;
  run.entry.child.kill('SIGTERM');
  await run.entry.ended;
}

/** The scope's episodes as stored, oldest first. */
function episodes(run: Run): Episode[] {
  const db = openSqlite(run.dbFile, { readonly: true });
  try {
    return db
      .prepare(
        'SELECT e.content, e.metadata, e.conversationId, e.externalId FROM Episode e JOIN Scope s ON s.id = e.scopeId WHERE s.key = ? ORDER BY e.timestamp, e.turn',
      )
      .all(SCOPE) as Episode[];
  } finally {
    db.close();
  }
}

/** Recorded Telegram updates not yet handled to the end. */
function pendingUpdates(run: Run): number {
  const db = openSqlite(run.dbFile, { readonly: true });
  try {
    return (db.prepare("SELECT count(*) AS n FROM TelegramUpdate WHERE status <> 'done'").get() as { n: number }).n;
  } finally {
    db.close();
  }
}

/** Waits for an episode whose content matches. */
function storedEpisode(run: Run, pattern: RegExp): Promise<Episode> {
  return run.fake.waitFor(() => episodes(run).find((e) => pattern.test(e.content)), REPLY_MS, `an episode matching ${pattern}`);
}

/** Injects a message with these media fields and waits for `replies` more messages from the bot. */
async function sendMedia(run: Run, fields: Partial<Message>, replies: number): Promise<string[]> {
  const before = run.fake.sent(ANA.id).length;
  run.fake.media(ANA, fields);
  await run.fake.waitFor(() => run.fake.sent(ANA.id).length >= before + replies, REPLY_MS, `${replies} replies to ${Object.keys(fields).join(', ')}`);
  return run.fake
    .sent(ANA.id)
    .slice(before)
    .map((m) => m.text ?? '');
}

function photoOf(fake: FakeTelegramServer, bytes: Buffer, statedSize?: number): Message['photo'] {
  const file = fake.file(bytes, { ...(statedSize !== undefined && { statedSize }) });
  return [{ ...file, width: 1280, height: 960 }];
}

function documentOf(fake: FakeTelegramServer, bytes: Buffer, name: string, mime: string, statedSize?: number): Message['document'] {
  const file = fake.file(bytes, { name, ...(statedSize !== undefined && { statedSize }) });
  return { ...file, file_name: name, mime_type: mime };
}

function forgetButton(message: SentMessage): string | undefined {
  const button = message.reply_markup?.inline_keyboard.flat().find((b) => /^Forget/.test(b.text));
  return button && 'callback_data' in button ? button.callback_data : undefined;
}

/** A model that describes any picture it is shown and otherwise says what it heard. */
function describingModel(): Promise<AnthropicDouble> {
  return startAnthropicDouble({
    responder: (seen) => {
      if (seen.messages.some((m) => (m.images?.length ?? 0) > 0)) return { kind: 'text', text: DESCRIPTION };
      return { kind: 'text', text: `heard: ${lastUserText(seen.messages)}` };
    },
  });
}

describe('Telegram media through npm start: a model that can see, a transcription server', () => {
  let fake: FakeTelegramServer;
  let model: AnthropicDouble;
  let ollama: OllamaDouble;
  let whisper: TranscriptionDouble;
  let run: Run;

  beforeAll(async () => {
    fake = await startFakeTelegram();
    model = await describingModel();
    ollama = await startOllamaDouble();
    whisper = await startTranscriptionDouble({ transcript: (audio) => (audio.includes('VOICE-BYTES') ? SPOKEN : '') });
    run = await startRun({ fake, model, ollama, env: { TRANSCRIPTION_URL: whisper.url, TRANSCRIPTION_API_KEY: 'whisper-key-0123456789' } });
  }, 120_000);

  afterAll(async () => {
    await stopRun(run);
    await Promise.all([fake?.close(), model?.stop(), ollama?.stop(), whisper?.stop()]);
  });

  it('a photo is described by the model and the description stored with a marker; the bytes are not', async () => {
    const photo = photoOf(fake, PHOTO);
    const [reply] = await sendMedia(run, { photo, caption: 'my new flatmate' }, 1);
    expect(reply).toMatch(/^heard: \[photo\] A porcelain flamingo/);
    const shown = model.requests.find((r) => r.messages.some((m) => m.images?.length));
    expect(shown?.messages[0]?.images).toEqual([PHOTO.toString('base64')]);
    const stored = await storedEpisode(run, /^\[photo\]/);
    expect(stored.content).toBe(`[photo] ${DESCRIPTION}\nCaption: my new flatmate`);
    expect(JSON.parse(stored.metadata!).attachments).toEqual([expect.objectContaining({ kind: 'photo', fileId: photo![0]!.file_id })]);
    const leaked = scanSqliteTables(run.dbFile, ['PHOTO-BYTES-MARKER', PHOTO.toString('base64').slice(0, 24)]).hits;
    expect(leaked).toEqual([]);
  });

  it('a photo over the size cap is not downloaded and the person is told why', async () => {
    const photo = photoOf(fake, PHOTO, 2 * 1024 * 1024);
    const replies = await sendMedia(run, { photo, caption: 'the big one' }, 2);
    expect(replies[0]).toBe('The photo is 2 MB, more than the 1 MB I can read, so I did not read it. I only noted that you sent it.');
    expect(fake.downloads().get(photo![0]!.file_id)).toBeUndefined();
  });

  it('a text document is read into memory as a document: its own conversation, searchable', async () => {
    const text = 'Packing list for Zanzibar: quokka plush, sunscreen, snorkel.\nFerry leaves at 7.';
    const [reply] = await sendMedia(run, { document: documentOf(fake, Buffer.from(text), 'trip.txt', 'text/plain') }, 1);
    expect(reply).toBe('I read \u201ctrip.txt\u201d into my memory as 1 part. Ask me about it any time; /forget and words from it removes them.');
    const part = await storedEpisode(run, /Packing list for Zanzibar/);
    expect(part.content).toBe(`[document \u201ctrip.txt\u201d, part 1 of 1]\n${text}`);
    expect(part.conversationId).toMatch(/^document:/);
    expect(JSON.parse(part.metadata!).document).toEqual(expect.objectContaining({ name: 'trip.txt', part: 1, parts: 1 }));
    const found = await fetch(`http://127.0.0.1:${run.apiPort}/scopes/${encodeURIComponent(SCOPE)}/search`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ query: 'quokka snorkel', strategy: 'keyword', kinds: ['episode'] }),
    });
    expect(found.status).toBe(200);
    expect(JSON.stringify(await found.json())).toContain('Packing list for Zanzibar');
  });

  it('a long Markdown file becomes several parts, in order', async () => {
    const paragraphs = Array.from({ length: 12 }, (_, i) => `## Day ${i + 1}\n\n${`Walked along the harbour and wrote notes number ${i + 1}. `.repeat(5)}`);
    const [reply] = await sendMedia(run, { document: documentOf(fake, Buffer.from(paragraphs.join('\n\n')), 'journal.md', 'text/markdown') }, 1);
    const parts = Number(/as (\d+) parts/.exec(reply!)?.[1]);
    expect(parts).toBeGreaterThan(1);
    // The parts only: the note of the document ("[document “journal.md”, read into memory as N parts]")
    // is stored too, a moment after the reply, and begins the same way.
    const isPart = (e: Episode) => /^\[document \u201cjournal\.md\u201d, part \d+ of \d+\]/.test(e.content);
    await run.fake.waitFor(() => episodes(run).filter(isPart).length === parts, REPLY_MS, 'the parts');
    const stored = episodes(run).filter(isPart);
    expect(stored.map((e) => /part (\d+) of/.exec(e.content)?.[1])).toEqual(Array.from({ length: parts }, (_, i) => String(i + 1)));
    expect(stored.every((e) => e.content.length < 1_600)).toBe(true);
    expect(stored.map((e) => e.content.replace(/^\[[^\]]*\]\n/, '')).join(' ')).toContain('notes number 12');
    const note = await storedEpisode(run, /^\[document \u201cjournal\.md\u201d, read into memory/);
    expect(note.content).toBe(`[document \u201cjournal.md\u201d, read into memory as ${parts} parts]`);
  });

  it('a PDF is read page by page; one with no text, one with too many pages and an unknown type are refused', async () => {
    const pdf = pdfWithPages([['Lease agreement for the flat on Rua das Flores'], ['Rent is due on the third of every month']]);
    expect(await sendMedia(run, { document: documentOf(fake, pdf, 'lease.pdf', 'application/pdf') }, 1)).toEqual([
      'I read \u201clease.pdf\u201d (2 pages) into my memory as 1 part. Ask me about it any time; /forget and words from it removes them.',
    ]);
    const part = await storedEpisode(run, /Rua das Flores/);
    expect(part.content).toContain('Rent is due on the third of every month');

    const scan = pdfWithPages([[], []]);
    expect(await sendMedia(run, { document: documentOf(fake, scan, 'scan.pdf', 'application/pdf') }, 1)).toEqual([
      'I did not read \u201cscan.pdf\u201d: I found no text in it (a scanned PDF has only pictures of pages). I noted that you sent it.',
    ]);
    const long = pdfWithPages([['one'], ['two'], ['three'], ['four'], ['five']]);
    expect(await sendMedia(run, { document: documentOf(fake, long, 'book.pdf', 'application/pdf') }, 1)).toEqual([
      'I did not read \u201cbook.pdf\u201d: it has 5 pages, more than the 3 I read. I noted that you sent it.',
    ]);
    expect(await sendMedia(run, { document: documentOf(fake, Buffer.from('PK\u0003\u0004'), 'plan.docx', 'application/octet-stream') }, 1)).toEqual([
      'I did not read \u201cplan.docx\u201d: I can read plain text (.txt), Markdown (.md) and PDF files only. I noted that you sent it.',
    ]);
    // Each refused document is still noted by its name.
    await storedEpisode(run, /^\[document plan\.docx\]/);
  });

  it('oversize documents are refused, whether the size is stated or only found while downloading', async () => {
    const big = Buffer.alloc(1024 * 1024 + 10, 'a');
    expect(await sendMedia(run, { document: documentOf(fake, big, 'huge.txt', 'text/plain', 5 * 1024 * 1024) }, 1)).toEqual([
      '\u201chuge.txt\u201d is 5 MB, more than the 1 MB I can read, so I did not read it. I only noted that you sent it.',
    ]);
    // A size stated small: the download itself stops at the cap.
    const [reply] = await sendMedia(run, { document: documentOf(fake, big, 'sneaky.txt', 'text/plain', 100) }, 1);
    expect(reply).toMatch(/^\u201csneaky\.txt\u201d is 1 MB, more than the 1 MB I can read/);
    expect(episodes(run).some((e) => e.content.includes('aaaaaaaaaa'))).toBe(false);
  });

  it('a voice message is transcribed by the configured server and answered', async () => {
    const file = fake.file(VOICE);
    const [reply] = await sendMedia(run, { voice: { ...file, duration: 12, mime_type: 'audio/ogg' } }, 1);
    // The double echoes the person's turns since its last answer: the noted documents come before it.
    expect(reply).toMatch(new RegExp(`^heard: [\\s\\S]*\\[voice message, 0:12\\] ${SPOKEN}$`));
    expect(whisper.requests.at(-1)).toEqual(expect.objectContaining({ model: 'whisper-1', mime: 'audio/ogg', authorization: 'Bearer whisper-key-0123456789' }));
    expect(whisper.requests.at(-1)!.bytes.equals(VOICE)).toBe(true);
    await storedEpisode(run, /^\[voice message, 0:12\] the plumber/);
    expect(scanSqliteTables(run.dbFile, ['VOICE-BYTES-MARKER']).hits).toEqual([]);
  });

  it('locations, contacts and stickers are stored as short text', async () => {
    await sendMedia(run, { location: { latitude: 38.7223, longitude: -9.1393 } }, 1);
    await sendMedia(run, { contact: { phone_number: '+351000000000', first_name: 'Inês', last_name: 'Costa' } }, 1);
    await sendMedia(
      run,
      { sticker: { ...fake.file(Buffer.from('webp')), type: 'regular', width: 512, height: 512, is_animated: false, is_video: false, emoji: '🦩' } },
      1,
    );
    const texts = episodes(run).map((e) => e.content);
    expect(texts).toEqual(expect.arrayContaining(['[location 38.72230, -9.13930]', '[contact Inês Costa]', '[sticker 🦩]']));
  });

  it('/forget of words found only in a document leaves them nowhere', async () => {
    const before = fake.sent(ANA.id).length;
    fake.message(ANA, '/forget zanzibar quokka');
    const question = await fake.waitFor(
      () =>
        fake
          .sent(ANA.id)
          .slice(before)
          .find((m) => forgetButton(m)),
      REPLY_MS,
      'the /forget question',
    );
    fake.press(ANA, question, forgetButton(question)!);
    await fake.waitFor(() => question.edits > 0 && /forgot|Done/i.test(question.text ?? ''), REPLY_MS, 'the confirmation');
    // A recorded update keeps its text until it is handled (the press's record holds the question
    // until the edit returns): the check starts once every update is done, as it soon is.
    await fake.waitFor(() => pendingUpdates(run) === 0, REPLY_MS, 'every update handled');
    const { hits } = scanSqliteTables(run.dbFile, ['zanzibar', 'quokka']);
    expect(hits.map((h) => `${h.table}.${h.column}: ${h.excerpt}`)).toEqual([]);
    expect(rawFileHits(run.dbFile, ['zanzibar', 'quokka'])).toEqual([]);
    // The rest of the document's words went with the part that held them; other documents stay.
    expect(episodes(run).some((e) => e.content.includes('Rua das Flores'))).toBe(true);
  });
});

describe('Telegram media through npm start: a model that cannot see, no transcription', () => {
  let fake: FakeTelegramServer;
  let model: AnthropicDouble;
  let ollama: OllamaDouble;
  let run: Run;

  beforeAll(async () => {
    fake = await startFakeTelegram();
    model = await describingModel();
    model.refuseImages(true);
    ollama = await startOllamaDouble();
    run = await startRun({ fake, model, ollama });
  }, 120_000);

  afterAll(async () => {
    await stopRun(run);
    await Promise.all([fake?.close(), model?.stop(), ollama?.stop()]);
  });

  it('keeps the caption alone and says once that it cannot see', async () => {
    const first = await sendMedia(run, { photo: photoOf(fake, PHOTO), caption: 'sunset at the pier' }, 2);
    expect(first).toEqual([expect.stringMatching(/^I cannot see pictures yet/), 'heard: [photo] sunset at the pier']);
    await storedEpisode(run, /^\[photo\] sunset at the pier$/);
    const second = await sendMedia(run, { photo: photoOf(fake, PHOTO), caption: 'the pier again' }, 1);
    expect(second).toEqual(['heard: [photo] the pier again']);
    // Refused once, not asked again with the second photo.
    expect(model.requests.filter((r) => r.reply === 'refused')).toHaveLength(1);
  });

  it('stores a voice message as its length and says once that voice is not understood yet', async () => {
    const first = await sendMedia(run, { voice: { ...fake.file(VOICE), duration: 12, mime_type: 'audio/ogg' } }, 1);
    expect(first).toEqual([expect.stringMatching(/^I cannot understand voice messages yet/)]);
    await storedEpisode(run, /^\[voice message, 0:12\]$/);
    fake.media(ANA, { video_note: { ...fake.file(VOICE), length: 240, duration: 7 } });
    await storedEpisode(run, /^\[video message, 0:07\]$/);
    expect(fake.sent(ANA.id).filter((m) => /voice messages/.test(m.text ?? ''))).toHaveLength(1);
  });
});

describe('Telegram media through npm start: MEDIA_VISION=off with an Ollama model', () => {
  let fake: FakeTelegramServer;
  let unused: AnthropicDouble;
  let ollama: OllamaDouble;
  let run: Run;

  beforeAll(async () => {
    fake = await startFakeTelegram();
    unused = await describingModel();
    ollama = await startOllamaDouble({ responder: (seen) => ({ kind: 'text', text: `heard: ${lastUserText(seen.messages)}` }) });
    run = await startRun({ fake, model: unused, ollama, env: { LLM_PROVIDER: 'ollama', MEDIA_VISION: 'off' } });
  }, 120_000);

  afterAll(async () => {
    await stopRun(run);
    await Promise.all([fake?.close(), unused?.stop(), ollama?.stop()]);
  });

  it('never shows the model a photo: the caption is kept and the person told once', async () => {
    const replies = await sendMedia(run, { photo: photoOf(fake, PHOTO), caption: 'grandma at the beach' }, 2);
    expect(replies).toEqual([expect.stringMatching(/^I cannot see pictures yet/), 'heard: [photo] grandma at the beach']);
    // A photo without a caption holds nothing to answer: noted, and the notice is not repeated.
    fake.media(ANA, { photo: photoOf(fake, PHOTO) });
    await run.fake.waitFor(() => episodes(run).filter((e) => e.content === '[photo]').length === 1, REPLY_MS, 'the noted photo');
    expect(fake.sent(ANA.id).filter((m) => /cannot see pictures/.test(m.text ?? ''))).toHaveLength(1);
    expect(ollama.chatRequests.some((r) => r.messages.some((m) => m.images?.length))).toBe(false);
    expect(fake.downloads().size).toBe(0);
  });
});
