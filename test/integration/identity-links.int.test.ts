/**
 * One person, one memory, on every channel, through the real entry points: `npm start`'s
 * main.ts as a child process with the Telegram channel on the loopback Bot API, the Anthropic
 * double as its model and the Ollama double as its embedder; `cli chat` as a child process for
 * the terminal, on the same store. What the model is asked is read from the double's request log.
 *
 * - Pairing: a fact told on Telegram is absent from the terminal's reply prompt until the person
 *   sends `/link` on Telegram and `/link CODE` in the terminal; then the terminal's reply prompt
 *   holds it. After `/unlink` in the terminal, what is said there no longer reaches Telegram's.
 *   A wrong code is refused and a used code does not work twice.
 * - The owner settings (OWNER_TELEGRAM_USER_ID, OWNER_TERMINAL_USER): the same fact reaches the
 *   terminal's reply prompt with no linking at all.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { startOllamaDouble, type OllamaDouble } from '../doubles/ollama-server';
import { ROOT, runTs } from '../support/run-process';
import { startNocturne, type RunningNocturne } from '../support/service-harness';

const ANA = { id: 7201, first_name: 'Ana' };
const CAT = 'Quillifer';
const DOG = 'Bramblewick';
const REPLY_TIMEOUT_MS = 60_000;

/** `npm start` with Telegram (Ana allowed) and a model of its own, on a new store, sharing the embedder double. */
function startPerson(ollama: OllamaDouble, extra: Record<string, string> = {}): Promise<RunningNocturne> {
  return startNocturne({ telegram: { start: {}, allowedUsers: [ANA.id] }, anthropic: { start: {} }, ollama: { use: ollama }, env: extra });
}

/** Sends `text` on Telegram as Ana and returns the bot's answer. */
async function telegram(run: RunningNocturne, text: string): Promise<string> {
  const before = run.telegram!.sent(ANA.id).length;
  run.telegram!.message(ANA, text);
  await run.telegram!.waitFor(() => run.telegram!.sent(ANA.id).length > before, REPLY_TIMEOUT_MS, `the answer to ${text}`);
  return run.telegram!.sent(ANA.id).at(-1)?.text ?? '';
}

/** `cli chat --name NAME` with `lines` as its input; returns what it printed. */
async function terminal(run: RunningNocturne, name: string, lines: readonly string[]): Promise<string> {
  const result = await runTs('src/cli/index.ts', ['chat', '--name', name], run.env, ROOT, `${[...lines, '/quit'].join('\n')}\n`);
  expect({ code: result.code, stderr: result.code === 0 ? '' : result.stderr }).toEqual({ code: 0, stderr: '' });
  return result.stdout;
}

/** The reply prompt the model was given for the message `question` (the last request whose last turn is it). */
function promptFor(run: RunningNocturne, question: string): string {
  const request = run.anthropic!.requests.filter((r) => r.messages.at(-1)?.text?.includes(question)).at(-1);
  if (!request) throw new Error(`no model request answered "${question}"`);
  return JSON.stringify({ system: request.system, messages: request.messages });
}

describe('one person across channels (npm start with Telegram, cli chat, the model double)', () => {
  let ollama: OllamaDouble;
  const figures: string[] = [];

  beforeAll(async () => {
    ollama = await startOllamaDouble();
  });

  afterAll(async () => {
    await ollama?.stop();
    // eslint-disable-next-line no-console
    console.log(`identity-links: ${figures.join('; ')}`);
  });

  it('a fact told on Telegram reaches the terminal’s reply prompt after /link, and /unlink stops new messages joining', async () => {
    const run = await startPerson(ollama);
    try {
      await telegram(run, `My cat is called ${CAT}.`);

      // Not linked yet: the terminal is someone else.
      await terminal(run, 'ana', ['What is my cat called, before linking?']);
      const unlinked = promptFor(run, 'before linking');
      figures.push(`before /link: the cat's name in the terminal's prompt: ${unlinked.includes(CAT)}`);
      expect(unlinked).not.toContain(CAT);

      const answer = await telegram(run, '/link');
      const code = /Your link code: ([0-9A-Z]{8})/.exec(answer)?.[1];
      expect({ answer, code: code !== undefined }).toEqual({ answer: expect.stringContaining('merged'), code: true });

      // A wrong code is refused, and says so; the right one joins.
      const printed = await terminal(run, 'ana', ['/link ZZZZZZZZ', `/link ${code}`, 'What is my cat called, after linking?']);
      expect(printed).toMatch(/that code is not valid/i);
      expect(printed).toContain('Linked: this chat now shares one memory');
      expect(printed).toContain('what was merged stays merged');
      const linked = promptFor(run, 'after linking');
      figures.push(`after /link: the cat's name in the terminal's prompt: ${linked.includes(CAT)}`);
      expect(linked).toContain(CAT);

      // Single use: the same code from another identity joins nothing.
      const reused = await terminal(run, 'bob', [`/link ${code}`, 'What is my cat called, asks Bob?']);
      expect(reused).toMatch(/that code is not valid/i);
      expect(promptFor(run, 'asks Bob')).not.toContain(CAT);

      // After /unlink, what is said in the terminal stays out of the Telegram memory.
      const unlinking = await terminal(run, 'ana', ['/unlink', `My dog is called ${DOG}.`]);
      expect(unlinking).toContain('Unlinked');
      await telegram(run, 'What is my dog called, on Telegram?');
      const onTelegram = promptFor(run, 'on Telegram');
      figures.push(`after /unlink: the dog's name in Telegram's prompt: ${onTelegram.includes(DOG)}`);
      expect(onTelegram).not.toContain(DOG);
      // What was merged stays: the Telegram memory still holds what the terminal said while linked.
      expect(onTelegram).toContain('after linking');
    } finally {
      await run.stop();
    }
  }, 300_000);

  it('with the owner settings, a fact told on Telegram reaches the terminal’s reply prompt without linking', async () => {
    const run = await startPerson(ollama, { OWNER_TELEGRAM_USER_ID: String(ANA.id), OWNER_TERMINAL_USER: 'ana' });
    try {
      await telegram(run, `My cat is called ${CAT}.`);
      await terminal(run, 'ana', ['What is my cat called, asks the owner?']);
      const prompt = promptFor(run, 'asks the owner');
      figures.push(`owner settings: the cat's name in the terminal's prompt: ${prompt.includes(CAT)}`);
      expect(prompt).toContain(CAT);
      // The owner's chats cannot be linked away: they already share the owner's memory.
      expect(await terminal(run, 'ana', ['/link'])).toContain('owner');
    } finally {
      await run.stop();
    }
  }, 300_000);
});
