/**
 * The memory page in a real browser: Debian's headless Chromium driven by puppeteer-core, against
 * `npm start` (a child process) over a SQLite store holding two people's scopes imported from JSON
 * exports with the CLI. Each check goes through the page as a person uses it (taps, typing), and
 * what an action changed is read back through the admin API's audit.
 *
 * - Telegram Mini App: init data signed with the bot token in the URL hash shows that person's
 *   memories and nobody else's; forged, expired and another bot's init data show the refusal and
 *   no data.
 * - Browser: the `cli web-link` link logs in; the same link again is refused; a mutation without
 *   the CSRF token is refused.
 * - Actions: correct (the new text shown, a `correct` audit event), forget (the preview, then gone,
 *   a `forget` event), pin (shown pinned, a `pin` event), the export downloads.
 * - The timeline chart (a canvas, one point per night), the graph (one SVG node per node, a tap
 *   opens an entity's profile) and the profile (the soul text) render.
 *
 * Without Chromium the suite is skipped, saying why (.ci/run installs it).
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import fs from 'node:fs';
import path from 'node:path';
import puppeteer, { type Browser, type BrowserContext, type ElementHandle, type Page } from 'puppeteer-core';
import { tempDir } from '../support/databases';
import { ANA, BRUNO, MARKUP_MEMORY } from './web-page-fixture';
import { findChromium, miniAppUrl, PHONE, signInitData, startPageService, type PageService } from './web-page-support';

const chromium = findChromium();
const describeWithBrowser = 'path' in chromium ? describe : describe.skip;
if (!('path' in chromium)) console.log(`web-page browser tests skipped: ${chromium.missing}`);

/** How long one step in the page may take on a loaded 2-core machine. */
const STEP_MS = 30_000;
/** Init data older than this is expired (WEB_INIT_DATA_MAX_AGE_SECONDS' default, a day), by a margin. */
const EXPIRED_AGE_MS = 2 * 24 * 60 * 60 * 1000;
const REFUSAL = 'Open this page again from the bot.';

interface AuditEvent {
  readonly action: string;
  readonly subjectId: string | null;
  readonly reason: string | null;
}

describeWithBrowser('the memory page in Chromium', () => {
  let service: PageService;
  let browser: Browser;
  const downloads = tempDir('nocturne-web-page-downloads-');
  const contexts: BrowserContext[] = [];

  beforeAll(async () => {
    service = await startPageService();
    browser = await puppeteer.launch({
      executablePath: (chromium as { path: string }).path,
      headless: true,
      // Root in CI and containers: Chromium's sandbox needs user namespaces it may not have.
      args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
    });
  }, 240_000);

  afterAll(async () => {
    await browser?.close();
    await service?.stop();
    fs.rmSync(downloads, { recursive: true, force: true });
  }, 60_000);

  /** A fresh browser profile (no cookies) with a phone's screen. */
  async function freshPage(): Promise<Page> {
    const context = await browser.createBrowserContext({ downloadBehavior: { policy: 'allow', downloadPath: downloads } });
    contexts.push(context);
    const page = await context.newPage();
    // What went wrong inside the page is printed with the test's output.
    page.on('pageerror', (error) => process.stderr.write(`web-page: page error: ${String(error)}\n`));
    page.on('console', (message) => {
      if (message.type() === 'error') process.stderr.write(`web-page: console: ${message.text()}\n`);
    });
    await page.setViewport(PHONE);
    page.setDefaultTimeout(STEP_MS);
    return page;
  }

  /** Opens the page as a Mini App with `initData` and waits for it to settle (ready or refused). */
  async function openMiniApp(initData: string): Promise<Page> {
    const page = await freshPage();
    await page.goto(miniAppUrl(service.base, initData));
    await page.waitForSelector('body[data-state]');
    return page;
  }

  const state = (page: Page) => page.$eval('body', (body) => body.dataset.state ?? '');
  const statusText = (page: Page) => page.$eval('#status', (line) => line.textContent ?? '');
  const memoryTexts = (page: Page) => page.$$eval('article.memory .content', (nodes) => nodes.map((n) => n.textContent ?? ''));
  /** The card whose memory text is `text`, once the page shows it. */
  async function cardOf(page: Page, text: string): Promise<ElementHandle> {
    const selector = `article.memory[data-id]`;
    await page.waitForFunction(shows(selector, text));
    for (const card of await page.$$(selector)) if ((await card.$eval('.content', (node) => node.textContent)) === text) return card;
    throw new Error(`no card shows ${text}`);
  }
  /** A page-side condition (a string: the tests compile without the DOM's types): a card of `selector` shows `text`. */
  const shows = (selector: string, text: string): string =>
    `Array.from(document.querySelectorAll(${JSON.stringify(`${selector} .content`)})).some((n) => n.textContent === ${JSON.stringify(text)})`;
  const audit = async (): Promise<AuditEvent[]> =>
    ((await service.admin(`/scopes/${encodeURIComponent(service.facts.ana.scopeId)}/audit?limit=100`)) as { events: AuditEvent[] }).events;

  async function waitForMemories(page: Page, count: number): Promise<string[]> {
    await page.waitForFunction(`document.querySelectorAll('article.memory').length === ${count}`);
    return memoryTexts(page);
  }

  const anaInitData = () => signInitData(service.telegram.token, ANA);

  it('a Mini App opened by Ana shows her memories, their sources on tap, and faded ones on demand; nothing of Bruno', async () => {
    const page = await openMiniApp(anaInitData());
    expect(await state(page)).toBe('ready');
    const shown = await waitForMemories(page, service.facts.ana.active.length);
    process.stderr.write(`web-page: Ana's Mini App lists ${shown.length} memories\n`);
    expect(shown.sort()).toEqual([...service.facts.ana.active].sort());
    const html = await page.content();
    for (const text of [...service.facts.bruno.active, service.facts.bruno.soul]) expect(html).not.toContain(text);
    expect(html).not.toContain(service.facts.ana.faded);
    // A memory written in markup is shown as its text: no element made of it, nothing run.
    expect(shown).toContain(MARKUP_MEMORY);
    expect(await page.$$eval('article.memory img, article.memory b', (nodes) => nodes.length)).toBe(0);
    expect(await page.evaluate('window.__pwned === undefined')).toBe(true);

    // Tapping a memory shows the message it came from.
    const card = await cardOf(page, service.facts.ana.active[0]!);
    await (await card.$('.content'))!.click();
    await card.waitForSelector('.sources li');
    expect(await page.$eval('.panel .sources', (list) => list.textContent)).toContain('Jordi, my husband, teaches music');

    await page.click('#faded');
    const withFaded = await waitForMemories(page, service.facts.ana.active.length + 1);
    expect(withFaded).toContain(service.facts.ana.faded);
    expect(await page.$$eval('article.memory.faded', (cards) => cards.length)).toBe(1);
  }, 120_000);

  it("forged, expired and another bot's init data show the refusal and no data", async () => {
    const valid = new URLSearchParams(anaInitData());
    valid.set('user', JSON.stringify({ id: BRUNO.id, first_name: BRUNO.first_name }));
    const cases: Record<string, string> = {
      forged: valid.toString(),
      expired: signInitData(service.telegram.token, ANA, { authDate: new Date(Date.now() - EXPIRED_AGE_MS) }),
      'another bot': signInitData('987654321:AAHanotherbotstoken_0123456789abcde', ANA),
    };
    const seen: Record<string, string> = {};
    for (const [label, initData] of Object.entries(cases)) {
      const page = await openMiniApp(initData);
      seen[label] = `${await state(page)}: ${await statusText(page)}`;
      const html = await page.content();
      for (const text of [...service.facts.ana.active, ...service.facts.bruno.active, service.facts.ana.soul])
        expect({ label, leaked: html.includes(text) }).toEqual({ label, leaked: false });
      expect(await page.$$eval('article.memory', (cards) => cards.length)).toBe(0);
      expect(await page.$eval('#tabs', (tabs) => (tabs as unknown as { hidden: boolean }).hidden)).toBe(true);
    }
    process.stderr.write(`web-page: refusals ${JSON.stringify(seen)}\n`);
    for (const label of Object.keys(cases)) expect({ label, shown: seen[label] }).toEqual({ label, shown: `refused: ${REFUSAL}` });
  }, 120_000);

  it('the browser link logs in once; used again it is refused; a change without the CSRF token is refused', async () => {
    const link = await service.webLink(ANA);
    const page = await freshPage();
    await page.goto(link);
    await page.waitForSelector('body[data-state]');
    expect(page.url()).toBe(`${service.base}/app`);
    expect(await state(page)).toBe('ready');
    expect((await waitForMemories(page, service.facts.ana.active.length)).sort()).toEqual([...service.facts.ana.active].sort());

    // The session cookie is sent, the CSRF header is not: the forget is refused, nothing goes.
    const target = service.facts.ana.ids.coffee!;
    const noCsrf = await page.evaluate(
      (id) =>
        fetch(`/app/api/memories/${id}/forget`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"confirm":true}' }).then(
          (r) => r.status,
        ),
      target,
    );
    expect(noCsrf).toBe(403);
    expect((await audit()).filter((e) => e.action === 'forget')).toEqual([]);
    await page.reload();
    expect(await waitForMemories(page, service.facts.ana.active.length)).toContain(service.facts.ana.active[1]);

    const again = await freshPage();
    const answer = await again.goto(link);
    process.stderr.write(`web-page: first use of the link -> ${page.url()}; second use -> ${answer?.status()}\n`);
    expect(answer?.status()).toBe(401);
    expect(await again.content()).toMatch(/new (link|one)/i);
    for (const text of service.facts.ana.active) expect(await again.content()).not.toContain(text);
  }, 120_000);

  it('the timeline chart, the graph and the profile render', async () => {
    const initData = anaInitData();
    const page = await openMiniApp(initData);
    const api = (route: string) =>
      page.evaluate((r, data) => fetch(`/app/api${r}`, { headers: { 'x-telegram-init-data': data } }).then((res) => res.json()), route, initData);

    await page.click('#tabs button[data-view="timeline"]');
    await page.waitForSelector('#chart canvas');
    const timeline = (await api('/timeline?days=60')) as { nights: Array<{ date: string; digest: string | null }> };
    // One point per night from a little before the first night with anything in it.
    const [points, first] = await page.$eval('#chart', (chart) => [Number(chart.getAttribute('data-points')), chart.getAttribute('data-first') ?? ''] as const);
    const firstActive = timeline.nights.find((n) => n.digest)!.date;
    expect(first <= firstActive).toBe(true);
    expect(points).toBe(timeline.nights.filter((n) => n.date >= first).length);
    expect(timeline.nights.filter((n) => n.digest).length).toBeGreaterThanOrEqual(service.facts.ana.digestNights.length);
    // Tapping a night with a digest shows that digest.
    const withDigest = timeline.nights.find((n) => n.digest)!;
    await page.click(`#nights button.night[data-date="${withDigest.date}"]`);
    await page.waitForSelector('#night .digest');
    expect(await page.$eval('#night .digest', (d) => d.textContent)).toBe(withDigest.digest);
    expect(withDigest.digest).toMatch(/Last night I learned/);

    await page.click('#tabs button[data-view="graph"]');
    await page.waitForSelector('#graph svg g.node');
    const graph = (await api('/graph')) as { nodes: Array<{ id: string; kind: string; label: string }> };
    const drawn = await page.$$eval('#graph svg g.node', (nodes) => nodes.length);
    process.stderr.write(
      `web-page: timeline ${points} points from ${first} (${timeline.nights.length} nights); graph ${drawn} nodes drawn of ${graph.nodes.length}\n`,
    );
    expect(drawn).toBe(graph.nodes.length);
    const jordi = graph.nodes.find((n) => n.kind === 'entity' && n.label === 'Jordi');
    expect(jordi).toBeDefined();
    await page.click(`#graph g.node[data-id="${jordi!.id}"]`);
    await page.waitForSelector('#profile-card .entity-name');
    expect(await page.$eval('#profile-card .entity-name', (h) => h.textContent)).toBe('Jordi');
    // A husband is family, as the soul says, not a degree of liking.
    expect(await page.$eval('#profile-card', (card) => card.textContent)).toContain('relationship: family');

    await page.click('#tabs button[data-view="profile"]');
    await page.waitForSelector('#soul .soul-text');
    const soul = (await api('/soul')) as { text: string };
    expect(soul.text).toContain('Valencia marathon');
    expect(await page.$eval('#soul .soul-text', (s) => s.textContent)).toBe(soul.text);
  }, 120_000);

  it('correct, forget and pin work from the page and are audited; the export downloads', async () => {
    const link = await service.webLink(ANA);
    const page = await freshPage();
    await page.goto(link);
    await waitForMemories(page, service.facts.ana.active.length);
    const facts = service.facts.ana;

    // Correct: inline edit, the new text shown, the old kept as history, a `correct` event.
    const corrected = 'Ana drinks her coffee with oat milk now.';
    const coffee = await cardOf(page, facts.active[1]!);
    await (await coffee.$('button.correct'))!.click();
    const box = (await coffee.$('textarea.correction'))!;
    await box.evaluate((node) => void ((node as unknown as { value: string }).value = ''));
    await box.type(corrected);
    await (await coffee.$('button.save'))!.click();
    await cardOf(page, corrected);
    expect(await memoryTexts(page)).not.toContain(facts.active[1]);

    // Pin: shown pinned, a `pin` event.
    const dog = await cardOf(page, facts.active[3]!);
    await (await dog.$('button.pin'))!.click();
    await page.waitForFunction(shows('article.memory.pinned', facts.active[3]!));

    // Forget: the preview first (naming what goes), then the memory is gone, a `forget` event.
    const marathon = await cardOf(page, facts.active[2]!);
    await (await marathon.$('button.forget'))!.click();
    await page.waitForSelector('.panel .preview');
    const preview = await page.$eval('.panel .preview', (p) => p.textContent ?? '');
    expect(preview).toContain('Valencia marathon');
    expect(await memoryTexts(page)).toContain(facts.active[2]);
    await page.click('button.confirm-forget');
    await page.waitForFunction(`!(${shows('article.memory', facts.active[2]!)})`);

    const events = await audit();
    const actions = (action: string) => events.filter((e) => e.action === action);
    process.stderr.write(
      `web-page: audit after the actions: ${events
        .slice(0, 6)
        .map((e) => `${e.action} (${e.reason})`)
        .join('; ')}\n`,
    );
    expect(actions('correct').length).toBe(1);
    expect(actions('pin').map((e) => e.subjectId)).toEqual([facts.ids.dog]);
    expect(actions('forget').length).toBeGreaterThanOrEqual(1);

    // Reloaded from the server, the page says the same.
    await page.reload();
    const after = await waitForMemories(page, facts.active.length - 1);
    expect(after).toContain(corrected);
    expect(after).not.toContain(facts.active[2]);
    expect(await page.$$eval('article.memory.pinned .content', (n) => n.map((x) => x.textContent))).toEqual([facts.active[3]]);

    // Download export: a JSON export of Ana's scope lands in the download folder.
    const before = new Set(fs.readdirSync(downloads));
    await page.click('#download');
    const deadline = Date.now() + STEP_MS;
    let file: string | undefined;
    while (!file && Date.now() < deadline) {
      file = fs.readdirSync(downloads).find((name) => !before.has(name) && !name.endsWith('.crdownload'));
      if (!file) await new Promise((resolve) => setTimeout(resolve, 200));
    }
    expect(file).toBeDefined();
    const exported = JSON.parse(fs.readFileSync(path.join(downloads, file!), 'utf8')) as {
      format: string;
      scope: { key: string };
      memories: Array<{ content: string }>;
    };
    process.stderr.write(`web-page: export downloaded as ${file} (${fs.statSync(path.join(downloads, file!)).size} bytes)\n`);
    expect(exported.format).toBe('nocturne.scope-export');
    expect(exported.scope.key).toBe(`telegram:private:${ANA.id}`);
    expect(exported.memories.map((m) => m.content)).toContain(corrected);
    expect(JSON.stringify(exported)).not.toContain(service.facts.bruno.active[0]);
  }, 180_000);
});
