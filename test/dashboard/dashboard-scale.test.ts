/**
 * The dashboard with a big history (docs/dashboard.md, "Performance"): 10,000 jobs in the history
 * file and 500 registers on a real store broker (each its own MQTT connection). In headless
 * Chromium it measures, per page, the first contentful paint and the time until the page's
 * content is on screen, and how the registers page keeps up while all 500 registers go offline
 * and online again (frame gaps, long tasks, a search typed meanwhile). The figures are printed,
 * not asserted: they depend on the machine. What is asserted is that every page shows its data.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningControllerService } from '../../cli/controller-service.ts';
import { openHistory } from '../../controller/history-db.ts';
import { JobHistory } from '../../controller/job-history.ts';
import { brokersByName, type RunningBroker } from '../support/brokers.ts';
import { chromiumSkipReason, launchChromium } from '../support/chromium.ts';
import { FakeDevice } from '../support/controller-env.ts';
import { login, startService } from '../support/controller-service.ts';
import { until } from '../support/waits.ts';

const JOBS = 10_000;
const REGISTERS = 500;
const PER_JOB = 5;
const SLOW = 120_000;

if (chromiumSkipReason) {
  console.warn(`test/dashboard/dashboard-scale.test.ts skipped: ${chromiumSkipReason}`);
  it.skip(chromiumSkipReason, () => {});
}

describe.skipIf(chromiumSkipReason)('the dashboard with 10,000 jobs and 500 registers', () => {
  const dir = mkdtempSync(join(tmpdir(), 'regbridge-scale-ui-'));
  const ns = `stores/scale${randomUUID().slice(0, 6)}`;
  const registers = Array.from({ length: REGISTERS }, (_, i) => `reg${i + 1}`);
  const fakes: FakeDevice[] = [];
  let broker: RunningBroker;
  let service: RunningControllerService;
  let browser: Browser;
  let context: BrowserContext;
  let lastJobId = '';
  const figures: string[] = [];

  beforeAll(async () => {
    const file = join(dir, 'history.db');
    const db = openHistory(file);
    const history = new JobHistory(db);
    const night = Date.parse('2026-01-01T22:00:00.000Z');
    history.transaction(() => {
      for (let j = 0; j < JOBS; j++) {
        const jobId = `job-${String(j).padStart(5, '0')}`;
        const at = new Date(night + j * 60_000).toISOString();
        const devices = Array.from({ length: PER_JOB }, (_, k) => registers[(j * PER_JOB + k) % REGISTERS]!);
        history.insert({
          jobId,
          ...(j % 2 === 0 && { name: `Z report ${j}` }),
          createdBy: 'admin',
          createdAt: at,
          status: 'IN_PROGRESS',
          script: j % 2 === 0 ? 'Z REPORT' : 'X REPORT',
          target: { devices },
          deadlineAt: at,
          results: devices.map((deviceId) => ({ deviceId, status: 'PENDING' as const })),
        });
        for (const deviceId of devices) {
          history.saveResult(jobId, {
            deviceId,
            status: 'FINISHED',
            report: `Z REPORT ${j}\nSALES 12.34\nNET 12.34`,
            sentAt: at,
            endedAt: at,
          });
        }
        history.saveStatus(jobId, 'COMPLETED', at);
        lastJobId = jobId;
      }
    });
    db.close();
    broker = await brokersByName.embedded.start(ns);
    service = await startService(broker, ns, { db: file });
    for (let i = 0; i < REGISTERS; i += 50) {
      const batch = registers.slice(i, i + 50).map((id) => new FakeDevice(broker, ns, id));
      await Promise.all(batch.map((fake, k) => fake.start([(i + k) % 2 === 0 ? 'front' : 'back'])));
      fakes.push(...batch);
    }
    await until(
      () => service.controller.devices().filter((d) => d.online).length === REGISTERS,
      '500 registers online',
      SLOW,
    );
    const token = await login(service.app);
    browser = await launchChromium();
    context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    // Logged in as a shared link would be after a login: the token in the tab's session.
    await context.addInitScript(`sessionStorage.setItem('regbridge.token', ${JSON.stringify(token)})`);
  }, 300_000);

  afterAll(async () => {
    await browser?.close();
    await service?.stop();
    await Promise.allSettled(fakes.map((f) => f.stop()));
    await broker?.stop();
    rmSync(dir, { recursive: true, force: true });
    console.info(`dashboard figures (${JOBS} jobs, ${REGISTERS} registers):\n${figures.join('\n')}`);
  });

  async function firstPaint(path: string, ready: (page: Page) => Promise<void>): Promise<Page> {
    const page = await context.newPage();
    await page.goto(`http://127.0.0.1:${service.httpPort}${path}`);
    await ready(page);
    const [paint, modules, app, shown] = (await page.evaluate(
      `[performance.getEntriesByName('first-contentful-paint')[0]?.startTime ?? -1,
        Math.max(...performance.getEntriesByType('resource').filter((r) => r.name.endsWith('.js')).map((r) => r.responseEnd)),
        performance.getEntriesByName('dashboard-shown')[0]?.startTime ?? -1,
        performance.now()]`,
    )) as number[];
    const ms = (value: number | undefined): string => `${Math.round(value ?? -1)} ms`;
    figures.push(
      `${path}: first contentful paint ${ms(paint)}, modules loaded ${ms(modules)}, pages shown ${ms(app)}, content shown ${ms(shown)}`,
    );
    return page;
  }

  it('every page shows its data; first paint and content times are printed', async () => {
    const pages: [string, (page: Page) => Promise<void>][] = [
      [
        '/registers',
        (p) =>
          p.locator('#registers-count', { hasText: `of ${REGISTERS} online` }).waitFor({ timeout: SLOW }),
      ],
      ['/jobs', (p) => p.locator('li.job').nth(49).waitFor({ timeout: SLOW })],
      [
        `/jobs/${lastJobId}`,
        (p) =>
          p
            .locator('#job-results tbody tr')
            .nth(PER_JOB - 1)
            .waitFor({ timeout: SLOW }),
      ],
      ['/registers/reg7', (p) => p.locator('#register-results li').nth(19).waitFor({ timeout: SLOW })],
      ['/scripts', (p) => p.locator('#library-empty').waitFor({ timeout: SLOW })],
      ['/schedules', (p) => p.locator('#schedules-empty').waitFor({ timeout: SLOW })],
      ['/results', (p) => p.getByRole('heading', { name: 'Results' }).waitFor({ timeout: SLOW })],
      ['/audit', (p) => p.locator('#audit tbody tr').first().waitFor({ timeout: SLOW })],
      ['/webhooks', (p) => p.locator('#webhooks-empty').waitFor({ timeout: SLOW })],
    ];
    for (const [path, ready] of pages) await (await firstPaint(path, ready)).close();
    // The newest job first, named; paging on reaches older ones.
    const page = await firstPaint('/jobs', (p) => p.locator('li.job').nth(49).waitFor({ timeout: SLOW }));
    expect(await page.locator('li.job h3').first().textContent()).toBe(
      lastJobId.endsWith('9') ? 'X REPORT · 5 registers' : `Z report ${JOBS - 1}`,
    );
    const started = performance.now();
    await page.getByRole('button', { name: 'Older jobs' }).click();
    await page.locator('li.job').nth(99).waitFor({ timeout: SLOW });
    figures.push(`/jobs: the next 50 jobs (Older jobs) in ${Math.round(performance.now() - started)} ms`);
    await page.close();
  }, 300_000);

  it('the registers page stays responsive while 500 registers change state', async () => {
    const page = await firstPaint('/registers', (p) =>
      p
        .locator('#registers-count', { hasText: `(${REGISTERS} of ${REGISTERS} online)` })
        .waitFor({ timeout: SLOW }),
    );
    await page.evaluate(`(() => {
      const perf = (globalThis.perf = { gaps: [], long: [] });
      let last = performance.now();
      const tick = (t) => { perf.gaps.push(t - last); last = t; if (!perf.stop) requestAnimationFrame(tick); };
      requestAnimationFrame(tick);
      new PerformanceObserver((list) => perf.long.push(...list.getEntries().map((e) => e.duration)))
        .observe({ type: 'longtask' });
    })()`);
    const storm = performance.now();
    const offline = Promise.all(fakes.map((f) => f.publishOffline()));
    // A search typed while the events pour in.
    const typed = performance.now();
    await page.locator('#registers-filter').getByLabel('Search').fill('reg42');
    await until(
      async () => (await page.locator('#registers tbody tr:not([hidden])').count()) === 11,
      'the search applied',
      SLOW,
    );
    const searchMs = performance.now() - typed;
    await offline;
    await page
      .locator('#registers-count', { hasText: `0 of ${REGISTERS} online` })
      .waitFor({ timeout: SLOW });
    const offlineMs = performance.now() - storm;
    const again = performance.now();
    await Promise.all(fakes.map((f) => f.publishOnline([])));
    await page
      .locator('#registers-count', { hasText: `${REGISTERS} of ${REGISTERS} online` })
      .waitFor({ timeout: SLOW });
    const onlineMs = performance.now() - again;
    const { gaps, long } = (await page.evaluate(
      '(() => { globalThis.perf.stop = true; return globalThis.perf; })()',
    )) as { gaps: number[]; long: number[] };
    gaps.sort((a, b) => a - b);
    const p95 = gaps[Math.floor(gaps.length * 0.95)] ?? 0;
    figures.push(
      `/registers under 1,000 state changes: all shown offline after ${Math.round(offlineMs)} ms, online again after ${Math.round(onlineMs)} ms; ` +
        `a search typed meanwhile applied in ${Math.round(searchMs)} ms; frames: ${gaps.length}, gap p95 ${Math.round(p95)} ms, ` +
        `max ${Math.round(gaps.at(-1) ?? 0)} ms; long tasks: ${long.length}, longest ${Math.round(Math.max(0, ...long))} ms`,
    );
    expect(await page.locator('#registers-count').textContent()).toBe(
      `(11 shown · ${REGISTERS} of ${REGISTERS} online)`,
    );
    await page.close();
  }, 300_000);
});
