/**
 * Does memory stay clean over months? Simulated people talk to the composed service through the
 * webhook channel for months of simulated time; every simulated night the sleep jobs run; the
 * model is a loopback double that makes the mistakes real models make (bench/memory/). At the end
 * the store is measured: near-duplicate memories (under the local USE-lite embedder), junk
 * memories, the soul's size, reply prompts over an 8k window's budget, model cost per episode.
 *
 *   npm run bench:memory [-- --people 20 --days 180 --seed 7 [--hash] [--min-episodes N] [--max-wait-hours H] [--no-schema] [--trace-late]]
 *
 * The pipeline embeds with the configured embedder (USE-lite, as `npm start`); `--hash` swaps in
 * the hash embedder for a quick run (blind to paraphrase: restatements are not recognized).
 * Structured answers go with their answer schema, which the model keeps to; `--no-schema` makes
 * the model server refuse schemas, so answers are asked for in the prompt and repaired (the
 * repair calls per 1,000 episodes of the two modes are the figure to compare).
 *
 * The last line of the output is one JSON object with the figures (docs/sleep.md, "Memory
 * hygiene benchmark").
 */
import { createHashEmbedder } from '../src/vectors/embedders/hash-embedder';
import { createLocalEmbedder } from '../src/vectors/embedders/local-embedder';
import { GOALS, measureStore, measureWire, percentile, summarize } from './memory/metrics';
import { DEFAULT_MISBEHAVIOUR } from './memory/misbehaving-model';
import { MESSAGE_MIX } from './memory/messages';
import { runSimulation } from './memory/simulation';

function argument(name: string, fallback: number): number {
  const at = process.argv.indexOf(`--${name}`);
  const value = at !== -1 ? Number(process.argv[at + 1]) : fallback;
  if (!Number.isFinite(value) || value <= 0) throw new Error(`--${name} must be a positive number`);
  return value;
}

function table(title: string, rows: ReadonlyArray<readonly [string, string | number, string?]>): void {
  console.log(`\n${title}`);
  const width = Math.max(...rows.map((r) => r[0].length));
  for (const [name, value, goal] of rows) console.log(`  ${name.padEnd(width)}  ${String(value).padStart(10)}${goal ? `   goal ${goal}` : ''}`);
}

async function main(): Promise<void> {
  const people = argument('people', 20);
  const days = argument('days', 180);
  const seed = argument('seed', 7);
  console.log(`memory hygiene bench: ${people} people, ${days} days, seed ${seed}`);
  console.log(
    `model mistakes (rates): ${Object.entries(DEFAULT_MISBEHAVIOUR)
      .map(([k, v]) => `${k} ${v}`)
      .join(', ')}`,
  );
  const hash = process.argv.includes('--hash');
  // What happened to each message cited later than the night after it (the lag's tail).
  const traceLate = process.argv.includes('--trace-late');
  console.log(`pipeline embedder: ${hash ? 'hash (--hash)' : 'the configured one (local USE-lite)'}`);
  // The consolidation schedule (defaults: the service's, SLEEP_MIN_EPISODES 10, SLEEP_MAX_WAIT_HOURS 24).
  const env: Record<string, string> = {};
  if (process.argv.includes('--min-episodes')) env.SLEEP_MIN_EPISODES = String(argument('min-episodes', 10));
  if (process.argv.includes('--max-wait-hours')) env.SLEEP_MAX_WAIT_HOURS = String(argument('max-wait-hours', 24));
  if (Object.keys(env).length > 0)
    console.log(
      `settings: ${Object.entries(env)
        .map(([k, v]) => `${k}=${v}`)
        .join(' ')}`,
    );
  const refuseSchemas = process.argv.includes('--no-schema');
  const structuredMode = refuseSchemas ? 'prompt' : 'schema';
  console.log(
    `structured answers: ${refuseSchemas ? 'the server refuses answer schemas (--no-schema): prompt, extraction and repair' : 'answer schema sent (structured outputs)'}`,
  );
  const sim = await runSimulation({
    people,
    days,
    seed,
    env,
    refuseSchemas,
    traceLate,
    log: (line) => console.log(line),
    ...(hash && { embedder: createHashEmbedder({ dimension: 256 }) }),
  });
  try {
    const embedder = createLocalEmbedder({ runOn: 'main' });
    const measuring = performance.now();
    const store = await measureStore(sim.service.core.db.prisma, embedder);
    await embedder.close();
    const wire = measureWire(sim.model.calls, sim.replyLimit);
    const s = summarize(store, wire, { ...sim.lag, questions: sim.questions });
    const facts = sim.people.reduce((n, p) => n + p.facts.length, 0);
    table('volume', [
      ['people', people],
      ['simulated days', days],
      ['facts of ground truth', facts],
      ['conversations (one every 2-4 days, 3-6 messages)', sim.conversations.length],
      ['messages', sim.messages],
      ['episodes stored', store.episodes],
      ['replies that failed', sim.failedReplies],
      ['message mix', `${MESSAGE_MIX.newFact * 100}% new fact, ${MESSAGE_MIX.restated * 100}% restated, rest small talk`],
      ['simulation seconds', sim.seconds.toFixed(0)],
      ['measuring seconds (USE-lite)', ((performance.now() - measuring) / 1000).toFixed(0)],
    ]);
    table('memories', [
      ['active memories', store.activeMemories],
      ['per 1,000 episodes', s.activeMemoriesPer1000Episodes],
      ['written at a conversation end (not by sleep)', store.fromConversationEnds],
      ['near-duplicate pairs (cosine >= 0.9)', store.nearDuplicatePairs],
      ['near-duplicates % of active', s.nearDuplicatePct, `<= ${GOALS.nearDuplicatePct} %`],
      ['memories with a near-duplicate % of active', s.memoriesWithDuplicatePct],
      ['junk: no evidence from the person', store.junk['no-user-evidence']],
      ['junk: about the assistant', store.junk['about-assistant']],
      ['junk: placeholder', store.junk.placeholder],
      ['junk % of active', s.junkPct, `<= ${GOALS.junkPct} %`],
    ]);
    table('soul', [
      ['scopes with a soul', store.soulTokens.length],
      ['tokens p95', s.soulTokensP95, `<= ${GOALS.soulTokensP95}`],
      ['tokens max', Math.max(0, ...store.soulTokens)],
    ]);
    table(`reply prompts (8k window: over ${sim.replyLimit} tokens on the wire)`, [
      ['reply prompts', wire.replyPrompts],
      ['over budget', wire.replyOverBudget],
      ['over budget %', s.promptOverBudgetPct, `${GOALS.promptOverBudgetPct}`],
      ['tokens p95', wire.replyTokensP95],
      ['tokens max', wire.replyTokensMax],
    ]);
    table('model cost (on the wire, body characters / 4)', [
      ...Object.entries(wire.byPurpose).map(([purpose, v]) => [`${purpose}: calls / input tokens`, `${v.calls} / ${v.inputTokens}`] as const),
      ['calls per episode (memory work: all but replies)', s.llmCallsPerEpisode],
      ['input tokens per episode (memory work)', s.inputTokensPerEpisode, `<= ${GOALS.inputTokensPerEpisode}`],
      ['calls per episode (all purposes, replies too)', s.allPurposesCallsPerEpisode],
      ['input tokens per episode (all purposes)', s.allPurposesInputTokensPerEpisode],
      [`repair calls (structured answers: ${structuredMode})`, wire.repairs],
      ['repair calls per 1,000 episodes', s.repairCallsPer1000Episodes],
    ]);
    const held = sim.questions.filter((q) => q.held).length;
    table('schedule: lag against cost', [
      ['settings', `SLEEP_MIN_EPISODES ${sim.service.core.config.sleep.minEpisodes}, SLEEP_MAX_WAIT_HOURS ${sim.service.core.config.sleep.maxWaitHours}`],
      ['person messages cited by a memory (everyone / on most days)', `${sim.lag.allHours.length} / ${sim.lag.dailyTalkerHours.length}`],
      [
        'lag h p50 / p95, people on most days',
        `${percentile(sim.lag.dailyTalkerHours, 50).toFixed(1)} / ${s.consolidationLagHoursP95}`,
        `p95 <= ${GOALS.consolidationLagHoursP95}`,
      ],
      ['lag h p50 / p95, everyone', `${percentile(sim.lag.allHours, 50).toFixed(1)} / ${percentile(sim.lag.allHours, 95).toFixed(1)}`],
      ['person-nights with a consolidation run', sim.lag.personNights],
      ['memory calls in the nights', sim.lag.nightCalls],
      ['calls per person-night', s.consolidationCallsPerPersonNight ?? 0, `<= ${GOALS.consolidationCallsPerPersonNight}`],
      ['memory calls per person per simulated night', (sim.lag.nightCalls / (people * days)).toFixed(3)],
    ]);
    table('recent facts (asked 1-20 days after they were said)', [
      ['questions', sim.questions.length],
      ['reply prompts holding the fact', held],
      ['recall %', s.recentFactRecallPct ?? 0, `>= ${GOALS.recentFactRecallPct} %`],
      ...['1-3', '4-10', '11-20'].map((band) => {
        const [lo, hi] = band.split('-').map(Number) as [number, number];
        const inBand = sim.questions.filter((q) => q.daysAgo >= lo && q.daysAgo <= hi);
        return [`  said ${band} days before: held / asked`, `${inBand.filter((q) => q.held).length} / ${inBand.length}`] as const;
      }),
    ]);
    table(
      'mistakes the model made (count)',
      Object.entries(sim.model.mistakes).map(([k, v]) => [k, v] as const),
    );
    console.log('\nexamples');
    for (const line of [...store.examples.duplicates, ...store.examples.junk]) console.log(`  ${line}`);
    if (traceLate) {
      console.log(`\nmessages cited after the night that followed them (${sim.lag.late.length})`);
      for (const l of sim.lag.late) {
        console.log(`  ${l.dailyTalker ? '*' : ' '} ${l.person} ${l.saidAt.toISOString()} +${l.nightsLate} night(s), ${l.hours.toFixed(1)} h: "${l.text}"`);
        console.log(`      first night: ${l.firstNight}${l.firstNightRejected.length > 0 ? `; refused: ${l.firstNightRejected.join(' | ')}` : ''}`);
        console.log(`      consolidated ${l.consolidatedAt?.toISOString() ?? 'never'} after ${l.attempts} failed attempt(s); cited by ${l.citedBy}`);
      }
    }
    console.log(JSON.stringify({ ...s, structuredMode }));
  } finally {
    await sim.stop();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
