/**
 * The dashboard's quality, page by page (docs/dashboard.md), in headless Chromium against the
 * controller service over HTTP with eight real registers (test/support/dashboard-store.ts): the
 * axe-core audit of every page at desktop (1280 px) and phone (375 px) width, no sideways
 * scrolling and the key facts on screen at 375 px, the dark theme, dates in the store's time
 * zone; it saves the screenshots the docs show (REGBRIDGE_SCREENSHOT_DIR, else a temporary folder).
 */
import { mkdir, mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, BrowserContext } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seriousViolations } from '../support/axe.ts';
import { chromiumSkipReason, LIVE_TIMEOUT, launchChromium, onScreenBox } from '../support/chromium.ts';
import { api } from '../support/controller-service.ts';
import { type DashboardStore, openAt, startDashboardStore } from '../support/dashboard-store.ts';

if (chromiumSkipReason) {
  console.warn(`test/dashboard/dashboard-quality.test.ts skipped: ${chromiumSkipReason}`);
  it.skip(chromiumSkipReason, () => {});
}

describe.skipIf(chromiumSkipReason)('the dashboard, audited page by page', () => {
  let store: DashboardStore;
  let browser: Browser;
  let desktop: BrowserContext;
  let phone: BrowserContext;
  let shots: string;

  beforeAll(async () => {
    shots = process.env.REGBRIDGE_SCREENSHOT_DIR ?? (await mkdtemp(join(tmpdir(), 'regbridge-pages-')));
    await mkdir(shots, { recursive: true });
    store = await startDashboardStore();
    // A job without a name on the back group: reg7's newest result.
    await store.jobVia({ script: 'PRINT from the register page', target: { group: 'back' } });
    browser = await launchChromium();
    // The audit injects axe-core, which the dashboard's policy would refuse (see support/axe.ts).
    desktop = await browser.newContext({ viewport: { width: 1280, height: 900 }, bypassCSP: true });
    phone = await browser.newContext({ viewport: { width: 375, height: 812 }, bypassCSP: true });
  }, 90_000);

  afterAll(async () => {
    await browser?.close();
    await store?.stop();
    if (!process.env.REGBRIDGE_SCREENSHOT_DIR && shots) await rm(shots, { recursive: true, force: true });
  });

  it('every page passes the axe audit at desktop and phone width, and is saved as a screenshot', async () => {
    const pages: [string, string][] = [
      ['registers', '/registers'],
      ['register', '/registers/reg7'],
      ['jobs', '/jobs'],
      ['job', `/jobs/${store.zReport.jobId}`],
      ['new-job', '/jobs/new'],
      ['scripts', '/scripts'],
      ['schedules', '/schedules'],
      ['results', '/results'],
      ['audit', '/audit'],
      ['webhooks', '/webhooks'],
    ];
    const found: string[] = [];
    for (const [context, width] of [
      [desktop, 'desktop'],
      [phone, 'phone'],
    ] as const) {
      const page = await openAt(context, store.service.httpPort, '/registers');
      for (const [name, path] of pages) {
        await page.evaluate(
          `history.pushState(null, '', ${JSON.stringify(path)}); dispatchEvent(new PopStateEvent('popstate'))`,
        );
        await page.locator(`[data-page="${name}"]`).waitFor({ timeout: LIVE_TIMEOUT });
        if (name === 'job')
          await page.locator('#job-results tbody tr').nth(7).waitFor({ timeout: LIVE_TIMEOUT });
        if (name === 'register') {
          // The newest result's job has no name: it is called after its script and target.
          await expect
            .poll(() => page.locator('#register-results li a').first().textContent(), {
              timeout: LIVE_TIMEOUT,
            })
            .toBe('PRINT from the register page · group back (4)');
        }
        if (name === 'jobs') await page.locator('li.job').first().waitFor({ timeout: LIVE_TIMEOUT });
        found.push(...(await seriousViolations(page)).map((v) => `${width} ${path}: ${v}`));
        const scrollWidth = (await page.evaluate('document.documentElement.scrollWidth')) as number;
        if (width === 'phone') expect(scrollWidth, `${path} scrolls sideways`).toBeLessThanOrEqual(375);
        const shot = join(shots, `${name}-${width}.png`);
        await page.screenshot({ path: shot, fullPage: width === 'desktop' });
        expect((await stat(shot)).size).toBeGreaterThan(5_000);
      }
      await page.close();
    }
    expect(found).toEqual([]);
  }, 180_000);

  it('at phone width the key facts are on screen: register, status, last result; job, outcome, progress', async () => {
    const page = await openAt(phone, store.service.httpPort, '/registers');
    const row = page.locator('#registers tbody tr', { hasText: 'reg7' });
    await row.waitFor({ timeout: LIVE_TIMEOUT });
    for (const part of [row.locator('th'), row.locator('td').nth(0), row.locator('td').nth(1)]) {
      const box = await onScreenBox(part);
      expect(box.x).toBeGreaterThanOrEqual(0);
      expect(box.x + box.width).toBeLessThanOrEqual(375);
    }
    expect(await row.locator('td').nth(1).textContent()).toMatch(/FINISHED|FAILURE|CANCELLED/);
    await page.getByRole('navigation', { name: 'Pages' }).getByRole('link', { name: 'Jobs' }).click();
    const job = page.locator('li.job', { hasText: 'Z report' });
    await job.waitFor({ timeout: LIVE_TIMEOUT });
    for (const part of [job.locator('h3'), job.locator('[data-role=job-outcome]'), job.locator('progress')]) {
      const box = await onScreenBox(part);
      expect(box.x).toBeGreaterThanOrEqual(0);
      expect(box.x + box.width).toBeLessThanOrEqual(375);
    }
    await page.close();
  });

  it('follows the system dark theme, still without serious or critical violations', async () => {
    const dark = await browser.newContext({
      viewport: { width: 1280, height: 900 },
      colorScheme: 'dark',
      bypassCSP: true,
    });
    try {
      const page = await openAt(dark, store.service.httpPort, `/jobs/${store.zReport.jobId}`);
      await page.locator('#job-results tbody tr').nth(7).waitFor({ timeout: LIVE_TIMEOUT });
      expect(await page.evaluate('getComputedStyle(document.documentElement).backgroundColor')).toBe(
        'rgb(15, 20, 25)',
      );
      const found = await seriousViolations(page);
      await page.getByRole('navigation', { name: 'Pages' }).getByRole('link', { name: 'Registers' }).click();
      await page.locator('#registers tbody tr').nth(7).waitFor({ timeout: LIVE_TIMEOUT });
      found.push(...(await seriousViolations(page)));
      expect(found).toEqual([]);
      await page.screenshot({ path: join(shots, 'registers-dark.png') });
    } finally {
      await dark.close();
    }
  });

  it("dates are in the browser's locale and the store's time zone (its schedules')", async () => {
    const created = await api(store.service.app, store.token, 'POST', '/api/schedules', {
      name: 'Nightly Z report',
      cron: '0 22 * * *',
      timezone: 'Asia/Tokyo',
      job: { name: 'Nightly Z report', script: 'Z REPORT', target: { group: 'all' } },
    });
    expect(created.statusCode).toBe(201);
    const elsewhere = await browser.newContext({ locale: 'de-DE', timezoneId: 'America/New_York' });
    try {
      const page = await openAt(elsewhere, store.service.httpPort, `/jobs/${store.zReport.jobId}`);
      const expected = new Date(store.zReport.createdAt).toLocaleString('de-DE', {
        dateStyle: 'medium',
        timeStyle: 'short',
        timeZone: 'Asia/Tokyo',
      });
      await expect
        .poll(() => page.locator('[data-role=job-summary] p.muted').first().textContent(), {
          timeout: LIVE_TIMEOUT,
        })
        .toContain(`by admin · ${expected}`);
    } finally {
      await elsewhere.close();
      await api(store.service.app, store.token, 'DELETE', `/api/schedules/${created.body.scheduleId}`);
    }
  });
});
