/**
 * The world around the service in a load run, in a process of its own (forked by load-run.ts):
 * the fake Telegram Bot API, a loopback Anthropic model that answers at once, a loopback Ollama
 * (for EMBEDDER=ollama), and the people: a steady stream of messages from many chats, in bursts so
 * that one chat often has several messages in flight. It records when each message was sent and
 * when each reply arrived (both on this process's clock), so latency, loss, duplication and
 * per-chat order are measured here, and the service's process holds nothing of the load's
 * bookkeeping (its memory figures are its own).
 *
 * Protocol (IPC, {@link WorldRequest} / {@link WorldEvent}): `ready` with the addresses; `start`
 * the load; `stats` any time; `drain` waits until every message is answered (or a timeout) and
 * returns the final report; `stop` closes everything and exits.
 */
import { startAnthropicDouble } from '../doubles/anthropic-server';
import { lastUserText, likesPlan } from '../doubles/llm-script';
import { startOllamaDouble } from '../doubles/ollama-server';
import { startFakeTelegram, type FakeUser } from '../doubles/telegram-server';
import { createRng } from './chaos-support';

export interface LoadSpec {
  readonly chats: number;
  /** Messages per second, all chats together. */
  readonly rate: number;
  readonly durationMs: number;
  readonly seed: number;
}

export interface LatencyFigures {
  readonly count: number;
  readonly p50: number;
  readonly p95: number;
  readonly max: number;
}

export interface WorldStats {
  readonly sent: number;
  /** Messages with at least one reply. */
  readonly answered: number;
  /** Replies received (reply messages that name a message of the load). */
  readonly replies: number;
  /** Other messages the bot sent (refusals, errors, digests), by their first words. */
  readonly other: Readonly<Record<string, number>>;
  /** Reply latency since the previous `stats`, and over the whole run. */
  readonly window: LatencyFigures;
  readonly overall: LatencyFigures;
}

export interface WorldReport extends WorldStats {
  /** Messages never answered. */
  readonly lost: number;
  /** Messages answered more than once. */
  readonly duplicated: number;
  /** Replies that arrived before the reply to an earlier message of the same chat. */
  readonly orderViolations: number;
  /** Chats whose replies were all in order. */
  readonly chatsInOrder: number;
  readonly chats: number;
  /** Messages sent in a chat while an earlier one of the same chat was still unanswered. */
  readonly overlapping: number;
  /** Bot API calls the service made, by method. */
  readonly apiCalls: Readonly<Record<string, number>>;
  readonly modelRequests: number;
  readonly drainMs: number;
}

export type WorldRequest =
  | { readonly type: 'start'; readonly spec: LoadSpec }
  | { readonly type: 'stats'; readonly id: number }
  | { readonly type: 'drain'; readonly id: number; readonly timeoutMs: number }
  | { readonly type: 'stop' };

export type WorldEvent =
  | { readonly type: 'ready'; readonly apiRoot: string; readonly token: string; readonly anthropicUrl: string; readonly ollamaUrl: string }
  | { readonly type: 'stats'; readonly id: number; readonly stats: WorldStats }
  | { readonly type: 'report'; readonly id: number; readonly report: WorldReport }
  | { readonly type: 'error'; readonly message: string };

/** User (and private chat) id of chat `i` of a load run. */
export function loadUserId(i: number): number {
  return 7_100_000 + i;
}

interface Sent {
  readonly chat: number;
  readonly seq: number;
  readonly at: number;
  readonly replies: number[];
}

function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

function figures(values: readonly number[]): LatencyFigures {
  const sorted = [...values].sort((a, b) => a - b);
  return { count: sorted.length, p50: percentile(sorted, 50), p95: percentile(sorted, 95), max: sorted.at(-1) ?? 0 };
}

const TAG = /\bc(\d+)#(\d+)\b/g;
const WORDS = ['tea', 'coffee', 'the park', 'my sister', 'the dog', 'work', 'dinner', 'the weekend', 'a book', 'the train', 'music', 'the garden'];

async function main(): Promise<void> {
  const send = (event: WorldEvent) => process.send?.(event);
  const fake = await startFakeTelegram();
  let modelRequests = 0;
  // Answers at once: a reply names the message it answers; consolidation gets a small valid plan.
  const anthropic = await startAnthropicDouble({
    responder: (seen) => {
      modelRequests++;
      if (seen.system?.includes('memory consolidation system')) return likesPlan(seen.messages[0]?.text ?? '');
      if (seen.tools.length === 0) return { kind: 'text', text: '{}' };
      const said = lastUserText(seen.messages);
      const tags = [...said.matchAll(TAG)];
      const tag = tags.at(-1)?.[0] ?? 'c?#?';
      return { kind: 'text', text: `re: ${tag} Thanks, noted. I will keep that in mind for later.` };
    },
  });
  const ollama = await startOllamaDouble({ models: ['nomic-embed-text'] });

  const sent: Sent[] = [];
  const bySeq = new Map<number, Sent[]>();
  const other: Record<string, number> = {};
  const replyOrder = new Map<number, number[]>();
  let replies = 0;
  let scanned = 0;
  let windowLatencies: number[] = [];
  const allLatencies: number[] = [];
  let overlapping = 0;
  let generator: NodeJS.Timeout | undefined;

  /** Reads the sendMessage calls recorded since the last scan. */
  function scan(): void {
    const calls = fake.calls('sendMessage');
    for (; scanned < calls.length; scanned++) {
      const call = calls[scanned]!;
      const text = String(call.payload.text ?? '');
      const chat = Number(call.payload.chat_id) - loadUserId(0);
      const match = /^re: c(\d+)#(\d+)\b/.exec(text);
      const message = match && Number(match[1]) === chat ? bySeq.get(chat)?.[Number(match[2]) - 1] : undefined;
      if (!message) {
        const key = text.split(/\s+/).slice(0, 4).join(' ');
        other[key] = (other[key] ?? 0) + 1;
        continue;
      }
      message.replies.push(call.at);
      replies++;
      const latency = call.at - message.at;
      windowLatencies.push(latency);
      allLatencies.push(latency);
      const order = replyOrder.get(chat) ?? [];
      order.push(message.seq);
      replyOrder.set(chat, order);
    }
  }

  function stats(): WorldStats {
    scan();
    const result: WorldStats = {
      sent: sent.length,
      answered: sent.filter((m) => m.replies.length > 0).length,
      replies,
      other: { ...other },
      window: figures(windowLatencies),
      overall: figures(allLatencies),
    };
    windowLatencies = [];
    return result;
  }

  function start(spec: LoadSpec): void {
    const rng = createRng(spec.seed);
    const users: FakeUser[] = Array.from({ length: spec.chats }, (_, i) => ({ id: loadUserId(i), first_name: `Person${i}` }));
    const began = Date.now();
    generator = setInterval(() => {
      const elapsed = Date.now() - began;
      if (elapsed >= spec.durationMs) {
        clearInterval(generator);
        generator = undefined;
        return;
      }
      let due = Math.floor((elapsed / 1000) * spec.rate) - sent.length;
      while (due > 0) {
        const chat = rng.int(spec.chats);
        // Bursts: a person often sends two or three messages in a row.
        const burst = Math.min(due, rng.next() < 0.3 ? 2 + rng.int(2) : 1);
        for (let b = 0; b < burst; b++) {
          const list = bySeq.get(chat) ?? [];
          if (list.some((m) => m.replies.length === 0)) overlapping++;
          const seq = list.length + 1;
          const tag = `c${chat}#${seq}`;
          const body = rng.next() < 0.2 ? `I really like ${rng.pick(WORDS)}.` : `Today I thought about ${rng.pick(WORDS)} and ${rng.pick(WORDS)} again.`;
          const message: Sent = { chat, seq, at: Date.now(), replies: [] };
          list.push(message);
          bySeq.set(chat, list);
          sent.push(message);
          fake.message(users[chat]!, `${tag} ${body}`);
          due--;
        }
      }
      if (elapsed % 1000 < 50) scan();
    }, 50);
  }

  async function drain(timeoutMs: number): Promise<WorldReport> {
    const began = Date.now();
    while (generator !== undefined && Date.now() - began < timeoutMs) await new Promise((r) => setTimeout(r, 50));
    const drained = Date.now();
    for (;;) {
      scan();
      if (sent.every((m) => m.replies.length > 0) || Date.now() - drained > timeoutMs) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    // A little longer, so a late duplicate would be seen.
    await new Promise((r) => setTimeout(r, 500));
    const base = stats();
    let orderViolations = 0;
    let chatsInOrder = 0;
    for (const [, seqs] of replyOrder) {
      let ok = true;
      for (let i = 1; i < seqs.length; i++) if (seqs[i]! <= seqs[i - 1]!) orderViolations++, (ok = false);
      if (ok) chatsInOrder++;
    }
    const apiCalls: Record<string, number> = {};
    for (const call of fake.calls()) apiCalls[call.method] = (apiCalls[call.method] ?? 0) + 1;
    return {
      ...base,
      overall: figures(allLatencies),
      lost: sent.filter((m) => m.replies.length === 0).length,
      duplicated: sent.filter((m) => m.replies.length > 1).length,
      orderViolations,
      chatsInOrder,
      chats: replyOrder.size,
      overlapping,
      apiCalls,
      modelRequests,
      drainMs: Date.now() - drained,
    };
  }

  process.on('message', (request: WorldRequest) => {
    void (async () => {
      try {
        switch (request.type) {
          case 'start':
            start(request.spec);
            break;
          case 'stats':
            send({ type: 'stats', id: request.id, stats: stats() });
            break;
          case 'drain':
            send({ type: 'report', id: request.id, report: await drain(request.timeoutMs) });
            break;
          case 'stop':
            if (generator) clearInterval(generator);
            await fake.close();
            await anthropic.stop();
            await ollama.stop();
            process.disconnect?.();
            process.exit(0);
        }
      } catch (error) {
        send({ type: 'error', message: error instanceof Error ? (error.stack ?? error.message) : String(error) });
      }
    })();
  });
  process.on('disconnect', () => process.exit(0));
  send({ type: 'ready', apiRoot: fake.apiRoot, token: fake.token, anthropicUrl: anthropic.url, ollamaUrl: ollama.url });
}

if (process.send && process.env.NOCTURNE_LOAD_WORLD === '1') {
  main().catch((error: unknown) => {
    process.send?.({ type: 'error', message: error instanceof Error ? (error.stack ?? error.message) : String(error) });
    process.exit(1);
  });
}
