/**
 * The dashboard as a new user meets it, in headless Chromium against the controller service with
 * real registers on a real store broker: what an ended job's outcome looks like, hints that come
 * from the simulator's own command table, a confirmation before sending, form errors in the
 * form's words, and the key facts at phone width. Jobs that only set the scene are created over
 * the API; what the user does is done in the page.
 */
import { randomUUID } from 'node:crypto';
import type { Browser, Locator, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningControllerService } from '../../cli/controller-service.ts';
import type { RunningDevice } from '../../cli/device.ts';
import type { Job } from '../../controller/job-types.ts';
import { SIMULATOR_COMMANDS } from '../../src/executors/simulator-commands.ts';
import { brokersByName, type RunningBroker } from '../support/brokers.ts';
import {
  chromiumSkipReason,
  LIVE_TIMEOUT,
  launchChromium,
  onScreenBox,
  openDashboard,
} from '../support/chromium.ts';
import { startRealDevice } from '../support/controller-env.ts';
import { api, ended, login, startService, waitForJob } from '../support/controller-service.ts';
import { until } from '../support/waits.ts';

/** The computed text colour of the first match (runs in the page; the tests have no DOM types). */
function colourOf(locator: Locator): Promise<string> {
  return locator
    .first()
    .evaluate(
      (node) =>
        (globalThis as unknown as { getComputedStyle(n: unknown): { color: string } }).getComputedStyle(node)
          .color,
    );
}

/** Accepts the dashboard's confirmation before sending. */
async function confirmSend(page: Page): Promise<void> {
  await page
    .getByRole('dialog')
    .getByRole('button', { name: /^Send to/ })
    .click();
}

if (chromiumSkipReason) {
  console.warn(`test/dashboard/dashboard-first-hour.test.ts skipped: ${chromiumSkipReason}`);
  it.skip(chromiumSkipReason, () => {});
}

describe.skipIf(chromiumSkipReason)('the dashboard, first hour', () => {
  const ns = `stores/fh${randomUUID().slice(0, 6)}`;
  const devices: RunningDevice[] = [];
  let broker: RunningBroker;
  let service: RunningControllerService;
  let browser: Browser;
  let page: Page;
  let token: string;

  beforeAll(async () => {
    broker = await brokersByName.embedded.start(ns);
    devices.push(
      ...(await Promise.all(
        ['reg1', 'reg2'].map((id) => startRealDevice(broker, ns, id, { groups: ['front'] })),
      )),
    );
    service = await startService(broker, ns);
    await until(() => service.controller.devices().filter((d) => d.online).length === 2, 'registers online');
    token = await login(service.app);
    browser = await launchChromium();
    page = await openDashboard(browser, service.httpPort);
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await service?.stop();
    await Promise.allSettled(devices.map((d) => d.stop()));
    await broker?.stop();
  });

  async function jobVia(body: Record<string, unknown>, done: (job: Job) => boolean = ended): Promise<Job> {
    const created = await api(service.app, token, 'POST', '/api/jobs', body);
    expect(created.statusCode).toBe(201);
    return waitForJob(service, token, created.body.jobId, done, 'job');
  }

  /** Shows a page through the navigation (the new job form: through the Jobs page's link). */
  async function goTo(on: Page, name: string): Promise<void> {
    await on
      .getByRole('navigation', { name: 'Pages' })
      .getByRole('link', { name: name === 'new job' ? 'Jobs' : name })
      .click();
    if (name === 'new job') await on.getByRole('link', { name: 'Start a job' }).click();
  }

  it('an ended job shows its outcome in words and colour, and a bar of what ran', async () => {
    await goTo(page, 'Jobs');
    const failed = await jobVia({ script: 'FAIL paper out', target: { group: 'front' }, name: 'all-fail' });
    const item = page.locator('li.job', { hasText: 'all-fail' });
    const outcome = item.locator('[data-role=job-outcome]');
    await outcome.waitFor({ timeout: LIVE_TIMEOUT });
    expect(failed.outcome).toBe('FAILED');
    expect(await outcome.textContent()).toBe('Failed: 0 of 2 finished');
    const colour = (selector: string) => colourOf(item.locator(selector));
    // Red like a FAILURE result, and the COMPLETED status itself is no longer green.
    expect(await colour('[data-role=job-outcome]')).toBe('rgb(164, 22, 26)');
    expect(await colour('[data-role=job-status]')).not.toBe('rgb(20, 108, 46)');
    expect(await item.locator('progress').getAttribute('value')).toBe('2');

    // One register at a time: cancelled while the first runs, the second is never sent.
    const created = await api(service.app, token, 'POST', '/api/jobs', {
      script: 'SLEEP 300\nPRINT late',
      target: { group: 'front' },
      name: 'cut-short',
      rollout: { batchSize: 1 },
    });
    await waitForJob(
      service,
      token,
      created.body.jobId,
      (j) => j.results.some((r) => r.status === 'RUNNING'),
      'running',
    );
    await api(service.app, token, 'POST', `/api/jobs/${created.body.jobId}/cancel`);
    const cut = await waitForJob(service, token, created.body.jobId, ended, 'end');
    expect(cut.counts).toMatchObject({ total: 2, finished: 1, cancelled: 1 });
    const cutItem = page.locator('li.job', { hasText: 'cut-short' });
    await cutItem
      .locator('[data-role=job-outcome]', { hasText: 'Partly succeeded: 1 of 2 finished' })
      .waitFor({
        timeout: LIVE_TIMEOUT,
      });
    expect(await cutItem.locator('progress').getAttribute('value')).toBe('1');
    expect(await cutItem.locator('progress').getAttribute('aria-valuetext')).toBe('1 of 2 ran');
    expect(await colourOf(cutItem.locator('[data-role=job-outcome]'))).toBe('rgb(122, 77, 0)');

    const good = await jobVia({ script: 'PRINT fine', target: { group: 'front' }, name: 'all-good' });
    expect(good.outcome).toBe('SUCCEEDED');
    await page
      .locator('li.job', { hasText: 'all-good' })
      .locator('[data-role=job-outcome]', { hasText: 'Succeeded: 2 of 2 finished' })
      .waitFor({ timeout: LIVE_TIMEOUT });
  });

  it("the script hint comes from the simulator's command table, and a job typed as it says finishes everywhere", async () => {
    await goTo(page, 'new job');
    const help = page.locator('#job-script-help');
    await help.locator('code', { hasText: 'X REPORT' }).first().waitFor({ timeout: LIVE_TIMEOUT });
    expect(await help.textContent()).not.toContain('XREPORT');
    const served = (await (
      await fetch(`http://127.0.0.1:${service.httpPort}/api/simulator/commands`)
    ).json()) as {
      commands: { command: string; usage: string; example: string }[];
    };
    expect(served.commands.map((c) => c.command)).toEqual(SIMULATOR_COMMANDS.map((c) => c.command));
    expect(await help.locator('dl.commands dt').allTextContents()).toEqual(
      served.commands.map((c) => c.usage),
    );
    // Typed as the hint shows it.
    const example = (await help.locator('code').nth(1).textContent())!;
    expect(example).toBe('X REPORT');
    await page.getByLabel('Script').fill(example);
    await page.getByLabel('A group').check();
    await page.getByLabel('Group or registers (comma-separated)').fill('front');
    await page.getByLabel('Name (optional)').fill('as-hinted');
    await page.getByRole('button', { name: 'Start job' }).click();
    await confirmSend(page);
    await page.getByRole('heading', { name: 'as-hinted' }).waitFor({ timeout: LIVE_TIMEOUT });
    await page
      .locator('[data-role=job-summary]')
      .locator('[data-role=job-outcome]', { hasText: 'Succeeded: 2 of 2 finished' })
      .waitFor({ timeout: LIVE_TIMEOUT });
  });

  it('asks before sending: how many registers and which script; Back sends nothing', async () => {
    const jobsBefore = (await api(service.app, token, 'GET', '/api/jobs')).body.jobs.length;
    await goTo(page, 'new job');
    await page.getByLabel('Script').fill('Z REPORT');
    await page.getByLabel('A group').check();
    await page.getByLabel('Group or registers (comma-separated)').fill('all');
    await page.getByLabel('Name (optional)').fill('close-day');
    await page.getByRole('button', { name: 'Start job' }).click();
    const dialog = page.getByRole('dialog', { name: 'Send this script to 2 registers?' });
    await dialog.waitFor({ timeout: LIVE_TIMEOUT });
    expect(await dialog.locator('pre').textContent()).toBe('Z REPORT');
    expect(await dialog.textContent()).toContain(
      "Z REPORT: prints the day's counters and resets them: closes the fiscal day.",
    );
    await dialog.getByRole('button', { name: 'Back' }).click();
    await dialog.waitFor({ state: 'detached', timeout: LIVE_TIMEOUT });
    expect((await api(service.app, token, 'GET', '/api/jobs')).body.jobs.length).toBe(jobsBefore);
    expect(await page.locator('li.job', { hasText: 'close-day' }).count()).toBe(0);
  });

  it("form errors speak the form's words; an unknown register in the list is refused by name", async () => {
    const error = page.locator('#job-error');
    await goTo(page, 'new job');
    await page.getByText('Advanced: rollout, abort, deadline').click();
    await page.getByLabel('Script').fill('PRINT x');
    await page.getByLabel('Name (optional)').fill('form-words');
    await page.getByLabel('Deadline (seconds)').fill('700000');
    await page.getByRole('button', { name: 'Start job' }).click();
    await expect
      .poll(() => error.textContent())
      .toBe('Deadline: from 1 to 604800 seconds (a week); empty: 600');
    await page.getByLabel('Deadline (seconds)').fill('');
    await page.getByLabel('Batch size (registers at once)').fill('1e30');
    await page.getByRole('button', { name: 'Start job' }).click();
    await expect.poll(() => error.textContent()).toBe('Batch size: a whole number of registers, 1 or more');
    await page.getByLabel('Batch size (registers at once)').fill('');
    await page.getByLabel('Registers', { exact: true }).check();
    await page.getByLabel('Group or registers (comma-separated)').fill('reg1, reg99');
    await page.getByRole('button', { name: 'Start job' }).click();
    await page
      .getByRole('dialog', { name: 'Send this script to 2 registers?' })
      .waitFor({ timeout: LIVE_TIMEOUT });
    await confirmSend(page);
    await expect
      .poll(() => error.textContent())
      .toBe(
        'Group or registers: register reg99 never seen by this controller: check the ids, or add "allowUnknown": true to send when they first connect',
      );
    expect(await page.locator('li.job', { hasText: 'form-words' }).count()).toBe(0);
  });

  it('at phone width (375 px) the key facts fit the screen and a job title is not a wrapped UUID', async () => {
    const phone = await openDashboard(browser, service.httpPort, 375);
    try {
      const row = phone.locator('#registers tbody tr', { hasText: 'reg1' });
      await row.waitFor({ timeout: LIVE_TIMEOUT });
      const cells = row.locator('td');
      // Last task (2nd cell) and last seen (3rd): on screen, labelled, not scrolled away.
      for (const index of [1, 2]) {
        const box = await onScreenBox(cells.nth(index));
        expect(box.x).toBeGreaterThanOrEqual(0);
        expect(box.x + box.width).toBeLessThanOrEqual(375);
      }
      expect(await cells.nth(2).evaluate((node) => node.textContent)).not.toBe('');
      await goTo(phone, 'Jobs');
      const job = phone.locator('li.job', { hasText: 'all-good' });
      await job.waitFor({ timeout: LIVE_TIMEOUT });
      const title = job.locator('h3');
      const lineHeight = await title.evaluate((node) =>
        Number.parseFloat(
          (
            globalThis as unknown as { getComputedStyle(n: unknown): { lineHeight: string } }
          ).getComputedStyle(node).lineHeight,
        ),
      );
      // The name and the id, one line each (the id cut with an ellipsis).
      expect((await onScreenBox(title)).height).toBeLessThanOrEqual(2.5 * (lineHeight || 20));
      const resultBox = await onScreenBox(job.locator('[data-role=job-outcome]'));
      expect(resultBox.x + resultBox.width).toBeLessThanOrEqual(375);
      const pageWidth = await phone.evaluate(
        () =>
          (globalThis as unknown as { document: { documentElement: { scrollWidth: number } } }).document
            .documentElement.scrollWidth,
      );
      expect(pageWidth).toBeLessThanOrEqual(375);
    } finally {
      await phone.close();
    }
  });
});
