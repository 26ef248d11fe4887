/**
 * The dashboard of a head office (docs/dashboard.md, "Stores"), in headless Chromium against a
 * real `stores/+` controller on a Mosquitto hub with three real store brokers and their registers
 * (with attributes; test/support/head-office.ts): the Stores page lists the stores, a store whose
 * registers all go offline is shown silent, store -> register drill-down with attributes, the
 * registers page's store and attribute filters, a job targeted by attributes from the form
 * reaching the right count, its counts per store, and the axe audit of the Stores and store
 * pages at 1280 and 375 px (screenshots saved, REGBRIDGE_SCREENSHOT_DIR, else a temporary folder).
 */
import { mkdir, mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Job } from '../../controller/job-types.ts';
import { seriousViolations } from '../support/axe.ts';
import { skipWithout } from '../support/binaries.ts';
import { chromiumSkipReason, LIVE_TIMEOUT, launchChromium } from '../support/chromium.ts';
import { api } from '../support/controller-service.ts';
import { openAt, pathOf } from '../support/dashboard-store.ts';
import { type HeadOffice, startHeadOffice } from '../support/head-office.ts';
import { until } from '../support/waits.ts';

const skipReason =
  chromiumSkipReason ?? skipWithout(['mosquitto'], 'the head office dashboard over a Mosquitto hub');
if (chromiumSkipReason) {
  console.warn(`test/dashboard/dashboard-stores.test.ts skipped: ${chromiumSkipReason}`);
  it.skip(chromiumSkipReason, () => {});
}

const STORES = {
  s1: [
    { id: 'r1', groups: ['front'], attributes: ['region=north', 'tier=flagship'] },
    { id: 'r2', groups: ['back'], attributes: ['region=south'] },
  ],
  s2: [
    { id: 'r1', groups: ['front'], attributes: ['region=north'] },
    { id: 'r2', groups: ['back'], attributes: ['region=north'] },
  ],
  s3: [{ id: 'r1', groups: ['front'], attributes: ['region=south'] }],
};

/** The cells of a table's visible rows, header cell first. */
function rowsOf(page: Page, table: string): Promise<string[][]> {
  return page
    .locator(`${table} tbody tr:not([hidden])`)
    .evaluateAll((rows) =>
      rows.map((row) => [...row.querySelectorAll('th, td')].map((cell) => (cell.textContent ?? '').trim())),
    );
}

describe.skipIf(skipReason)('the dashboard of a head office with three stores', () => {
  let office: HeadOffice;
  let browser: Browser;
  let desktop: BrowserContext;
  let phone: BrowserContext;
  let shots: string;

  beforeAll(async () => {
    shots = process.env.REGBRIDGE_SCREENSHOT_DIR ?? (await mkdtemp(join(tmpdir(), 'regbridge-stores-')));
    await mkdir(shots, { recursive: true });
    office = await startHeadOffice(STORES);
    browser = await launchChromium();
    // The audit injects axe-core, which the dashboard's policy would refuse (see support/axe.ts).
    desktop = await browser.newContext({ viewport: { width: 1280, height: 900 }, bypassCSP: true });
    phone = await browser.newContext({ viewport: { width: 375, height: 812 }, bypassCSP: true });
  }, 90_000);

  afterAll(async () => {
    await browser?.close();
    await office?.stop();
    if (!process.env.REGBRIDGE_SCREENSHOT_DIR && shots) await rm(shots, { recursive: true, force: true });
  });

  it('the registers page filters by store and by attribute', async () => {
    const page = await openAt(desktop, office.service.httpPort, '/registers');
    const filter = page.locator('#registers-filter');
    await until(async () => (await rowsOf(page, '#registers')).length === 5, 'five registers listed');
    await filter.getByLabel('Store').selectOption('s2');
    expect((await rowsOf(page, '#registers')).map((r) => [r[0], r[4]])).toEqual([
      ['r1', 's2'],
      ['r2', 's2'],
    ]);
    expect(await page.locator('#registers-count').textContent()).toBe('(2 shown · 5 of 5 online)');
    await filter.getByLabel('Store').selectOption('');
    await filter.getByLabel('Attribute (name=value)').fill('region=south');
    // Sorted by register id, then store.
    expect((await rowsOf(page, '#registers')).map((r) => [r[4], r[0], r[6]])).toEqual([
      ['s3', 'r1', 'region=south'],
      ['s1', 'r2', 'region=south'],
    ]);
    await filter.getByLabel('Attribute (name=value)').fill('tier');
    expect((await rowsOf(page, '#registers')).map((r) => `${r[4]}/${r[0]}`)).toEqual(['s1/r1']);
    await page.close();
  }, 60_000);

  it('a job targeted by attributes from the form reaches the right registers, counted per store', async () => {
    const page = await openAt(desktop, office.service.httpPort, '/jobs/new');
    const count = page.locator('#job-target-count');
    await until(async () => (await count.textContent()) === 'Reaches 5 registers (5 online)', 'all five');
    await page.getByLabel('Only registers with these attributes').fill('region=north');
    await expect.poll(() => count.textContent()).toBe('Reaches 3 registers (3 online)');
    // The stores field is offered (several stores) and narrows the count too.
    await page.getByLabel('Only these stores').fill('s2');
    await expect.poll(() => count.textContent()).toBe('Reaches 2 registers (2 online)');
    await page.getByLabel('Only these stores').fill('');
    await expect.poll(() => count.textContent()).toBe('Reaches 3 registers (3 online)');
    // A plain id is that id in every store: r1 is three registers, and a new id one more.
    await page.getByLabel('Only registers with these attributes').fill('');
    await page.getByLabel('Registers', { exact: true }).check();
    await page.getByLabel('Group or registers (comma-separated)').fill('r1, s9/new');
    await expect
      .poll(() => count.textContent())
      .toBe('Reaches 4 registers (3 online); 1 never seen by this controller');
    await page.getByLabel('A group', { exact: true }).check();
    await page.getByLabel('Group or registers (comma-separated)').fill('all');
    await page.getByLabel('Only registers with these attributes').fill('region=north');
    await expect.poll(() => count.textContent()).toBe('Reaches 3 registers (3 online)');
    await page.getByLabel('Script', { exact: true }).fill('PRINT north');
    await page.getByRole('button', { name: 'Start job' }).click();
    const dialog = page.getByRole('dialog', { name: 'Send this script to 3 registers?' });
    await dialog.waitFor({ timeout: LIVE_TIMEOUT });
    expect(await dialog.getByText('Target:').textContent()).toBe('Target: group all · region=north');
    await dialog.getByRole('button', { name: 'Send to 3 registers' }).click();
    await until(() => /^\/jobs\/[0-9a-f-]{36}$/.test(pathOf(page)), 'the new job page');
    const jobId = pathOf(page).split('/')[2]!;
    await page
      .locator('[data-role=job-summary] [data-role=job-outcome]', { hasText: 'Succeeded: 3 of 3 finished' })
      .waitFor({ timeout: LIVE_TIMEOUT });
    // The API agrees: the target as the form built it, three results, each store's counts.
    const { body } = await api(office.service.app, office.token, 'GET', `/api/jobs/${jobId}?by=store`);
    const job = body as Job & { countsByStore: Record<string, { total: number; finished: number }> };
    expect(job.target).toEqual({ group: 'all', attributes: { region: 'north' } });
    expect(job.results.map((r) => `${r.store}/${r.deviceId}`).sort()).toEqual(['s1/r1', 's2/r1', 's2/r2']);
    expect(Object.keys(job.countsByStore)).toEqual(['s1', 's2']);
    // The page's counts per store, read from ?by=store once the job ended.
    await expect
      .poll(async () => (await rowsOf(page, '#job-by-store')).map((r) => [r[0], r[1], r[2]]), {
        timeout: LIVE_TIMEOUT,
      })
      .toEqual([
        ['s1', '1 of 1', '1'],
        ['s2', '2 of 2', '2'],
      ]);
    expect(await page.locator('#job-heading').textContent()).toBe(
      'PRINT north · group all · region=north (3)',
    );
    await page.close();
  }, 60_000);

  it('lists the stores, shows a store silent once its registers are offline, and drills down', async () => {
    const page = await openAt(desktop, office.service.httpPort, '/registers');
    const nav = page.getByRole('navigation', { name: 'Pages' });
    await nav.getByRole('link', { name: 'Stores' }).click();
    expect(pathOf(page)).toBe('/stores');
    await expect
      .poll(async () => (await rowsOf(page, '#stores')).map((r) => [r[0], r[1], r[2], r[3], r[5]]), {
        timeout: LIVE_TIMEOUT,
      })
      .toEqual([
        ['s1', 'Reporting', '2', '2', 'up'],
        ['s2', 'Reporting', '2', '2', 'up'],
        ['s3', 'Reporting', '1', '1', 'up'],
      ]);
    // Store s3's only register stops: its offline state reaches the page through the stream.
    await office.devices.get('s3/r1')!.stop();
    const s3 = page.locator('#stores tbody tr[data-store="s3"]');
    await s3.locator('[data-role=silent]', { hasText: 'Silent: no register online' }).waitFor({
      timeout: LIVE_TIMEOUT,
    });
    expect((await rowsOf(page, '#stores')).map((r) => [r[0], r[1], r[3]])).toEqual([
      ['s1', 'Reporting', '2'],
      ['s2', 'Reporting', '2'],
      ['s3', '⚠ Silent: no register online', '0'],
    ]);
    expect(await page.locator('#stores-count').textContent()).toBe('(3 stores · 1 silent)');
    // Silent is said in words and a border too, not in colour alone.
    expect(
      await s3
        .locator('[data-role=silent]')
        .evaluate(
          (node) =>
            (
              globalThis as unknown as { getComputedStyle(n: unknown): { borderTopStyle: string } }
            ).getComputedStyle(node).borderTopStyle,
        ),
    ).toBe('solid');
    // Fleet -> store: its registers, filterable, with counts.
    await page.getByRole('link', { name: 's1', exact: true }).click();
    expect(pathOf(page)).toBe('/stores/s1');
    await page.getByRole('heading', { name: 'Store s1' }).waitFor();
    expect((await rowsOf(page, '#store-registers')).map((r) => [r[0], r[1], r[3]])).toEqual([
      ['r1', 'Online', 'region=north, tier=flagship'],
      ['r2', 'Online', 'region=south'],
    ]);
    expect(await page.locator('#store-count').textContent()).toBe('(2 of 2 online)');
    await page.locator('#store-filter').getByLabel('Attribute (name=value)').fill('region=north');
    expect((await rowsOf(page, '#store-registers')).map((r) => r[0])).toEqual(['r1']);
    expect(await page.locator('#store-count').textContent()).toBe('(1 shown · 2 of 2 online)');
    // Store -> register: its page shows the store and its attributes.
    await page.locator('#store-registers').getByRole('link', { name: 'r1' }).click();
    expect(pathOf(page)).toBe('/registers/s1/r1');
    const facts = page.locator('[data-role=register-facts]');
    await facts.waitFor();
    const pairs = await facts.evaluate((dl) =>
      [...dl.querySelectorAll('dt')].map((dt) => [dt.textContent, dt.nextElementSibling?.textContent]),
    );
    expect(pairs).toEqual(
      expect.arrayContaining([
        ['Store', 's1'],
        ['Attribute region', 'north'],
        ['Attribute tier', 'flagship'],
      ]),
    );
    // The silent store's own page says so too.
    await page.goBack();
    await page.goBack();
    expect(pathOf(page)).toBe('/stores');
    await page.getByRole('link', { name: 's3', exact: true }).click();
    await page.locator('[data-role=store-summary] [data-role=silent]').waitFor();
    expect(await page.locator('#store-count').textContent()).toBe('(0 of 1 online)');
    // "Start a job on this store" aims the form at it.
    await page.getByRole('link', { name: 'Start a job on this store' }).click();
    expect(pathOf(page)).toBe('/jobs/new?stores=s3');
    expect(await page.getByLabel('Only these stores').inputValue()).toBe('s3');
    await expect
      .poll(() => page.locator('#job-target-count').textContent())
      .toBe('Reaches 1 register (0 online)');
    await page.close();
  }, 60_000);

  it('the Stores and store pages pass the axe audit at 1280 and 375 px, and are saved', async () => {
    const found: string[] = [];
    for (const [context, width] of [
      [desktop, 'desktop'],
      [phone, 'phone'],
    ] as const) {
      const page = await openAt(context, office.service.httpPort, '/stores');
      await page
        .locator('#stores tbody tr[data-store="s3"] [data-role=silent]')
        .waitFor({ timeout: LIVE_TIMEOUT });
      for (const violation of await seriousViolations(page)) found.push(`stores at ${width}: ${violation}`);
      expect((await page.evaluate('document.documentElement.scrollWidth')) as number).toBeLessThanOrEqual(
        width === 'phone' ? 375 : 1280,
      );
      const shot = join(shots, `stores-${width}.png`);
      await page.screenshot({ path: shot, fullPage: width === 'desktop' });
      expect((await stat(shot)).size).toBeGreaterThan(5_000);
      await page.getByRole('link', { name: 's2', exact: true }).click();
      await page.locator('#store-registers tbody tr').nth(1).waitFor({ timeout: LIVE_TIMEOUT });
      for (const violation of await seriousViolations(page)) found.push(`store at ${width}: ${violation}`);
      expect((await page.evaluate('document.documentElement.scrollWidth')) as number).toBeLessThanOrEqual(
        width === 'phone' ? 375 : 1280,
      );
      await page.screenshot({ path: join(shots, `store-${width}.png`), fullPage: width === 'desktop' });
      await page.close();
    }
    expect(found).toEqual([]);
  }, 120_000);

  it('a store whose link to the head office drops is shown silent, link down, within the 15 s reading', async () => {
    const page = await openAt(desktop, office.service.httpPort, '/stores');
    const s2 = page.locator('#stores tbody tr[data-store="s2"]');
    await s2.locator('td', { hasText: 'Reporting' }).waitFor({ timeout: LIVE_TIMEOUT });
    // Its registers stay online at the hub (their last states said so); only the link says it.
    await office.brokers.get('s2')!.stop();
    await s2.locator('[data-role=silent]', { hasText: 'Silent: link down' }).waitFor({ timeout: 30_000 });
    expect((await rowsOf(page, '#stores')).find((r) => r[0] === 's2')?.[5]).toBe('down');
    await page.close();
  }, 60_000);
});
