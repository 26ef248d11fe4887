/**
 * The dashboard as a store manager lives in it (docs/dashboard.md), in headless Chromium against
 * the controller service over HTTP, with eight real registers on a real store broker
 * (test/support/dashboard-store.ts). It answers "did last night's Z report run everywhere, and
 * what did register 7 print?" from the dashboard alone, then walks the pages by their addresses
 * (links, the back and forward buttons, a shared link) and their actions: a register's page, the
 * guided job form, the registers page's filters, keyboard-only use, approve, deny, cancel, rerun.
 */
import type { Browser, BrowserContext } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Job } from '../../controller/job-types.ts';
import { chromiumSkipReason, LIVE_TIMEOUT, launchChromium } from '../support/chromium.ts';
import { api, ended, login, waitForJob } from '../support/controller-service.ts';
import {
  type DashboardStore,
  OPERATOR,
  openAt,
  pathOf,
  REGISTERS,
  startDashboardStore,
} from '../support/dashboard-store.ts';
import { until } from '../support/waits.ts';

if (chromiumSkipReason) {
  console.warn(`test/dashboard/dashboard-pages.test.ts skipped: ${chromiumSkipReason}`);
  it.skip(chromiumSkipReason, () => {});
}

describe.skipIf(chromiumSkipReason)('the dashboard, page by page', () => {
  let store: DashboardStore;
  let browser: Browser;
  let desktop: BrowserContext;
  const pageErrors: string[] = [];

  beforeAll(async () => {
    store = await startDashboardStore();
    browser = await launchChromium();
    desktop = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  }, 90_000);

  afterAll(async () => {
    await browser?.close();
    await store?.stop();
    expect(pageErrors).toEqual([]);
  });

  it('answers "did last night\'s Z report run everywhere, and what did register 7 print?"', async () => {
    const page = await openAt(desktop, store.service.httpPort, '/');
    page.on('pageerror', (error) => pageErrors.push(error.message));
    // A mark in the document: a full reload would lose it (history API navigations keep it).
    await page.evaluate('globalThis.sameDocument = true');
    const started = performance.now();
    await page.getByRole('navigation', { name: 'Pages' }).getByRole('link', { name: 'Jobs' }).click();
    expect(pathOf(page)).toBe('/jobs');
    await page.locator('#jobs-filter').getByLabel('Name').fill('Z report');
    await page.getByRole('button', { name: 'Find jobs' }).click();
    await until(() => pathOf(page) === '/jobs?name=Z+report', 'the filter in the address');
    const item = page.locator('li.job', { hasText: 'Z report' });
    await item.locator('[data-role=job-outcome]', { hasText: 'Succeeded: 8 of 8 finished' }).waitFor({
      timeout: LIVE_TIMEOUT,
    });
    // The filtered answer replaces the list shown before it (it may land a frame later).
    await until(
      async () => (await page.locator('li.job').count()) === 1,
      'the Z report alone in the list',
      LIVE_TIMEOUT,
    );
    await item.getByRole('link', { name: 'Z report' }).click();
    expect(pathOf(page)).toBe(`/jobs/${store.zReport.jobId}`);
    await expect(
      page.getByRole('heading', { level: 2 }).filter({ hasText: 'Z report' }).count(),
    ).resolves.toBe(1);
    const counts = page.locator('[data-role=job-summary] [data-role=job-counts]');
    await counts.waitFor({ timeout: LIVE_TIMEOUT });
    expect(await counts.textContent()).toContain('8 of 8 ended: 8 finished');
    const rows = page.locator('#job-results tbody tr');
    await expect.poll(() => rows.count(), { timeout: LIVE_TIMEOUT }).toBe(8);
    expect(await page.locator('#job-results tbody .status').allTextContents()).toEqual(
      Array(8).fill('FINISHED'),
    );
    // Register 7's print-out, found by searching the results.
    await page.getByLabel('Register or words in the report').fill('reg7');
    await expect.poll(() => rows.count()).toBe(1);
    const printed = await rows.first().locator('pre.report').textContent();
    const elapsed = performance.now() - started;
    const reg7 = store.zReport.results.find((r) => r.deviceId === 'reg7')!;
    expect(reg7.status).toBe('FINISHED');
    expect(printed).toBe(reg7.report);
    expect(printed).toMatch(/Z/);
    await expect(page.evaluate('globalThis.sameDocument')).resolves.toBe(true);
    console.info(`Z report question answered in the browser in ${Math.round(elapsed)} ms`);
    // The status filter: nothing failed.
    await page.getByLabel('Register or words in the report').fill('');
    await page.locator('#job-results-filter').getByLabel('Result').selectOption('FAILURE');
    await expect.poll(() => rows.count()).toBe(0);
    await page.locator('#job-results-filter').getByLabel('Result').selectOption('');
    // The back button walks the addresses back, each page shown again.
    await page.goBack();
    await until(() => pathOf(page) === '/jobs?name=Z+report', 'back to the filtered list');
    await page.locator('li.job', { hasText: 'Z report' }).waitFor({ timeout: LIVE_TIMEOUT });
    expect(await page.locator('#jobs-filter').getByLabel('Name').inputValue()).toBe('Z report');
    await page.goBack();
    await until(() => pathOf(page) === '/jobs', 'back to all jobs');
    await expect.poll(() => page.locator('li.job').count(), { timeout: LIVE_TIMEOUT }).toBe(2);
    // A job without a name is named after its script and target, never its id.
    expect(await page.locator('li.job h3').allTextContents()).toEqual([
      'X REPORT · group front (4)',
      'Z report',
    ]);
    await page.goBack();
    await until(() => pathOf(page) === '/', 'back to the start');
    await page.locator('#registers tbody tr').first().waitFor({ timeout: LIVE_TIMEOUT });
    await page.goForward();
    await until(() => pathOf(page) === '/jobs', 'forward again');
    await page.close();
  });

  it('a shared link opens the job page, and the register page shows what it printed', async () => {
    const page = await openAt(desktop, store.service.httpPort, `/jobs/${store.zReport.jobId}`);
    await page.locator('#job-results tbody tr[data-device=reg7]').waitFor({ timeout: LIVE_TIMEOUT });
    await page.locator('#job-results tbody tr[data-device=reg7] th a').click();
    expect(pathOf(page)).toBe('/registers/reg7');
    await page.getByRole('heading', { name: 'Register reg7' }).waitFor({ timeout: LIVE_TIMEOUT });
    const facts = page.locator('[data-role=register-facts]');
    expect(await facts.locator('dd').first().textContent()).toBe('Online');
    expect(await facts.textContent()).toContain('back');
    const result = page.locator('#register-results li', { hasText: 'Z report' });
    await result.waitFor({ timeout: LIVE_TIMEOUT });
    expect(await result.locator('pre.report').textContent()).toBe(
      store.zReport.results.find((r) => r.deviceId === 'reg7')!.report,
    );
    // X REPORT went to the front group only; reg7 is in the back group: one Z report so far.
    expect(await page.locator('#register-results li').count()).toBe(1);
    // Every result of the register, on the Results page with the filter in its address.
    await page.getByRole('link', { name: 'Search all results of reg7' }).click();
    expect(pathOf(page)).toBe('/results?deviceId=reg7');
    await expect.poll(() => page.locator('#results tbody tr').count(), { timeout: LIVE_TIMEOUT }).toBe(1);
    expect(await page.locator('#results-device').inputValue()).toBe('reg7');
    await page.goBack();
    await page.getByRole('heading', { name: 'Register reg7' }).waitFor({ timeout: LIVE_TIMEOUT });
    await page.getByRole('link', { name: 'Run a script on this register' }).click();
    expect(pathOf(page)).toBe('/jobs/new?devices=reg7');
    await expect
      .poll(() => page.locator('#job-target-count').textContent())
      .toBe('Reaches 1 register (1 online)');
    await page.getByLabel('Registers', { exact: true }).check();
    await page.getByLabel('Group or registers (comma-separated)').fill('reg1, reg7');
    await expect
      .poll(() => page.locator('#job-target-count').textContent())
      .toBe('Reaches 2 registers (2 online)');
    await page.getByLabel('A group').check();
    await page.getByLabel('Group or registers (comma-separated)').fill('back');
    await expect
      .poll(() => page.locator('#job-target-count').textContent())
      .toBe('Reaches 4 registers (4 online)');
    await page.getByLabel('Script', { exact: true }).fill('PRINT from the register page');
    await page.getByRole('button', { name: 'Start job' }).click();
    const dialog = page.getByRole('dialog', { name: 'Send this script to 4 registers?' });
    await dialog.waitFor({ timeout: LIVE_TIMEOUT });
    expect(await dialog.locator('pre').textContent()).toBe('PRINT from the register page');
    await dialog.getByRole('button', { name: 'Send to 4 registers' }).click();
    await until(() => /^\/jobs\/[0-9a-f-]{36}$/.test(pathOf(page)), 'the new job page');
    await page
      .locator('[data-role=job-summary] [data-role=job-outcome]', { hasText: 'Succeeded: 4 of 4 finished' })
      .waitFor({ timeout: LIVE_TIMEOUT });
    expect(await page.getByRole('heading', { level: 2 }).first().textContent()).toBe(
      'PRINT from the register page · group back (4)',
    );
    await page.close();
  });

  it('starts a library script from the guided form, named after the script and its target', async () => {
    const page = await openAt(desktop, store.service.httpPort, '/jobs/new');
    await page.getByLabel('From the library').check();
    await page.getByLabel('Library entry').selectOption({ label: 'Till message (v1)' });
    expect(await page.locator('#job-library-body').textContent()).toBe('PRINT {{message}}');
    await page.locator('#job-form').getByLabel('message', { exact: true }).fill('doors close at 8');
    await page.getByLabel('Registers', { exact: true }).check();
    await page.getByLabel('Group or registers (comma-separated)').fill('reg2');
    await expect
      .poll(() => page.locator('#job-target-count').textContent())
      .toBe('Reaches 1 register (1 online)');
    // Rollout options wait behind "Advanced"; an out-of-range one is named in the form's words.
    expect(await page.getByLabel('Batch size (registers at once)').isVisible()).toBe(false);
    await page.getByText('Advanced: rollout, abort, deadline').click();
    await page.getByLabel('Deadline (seconds)').fill('700000');
    await page.getByRole('button', { name: 'Start job' }).click();
    await expect
      .poll(() => page.locator('#job-error').textContent())
      .toBe('Deadline: from 1 to 604800 seconds (a week); empty: 600');
    await page.getByLabel('Deadline (seconds)').fill('');
    await page.getByRole('button', { name: 'Start job' }).click();
    const dialog = page.getByRole('dialog', { name: 'Send this script to 1 register?' });
    await dialog.waitFor({ timeout: LIVE_TIMEOUT });
    expect(await dialog.textContent()).toContain('Script: Till message (library, v1)');
    await dialog.getByRole('button', { name: 'Send to 1 register' }).click();
    await until(() => /^\/jobs\/[0-9a-f-]{36}$/.test(pathOf(page)), 'the new job page');
    await page
      .locator('[data-role=job-summary] [data-role=job-outcome]', { hasText: 'Succeeded: 1 of 1 finished' })
      .waitFor({ timeout: LIVE_TIMEOUT });
    expect(await page.locator('#job-heading').textContent()).toBe('Till message · register reg2');
    expect(await page.locator('#job-results pre.report').textContent()).toBe('doors close at 8');
    await page.close();
  });

  it('filters the registers page by search, connection, group and sort, with counts', async () => {
    const page = await openAt(desktop, store.service.httpPort, '/registers');
    const rows = page.locator('#registers tbody tr:not([hidden])');
    await expect.poll(() => rows.count(), { timeout: LIVE_TIMEOUT }).toBe(8);
    expect(await page.locator('#registers-count').textContent()).toBe('(8 of 8 online)');
    await page.locator('#registers-filter').getByLabel('Group').selectOption('front');
    await expect.poll(() => rows.count()).toBe(4);
    expect(await page.locator('#registers-count').textContent()).toBe('(4 shown · 8 of 8 online)');
    await page.locator('#registers-filter').getByLabel('Search').fill('reg3');
    await expect.poll(() => rows.count()).toBe(1);
    await page.locator('#registers-filter').getByLabel('Search').fill('');
    await page.locator('#registers-filter').getByLabel('Group').selectOption('');
    await page.locator('#registers-filter').getByLabel('Connection').selectOption('offline');
    await expect.poll(() => rows.count()).toBe(0);
    await expect(page.locator('#registers-none').isVisible()).resolves.toBe(true);
    await page.locator('#registers-filter').getByLabel('Connection').selectOption('');
    await page.locator('#registers-filter').getByLabel('Sort by').selectOption('id');
    expect(await rows.locator('th').allTextContents()).toEqual(REGISTERS);
    await page.close();
  });

  it('is used by keyboard only: to the jobs, into a running job, cancel it, rerun it', async () => {
    const created = await api(store.service.app, store.token, 'POST', '/api/jobs', {
      name: 'slow close',
      script: 'SLEEP 3000\nPRINT late',
      target: { group: 'front' },
      rollout: { batchSize: 1 },
    });
    const slow = created.body as Job;
    const page = await openAt(desktop, store.service.httpPort, '/registers');
    const focused = (): Promise<string> =>
      page.evaluate(
        'document.activeElement?.getAttribute("aria-label") ?? document.activeElement?.textContent ?? ""',
      );
    async function tabTo(name: string): Promise<void> {
      for (let i = 0; i < 80; i++) {
        await page.keyboard.press('Tab');
        if ((await focused()).trim() === name) return;
      }
      throw new Error(`Tab never reached ${name}`);
    }
    await tabTo('Jobs');
    await page.keyboard.press('Enter');
    await until(() => pathOf(page) === '/jobs', 'the jobs page by keyboard');
    await page.locator('li.job', { hasText: 'slow close' }).waitFor({ timeout: LIVE_TIMEOUT });
    await tabTo('slow close');
    await page.keyboard.press('Enter');
    expect(pathOf(page)).toBe(`/jobs/${slow.jobId}`);
    await page.locator('[data-role=job-summary] [data-role=job-status]').waitFor({ timeout: LIVE_TIMEOUT });
    await tabTo('Cancel job slow close');
    await page.keyboard.press('Enter');
    await page
      .locator('[data-role=job-summary] [data-role=job-status]', { hasText: 'CANCELLED' })
      .waitFor({ timeout: LIVE_TIMEOUT });
    await waitForJob(store.service, store.token, slow.jobId, ended, 'the cancelled job');
    // Ended with registers never sent: Rerun applies, and opens the new job's page.
    await tabTo('Rerun job slow close');
    await page.keyboard.press('Enter');
    await until(
      () => /^\/jobs\/[0-9a-f-]{36}$/.test(pathOf(page)) && !pathOf(page).includes(slow.jobId),
      'the rerun',
    );
    const rerun = pathOf(page).slice('/jobs/'.length);
    await page
      .locator('[data-role=job-summary] [data-role=job-rollout]', { hasText: 'a rerun' })
      .waitFor({ timeout: LIVE_TIMEOUT });
    await api(store.service.app, store.token, 'POST', `/api/jobs/${rerun}/cancel`);
    await page.close();
  });

  it("approves and denies another user's jobs on their pages; buttons only where they apply", async () => {
    const script = await api(store.service.app, store.token, 'POST', '/api/scripts', {
      name: 'Price change',
      body: 'PRINT new prices',
      requiresApproval: true,
    });
    const opsToken = await login(store.service.app, OPERATOR);
    const [first, second] = await Promise.all(
      ['approve me', 'deny me'].map(async (name) => {
        const created = await api(store.service.app, opsToken, 'POST', '/api/jobs', {
          name,
          scriptRef: { scriptId: script.body.scriptId },
          target: { devices: ['reg1'] },
        });
        expect(created.body.status).toBe('WAITING_FOR_APPROVAL');
        return created.body as Job;
      }),
    );
    const page = await openAt(desktop, store.service.httpPort, `/jobs/${first!.jobId}`);
    const summary = page.locator('[data-role=job-summary]');
    await summary
      .locator('[data-role=job-status]', { hasText: 'WAITING_FOR_APPROVAL' })
      .waitFor({ timeout: LIVE_TIMEOUT });
    // Waiting: approve, deny or cancel; no pause, resume or rerun.
    expect(await summary.getByRole('button').allTextContents()).toEqual(['Approve', 'Deny', 'Cancel']);
    await summary.getByRole('button', { name: 'Approve job approve me' }).click();
    await summary
      .locator('[data-role=job-outcome]', { hasText: 'Succeeded: 1 of 1 finished' })
      .waitFor({ timeout: LIVE_TIMEOUT });
    expect(await summary.getByRole('button').count()).toBe(0);
    await page.goto(`http://127.0.0.1:${store.service.httpPort}/jobs/${second!.jobId}`);
    await summary.getByRole('button', { name: 'Deny job deny me' }).click();
    await summary.locator('[data-role=job-status]', { hasText: 'DENIED' }).waitFor({ timeout: LIVE_TIMEOUT });
    expect(await summary.getByRole('button').count()).toBe(0);
    expect(
      (await api(store.service.app, store.token, 'GET', `/api/jobs/${second!.jobId}`)).body.approval,
    ).toMatchObject({
      decision: 'denied',
      by: 'admin',
    });
    await page.close();
  });
});
