/**
 * The dashboard's results page in headless Chromium (playwright-core) against the controller
 * service on a real history file: filters through the form's labels, paging with "More", and
 * "Download CSV" saved by the browser and read back with csv-parse; the webhooks page, an
 * admin's only; the audit trail with its filters.
 */
import { randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse } from 'csv-parse/sync';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningControllerService } from '../../cli/controller-service.ts';
import { openHistory } from '../../controller/history-db.ts';
import { JobHistory } from '../../controller/job-history.ts';
import { brokersByName, type RunningBroker } from '../support/brokers.ts';
import { CHROMIUM, launchChromium } from '../support/chromium.ts';
import { ADMIN, startService } from '../support/controller-service.ts';

const VIEWER = { name: 'viewer', password: 'viewer-pw', role: 'viewer' as const };

const dir = mkdtempSync(join(tmpdir(), 'regbridge-results-ui-'));
const ns = `stores/results${randomUUID().slice(0, 6)}`;
let broker: RunningBroker;
let service: RunningControllerService;
let browser: Browser;
let page: Page;

beforeAll(async () => {
  const file = join(dir, 'history.db');
  const db = openHistory(file);
  const history = new JobHistory(db);
  for (let j = 0; j < 3; j++) {
    const jobId = `job-${j}`;
    const at = `2026-11-2${j}T22:00:00.000Z`;
    const devices = Array.from({ length: 30 }, (_, i) => `reg${i}`);
    history.insert({
      jobId,
      name: `Z report ${j}`,
      createdBy: 'admin',
      createdAt: at,
      status: 'IN_PROGRESS',
      script: 'ZREPORT',
      target: { devices },
      deadlineAt: at,
      results: devices.map((deviceId) => ({ deviceId, status: 'PENDING' as const })),
    });
    for (const [i, deviceId] of devices.entries()) {
      const failed = i % 10 === 7;
      history.saveResult(jobId, {
        deviceId,
        status: failed ? 'FAILURE' : 'FINISHED',
        ...(failed
          ? { error: 'fiscal memory full' }
          : { report: `Z-Bericht ${j}, "Kasse ${i}"\nUmsatz 1.234,56 €` }),
        sentAt: at,
        endedAt: at,
      });
    }
    history.saveStatus(jobId, 'COMPLETED', at);
  }
  db.close();
  broker = await brokersByName.embedded.start(ns);
  service = await startService(broker, ns, { db: file, settings: { users: [ADMIN, VIEWER] } });
  browser = await launchChromium();
  page = await browser.newPage({ viewport: { width: 1280, height: 900 }, acceptDownloads: true });
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await service?.stop();
  await broker?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe.skipIf(!existsSync(CHROMIUM) && !process.env.CI)('the results page in Chromium', () => {
  it('searches with the filters, pages with More, and downloads the search as CSV', async () => {
    const address = service.app.server.address() as { port: number };
    await page.goto(`http://127.0.0.1:${address.port}/`);
    await page.getByLabel('User name').fill(ADMIN.name);
    await page.getByLabel('Password').fill(ADMIN.password);
    await page.getByRole('button', { name: 'Log in' }).click();
    await page.getByRole('navigation', { name: 'Pages' }).getByRole('link', { name: 'Results' }).click();
    expect(new URL(page.url()).pathname).toBe('/results');

    await page.locator('#results-form').getByLabel('Status', { exact: true }).selectOption('FAILURE');
    await page.getByRole('button', { name: 'Search' }).click();
    const rows = page.locator('#results tbody tr');
    await expect.poll(() => rows.count()).toBe(9);
    expect(await rows.first().innerText()).toContain('fiscal memory full');
    await expect.poll(() => page.locator('#results-more').isHidden()).toBe(true);

    await page.locator('#results-form').getByLabel('Status', { exact: true }).selectOption('');
    await page.getByLabel('Words in report or error').fill('kasse');
    await page.getByRole('button', { name: 'Search' }).click();
    await expect.poll(() => rows.count()).toBe(50);
    await page.getByRole('button', { name: 'More' }).click();
    await expect.poll(() => rows.count()).toBe(81);
    await expect.poll(() => page.locator('#results-more').isHidden()).toBe(true);

    await page.getByLabel('Register', { exact: true }).fill('reg3');
    const [download] = await Promise.all([
      page.waitForEvent('download'),
      page.getByRole('button', { name: 'Download CSV' }).click(),
    ]);
    expect(download.suggestedFilename()).toBe('results.csv');
    const saved = join(dir, 'saved.csv');
    await download.saveAs(saved);
    const records = parse(readFileSync(saved), { bom: true, columns: true }) as Record<string, string>[];
    expect(records.map((r) => `${r.jobId}/${r.deviceId}`)).toEqual([
      'job-2/reg3',
      'job-1/reg3',
      'job-0/reg3',
    ]);
    expect(records[0]!.report).toBe('Z-Bericht 2, "Kasse 3"\nUmsatz 1.234,56 €');
  });

  it('adds a webhook with its secret shown once, lists it without the secret, and deletes it', async () => {
    await page.getByRole('navigation', { name: 'Pages' }).getByRole('link', { name: 'Webhooks' }).click();
    await page.getByLabel('Receiver URL').fill('http://127.0.0.1:9/hook');
    await page.getByLabel('device.offline').check();
    await page.getByRole('button', { name: 'Add webhook' }).click();
    const secret = page.locator('#webhook-secret');
    await expect.poll(() => secret.textContent()).toMatch(/^Secret \(shown once, copy it now\): whsec_/);
    const hook = page.locator('#webhooks li.card', { hasText: 'http://127.0.0.1:9/hook' });
    await hook.waitFor();
    expect(await hook.innerText()).toContain('device.offline');
    expect(await hook.innerText()).toContain('No delivery yet.');
    const listed = (await fetchJson('/api/webhooks')).webhooks as { webhookId: string }[];
    expect(listed).toHaveLength(1);
    expect(JSON.stringify(listed)).not.toContain('whsec_');
    await page.getByRole('button', { name: 'Delete webhook http://127.0.0.1:9/hook' }).click();
    await expect.poll(() => page.locator('#webhooks li').count()).toBe(0);
    expect(await page.locator('#webhooks-empty').isVisible()).toBe(true);
  });

  it('shows the audit trail, filtered by action, user, from and to', async () => {
    await page.getByRole('navigation', { name: 'Pages' }).getByRole('link', { name: 'Audit' }).click();
    const audit = page.locator('#audit-section');
    const rows = audit.locator('#audit tbody tr');
    const cells = async (column: number): Promise<string[]> =>
      rows.locator(`td:nth-child(${column})`).allInnerTexts();
    // Read when shown: the admin's own login is there.
    await expect.poll(() => cells(4)).toContain('login');

    await audit.getByLabel('Action').selectOption('webhook_created');
    await audit.getByRole('button', { name: 'Show entries' }).click();
    await expect.poll(() => cells(4)).toEqual(['webhook_created']);
    expect(await cells(5)).toEqual([
      expect.stringMatching(/^webhook \S+ to http:\/\/127\.0\.0\.1:9 for device\.offline$/),
    ]);
    expect(await cells(2)).toEqual(['admin']);

    await audit.getByLabel('Action').selectOption('login');
    await audit.getByLabel('User', { exact: true }).fill('admin');
    await audit
      .getByLabel('From (day or time)')
      .fill(new Date(Date.now() - 86_400_000).toISOString().slice(0, 10));
    await audit.getByRole('button', { name: 'Show entries' }).click();
    await expect.poll(() => cells(4)).toEqual(['login']);
    expect(await cells(3)).toEqual(['127.0.0.1']);

    await audit.getByLabel('To (excluded)').fill('2020-01-01');
    await audit.getByRole('button', { name: 'Show entries' }).click();
    await expect.poll(() => rows.count()).toBe(0);
    expect(await audit.getByText('No entry matches.').isVisible()).toBe(true);

    await audit.getByLabel('To (excluded)').fill('yesterday');
    await audit.getByRole('button', { name: 'Show entries' }).click();
    await expect.poll(() => audit.getByRole('alert').textContent()).toMatch(/^INVALID_REQUEST: .*to/);
  });
});

describe.skipIf(!existsSync(CHROMIUM) && !process.env.CI)('the dashboard of a viewer', () => {
  it('hides the webhooks page, never asks for it, and shows no error', async () => {
    const viewerPage = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    const asked: string[] = [];
    const answered: string[] = [];
    viewerPage.on('request', (request) => asked.push(new URL(request.url()).pathname));
    viewerPage.on('response', (response) => answered.push(new URL(response.url()).pathname));
    await viewerPage.goto(`http://127.0.0.1:${(service.app.server.address() as { port: number }).port}/`);
    await viewerPage.getByLabel('User name').fill(VIEWER.name);
    await viewerPage.getByLabel('Password').fill(VIEWER.password);
    await viewerPage.getByRole('button', { name: 'Log in' }).click();
    // Everything the first loads ask for has been answered: the role (at login, when the event
    // stream opens, and the library's), the schedules (read with it; the webhooks would be next).
    await expect
      .poll(() => [answered.filter((path) => path === '/api/me').length, answered.includes('/api/schedules')])
      .toEqual([3, true]);
    await expect.poll(() => viewerPage.locator('#connection').textContent()).toBe('Live');
    expect(await viewerPage.getByRole('heading', { name: 'Webhooks' }).isVisible()).toBe(false);
    expect(await viewerPage.locator('#webhooks-section').isHidden()).toBe(true);
    // Nor is it in the navigation; its address says who may see it.
    expect(await viewerPage.getByRole('link', { name: 'Webhooks' }).isVisible()).toBe(false);
    await viewerPage.goto(
      `http://127.0.0.1:${(service.app.server.address() as { port: number }).port}/webhooks`,
    );
    await viewerPage.getByText('Only admins see and change webhooks.').waitFor({ timeout: 20_000 });
    expect(asked.filter((path) => path.startsWith('/api/webhooks'))).toEqual([]);
    await viewerPage.close();
  });
});

async function fetchJson(path: string): Promise<Record<string, unknown>> {
  const token = (await page.evaluate('sessionStorage.getItem("regbridge.token")')) as string;
  const response = await service.app.inject({
    method: 'GET',
    url: path,
    headers: { authorization: `Bearer ${token}` },
  });
  return response.json() as Record<string, unknown>;
}
