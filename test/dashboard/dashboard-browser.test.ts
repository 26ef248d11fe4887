/**
 * The controller's dashboard in a real browser (docs/controller.md, "Dashboard"): headless
 * Chromium driven by playwright-core against the controller service listening on a free port,
 * with three real registers on a real store broker. It logs in with the keyboard through the
 * form's labels, sees the registers appear, starts a job on a group and watches it reach
 * COMPLETED without reloading (the page only listens to the event stream), cancels a second job,
 * and saves a screenshot.
 */

import { randomUUID } from 'node:crypto';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningControllerService } from '../../cli/controller-service.ts';
import type { RunningDevice } from '../../cli/device.ts';
import { brokersByName, type RunningBroker } from '../support/brokers.ts';
import { chromiumSkipReason, LIVE_TIMEOUT, launchChromium } from '../support/chromium.ts';
import { startRealDevice } from '../support/controller-env.ts';
import { ADMIN, startService } from '../support/controller-service.ts';

const skipReason = chromiumSkipReason;

if (skipReason) {
  console.warn(`test/dashboard/dashboard-browser.test.ts skipped: ${skipReason}`);
  it.skip(skipReason, () => {});
}

describe.skipIf(skipReason)('the dashboard in Chromium', () => {
  const ns = `stores/ui${randomUUID().slice(0, 6)}`;
  const devices: RunningDevice[] = [];
  let broker: RunningBroker;
  let service: RunningControllerService;
  let browser: Browser;
  let page: Page;
  let shots: string;
  /** What the browser reported against the Content-Security-Policy, and every URL it asked for. */
  const violations: string[] = [];
  const urls: string[] = [];

  beforeAll(async () => {
    shots = process.env.REGBRIDGE_SCREENSHOT_DIR ?? (await mkdtemp(join(tmpdir(), 'regbridge-dashboard-')));
    broker = await brokersByName.embedded.start(ns);
    devices.push(
      ...(await Promise.all(
        ['reg1', 'reg2', 'reg3'].map((id) => startRealDevice(broker, ns, id, { groups: ['front'] })),
      )),
    );
    service = await startService(broker, ns);
    browser = await launchChromium();
    page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    page.on('console', (message) => {
      if (/Content Security Policy/i.test(message.text())) violations.push(message.text());
    });
    page.on('pageerror', (error) => violations.push(`page error: ${error.message}`));
    page.on('request', (request) => urls.push(request.url()));
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await service?.stop();
    await Promise.allSettled(devices.map((d) => d.stop()));
    await broker?.stop();
    if (!process.env.REGBRIDGE_SCREENSHOT_DIR && shots) await rm(shots, { recursive: true, force: true });
  });

  it('logs in with the keyboard and sees three registers online', async () => {
    const first = await page.goto(`http://127.0.0.1:${service.httpPort}/`);
    // Served under a policy that allows only its own files and no framing: the page works below.
    expect(first?.headers()).toMatchObject({
      'content-security-policy': "default-src 'self'; frame-ancestors 'none'",
      'x-content-type-options': 'nosniff',
      'referrer-policy': 'no-referrer',
    });
    await expect(page.getByRole('heading', { level: 1 }).textContent()).resolves.toBe(
      'regbridge store controller',
    );
    // The login form is reachable by its labels and submitted with Enter.
    await page.getByLabel('User name').fill(ADMIN.name);
    await page.getByLabel('Password').fill('wrong');
    await page.keyboard.press('Enter');
    await page
      .getByRole('alert')
      .filter({ hasText: 'INVALID_CREDENTIALS' })
      .waitFor({ timeout: LIVE_TIMEOUT });
    await page.getByLabel('Password').fill(ADMIN.password);
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: /Registers/ }).waitFor({ timeout: LIVE_TIMEOUT });
    const rows = page.locator('#registers tbody tr');
    await expect.poll(() => rows.count(), { timeout: LIVE_TIMEOUT }).toBe(3);
    await page.locator('#registers tbody .status.online').nth(2).waitFor({ timeout: LIVE_TIMEOUT });
    expect(await page.locator('#registers tbody th').allTextContents()).toEqual(['reg1', 'reg2', 'reg3']);
    expect(await page.locator('#registers tbody .status').allTextContents()).toEqual([
      'Online',
      'Online',
      'Online',
    ]);
    await expect(page.locator('#connection').textContent()).resolves.toBe('Live');
  });

  it('starts a job on a group and shows it reach COMPLETED live, with each register FINISHED', async () => {
    // A mark in the document: a full reload would lose it (history API navigations keep it).
    await page.evaluate('globalThis.sameDocument = true');
    await page.getByRole('navigation', { name: 'Pages' }).getByRole('link', { name: 'Jobs' }).click();
    await page.getByRole('link', { name: 'Start a job' }).click();
    await page.getByLabel('Script').fill('PRINT hello from the dashboard');
    await page.getByLabel('A group').check();
    await page.getByLabel('Group or registers (comma-separated)').fill('front');
    await page.getByLabel('Name (optional)').fill('greeting');
    await page.getByRole('button', { name: 'Start job' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Send to 3 registers' }).click();
    // Started, the job's own page opens.
    await page.getByRole('heading', { name: 'greeting' }).waitFor({ timeout: LIVE_TIMEOUT });
    const job = page.locator('[data-role=job-summary]');
    await job.locator('[data-role=job-status]', { hasText: 'COMPLETED' }).waitFor({ timeout: LIVE_TIMEOUT });
    expect(await job.locator('[data-role=job-counts]').textContent()).toContain('3 of 3 ended: 3 finished');
    expect(await job.locator('progress').getAttribute('value')).toBe('3');
    await page.locator('#job-results tbody .status.FINISHED').nth(2).waitFor({ timeout: LIVE_TIMEOUT });
    expect(await page.locator('#job-results tbody pre').allTextContents()).toEqual(
      Array(3).fill('PRINT hello from the dashboard'.slice(6)),
    );
    await expect(page.evaluate('globalThis.sameDocument')).resolves.toBe(true);
    // The registers' last task followed the job, also live.
    await page.getByRole('navigation', { name: 'Pages' }).getByRole('link', { name: 'Registers' }).click();
    await page.locator('#registers tbody .FINISHED').nth(2).waitFor({ timeout: LIVE_TIMEOUT });
  });

  it('cancels a running job with its button', async () => {
    // One register at a time, each sleeping: the job stays IN_PROGRESS long enough to cancel.
    await page.getByRole('navigation', { name: 'Pages' }).getByRole('link', { name: 'Jobs' }).click();
    await page.getByRole('link', { name: 'Start a job' }).click();
    await page.getByLabel('Script').fill('SLEEP 1500\nPRINT late');
    await page.getByLabel('Name (optional)').fill('slow');
    await page.getByText('Advanced: rollout, abort, deadline').click();
    await page.getByLabel('Batch size (registers at once)').fill('1');
    await page.getByRole('button', { name: 'Start job' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Send to 3 registers' }).click();
    await page.getByRole('heading', { name: 'slow' }).waitFor({ timeout: LIVE_TIMEOUT });
    const job = page.locator('[data-role=job-summary]');
    await job
      .locator('[data-role=job-status]', { hasText: 'IN_PROGRESS' })
      .waitFor({ timeout: LIVE_TIMEOUT });
    await job.getByRole('button', { name: /Cancel job slow/ }).click();
    await job.locator('[data-role=job-status]', { hasText: 'CANCELLED' }).waitFor({ timeout: LIVE_TIMEOUT });
    await expect(job.getByRole('button', { name: /Cancel/ }).count()).resolves.toBe(0);
    const counts = await job.locator('[data-role=job-counts]').textContent();
    // Never-sent registers end CANCELLED; the one already running may finish.
    expect(counts).toMatch(/cancelled/);
    expect(counts).not.toMatch(/ 0 cancelled/);
    const shot = join(shots, 'dashboard.png');
    await page.screenshot({ path: shot, fullPage: true });
    expect((await stat(shot)).size).toBeGreaterThan(10_000);
  });

  it('logs out: the token is revoked on the service, and it never travelled in a URL', async () => {
    const token = (await page.evaluate("sessionStorage.getItem('regbridge.token')")) as string | null;
    expect(token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    await page.getByRole('button', { name: 'Log out' }).click();
    await page.getByRole('heading', { name: 'Log in' }).waitFor({ timeout: LIVE_TIMEOUT });
    const after = await fetch(`http://127.0.0.1:${service.httpPort}/api/devices`, {
      headers: { authorization: `Bearer ${token}` },
    });
    expect(after.status).toBe(401);
    expect(urls.some((url) => /\/api\/events\?ticket=/.test(url))).toBe(true);
    expect(urls.filter((url) => url.includes(token!))).toEqual([]);
    // Nothing the dashboard does was blocked by its Content-Security-Policy.
    expect(violations).toEqual([]);
  });
});
