/**
 * `npm run screenshots`: a PNG of each view of the memory page at a phone's width (390×844),
 * written to docs/images/ (memories.png, timeline.png, graph.png, profile.png) for the docs.
 *
 * It starts `npm start` with demo data (the browser tests' fixture: two people imported from JSON
 * exports with the CLI), opens the page as Telegram opens a Mini App (signed init data in the
 * hash) in Debian's headless Chromium, and taps through the tabs. Not part of `npm test`: run it
 * after changing the page, and commit the images.
 */
import fs from 'node:fs';
import path from 'node:path';
import puppeteer, { type Page } from 'puppeteer-core';
import { ANA } from '../test/integration/web-page-fixture';
import { findChromium, miniAppUrl, PHONE, signInitData, startPageService } from '../test/integration/web-page-support';

const OUT_DIR = path.resolve(__dirname, '..', 'docs', 'images');
/** How long a view may take to appear. */
const STEP_MS = 30_000;

async function shoot(page: Page, name: string): Promise<void> {
  const file = path.join(OUT_DIR, `${name}.png`);
  await page.evaluate('window.scrollTo(0, 0)');
  await page.screenshot({ path: file as `${string}.png` });
  console.log(`${path.relative(process.cwd(), file)}: ${fs.statSync(file).size} bytes`);
}

async function main(): Promise<void> {
  const chromium = findChromium();
  if (!('path' in chromium)) throw new Error(`cannot take screenshots: ${chromium.missing}`);
  fs.mkdirSync(OUT_DIR, { recursive: true });
  const service = await startPageService({ demo: true });
  const browser = await puppeteer.launch({ executablePath: chromium.path, headless: true, args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'] });
  try {
    const page = await browser.newPage();
    await page.setViewport(PHONE);
    page.setDefaultTimeout(STEP_MS);
    await page.emulateMediaFeatures([{ name: 'prefers-color-scheme', value: 'light' }]);
    const initData = signInitData(service.telegram.token, ANA);
    await page.goto(miniAppUrl(service.base, initData));
    await page.waitForSelector('body[data-state="ready"] article.memory');
    // One memory opened, to show where it came from.
    await page.click('article.memory .content');
    await page.waitForSelector('.panel .sources li');
    await shoot(page, 'memories');

    await page.click('#tabs button[data-view="timeline"]');
    await page.waitForSelector('#chart canvas');
    // The latest night with a digest, opened under the chart.
    const nights = (await page.evaluate(
      `fetch('/app/api/timeline?days=60', { headers: { 'x-telegram-init-data': ${JSON.stringify(initData)} } }).then((r) => r.json())`,
    )) as {
      nights: Array<{ date: string; digest: string | null }>;
    };
    const night = nights.nights.filter((n) => n.digest).at(-1);
    if (night) await page.click(`#nights button.night[data-date="${night.date}"]`);
    await page.waitForSelector('#night .digest');
    await shoot(page, 'timeline');

    await page.click('#tabs button[data-view="graph"]');
    await page.waitForSelector('#graph svg g.node.entity');
    await page.click('#graph svg g.node.entity');
    await page.waitForSelector('#profile-card .entity-name');
    await shoot(page, 'graph');

    await page.click('#tabs button[data-view="profile"]');
    await page.waitForSelector('#soul .soul-text');
    await shoot(page, 'profile');
  } finally {
    await browser.close();
    await service.stop();
  }
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : error);
  process.exitCode = 1;
});
