/**
 * The nightly Z report set up once from the dashboard, in headless Chromium (playwright-core)
 * against the controller service on a free port, with a real register on a real store broker:
 * the schedule is created through the Schedules form, shows its next runs in the store's time
 * zone, and fires every night on the clock the test moves; each night's job reaches COMPLETED
 * live in the jobs list with the register's Z report. Pause and resume buttons work on a job.
 */

import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningControllerService } from '../../cli/controller-service.ts';
import type { RunningDevice } from '../../cli/device.ts';
import type { Job } from '../../controller/job-types.ts';
import { brokersByName, type RunningBroker } from '../support/brokers.ts';
import { CHROMIUM, LIVE_TIMEOUT, launchChromium } from '../support/chromium.ts';
import { startRealDevice } from '../support/controller-env.ts';
import { ADMIN, api, login, startService } from '../support/controller-service.ts';
import { ManualClock } from '../support/manual-clock.ts';
import { until } from '../support/waits.ts';

describe.skipIf(!existsSync(CHROMIUM) && !process.env.CI)('the schedules page in Chromium', () => {
  const ns = `stores/uiz${randomUUID().slice(0, 6)}`;
  const clock = new ManualClock();
  let broker: RunningBroker;
  let device: RunningDevice;
  let service: RunningControllerService;
  let browser: Browser;
  let page: Page;
  let token: string;

  beforeAll(async () => {
    broker = await brokersByName.embedded.start(ns);
    device = await startRealDevice(broker, ns, 'till1', { groups: ['tills'] });
    service = await startService(broker, ns, { clock });
    await until(() => service.controller.device('till1')?.online === true, 'till1 online');
    token = await login(service.app);
    browser = await launchChromium();
    page = await browser.newPage({ viewport: { width: 1280, height: 900 }, timezoneId: 'Europe/Berlin' });
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await service?.stop();
    await device?.stop();
    await broker?.stop();
  });

  it('the nightly Z report is set up once from the dashboard and runs every night', async () => {
    await page.goto(`http://127.0.0.1:${service.httpPort}/`);
    await page.getByLabel('User name').fill(ADMIN.name);
    await page.getByLabel('Password').fill(ADMIN.password);
    await page.keyboard.press('Enter');
    const nav = page.getByRole('navigation', { name: 'Pages' });
    await nav.getByRole('link', { name: 'Schedules' }).click();
    await page.getByRole('heading', { name: 'Schedules' }).waitFor({ timeout: LIVE_TIMEOUT });
    // The form offers the store's own time zone and the Z report at 22:00.
    expect(await page.getByLabel('Time zone').inputValue()).toBe('Europe/Berlin');
    await page.getByLabel('Target group').fill('tills');
    await page.getByRole('button', { name: 'Create schedule' }).click();
    const item = page.locator('li.schedule', { hasText: 'Nightly Z report' });
    await item.waitFor({ timeout: LIVE_TIMEOUT });
    const nextRuns = await item.locator('[data-role=next-runs]').textContent();
    expect(nextRuns).toMatch(/^Next runs: \w{3} \d\d \w{3}, 22:00 CET; /);
    const [schedule] = (await api(service.app, token, 'GET', '/api/schedules')).body.schedules;
    expect(schedule).toMatchObject({
      name: 'Nightly Z report',
      cron: '0 22 * * *',
      timezone: 'Europe/Berlin',
    });

    for (const night of [1, 2]) {
      const due = Date.parse(
        (await api(service.app, token, 'GET', `/api/schedules/${schedule.scheduleId}`)).body.nextRunAt,
      );
      clock.advanceTo(due);
      const jobs = (await api(service.app, token, 'GET', '/api/jobs')).body.jobs as Job[];
      expect(jobs.filter((j) => j.scheduleId === schedule.scheduleId)).toHaveLength(night);
      await nav.getByRole('link', { name: 'Jobs' }).click();
      const job = page.locator('li.job', { hasText: 'from a schedule' }).first();
      await job
        .locator('[data-role=job-status]', { hasText: 'COMPLETED' })
        .waitFor({ timeout: LIVE_TIMEOUT });
      await job.locator('h3 a').click();
      await page
        .locator('#job-results tbody pre', { hasText: `Z REPORT ${night}` })
        .waitFor({ timeout: LIVE_TIMEOUT });
      await nav.getByRole('link', { name: 'Schedules' }).click();
    }
    // The list moved on to the next night.
    await expect
      .poll(() => item.locator('[data-role=next-runs]').textContent(), { timeout: LIVE_TIMEOUT })
      .not.toBe(nextRuns);
    await item.getByRole('button', { name: 'Disable Nightly Z report' }).click();
    await item.getByText('No next run').waitFor({ timeout: LIVE_TIMEOUT });
  });

  it('pauses and resumes a job with its buttons', async () => {
    const created = await api(service.app, token, 'POST', '/api/jobs', {
      name: 'price update',
      script: 'PRINT prices',
      target: { devices: ['till1'] },
      startAt: new Date(clock.now() + 3_600_000).toISOString(),
    });
    await page.getByRole('navigation', { name: 'Pages' }).getByRole('link', { name: 'Jobs' }).click();
    const job = page.locator('li.job', { hasText: 'price update' });
    await job.locator('[data-role=job-status]', { hasText: 'SCHEDULED' }).waitFor({ timeout: LIVE_TIMEOUT });
    await job.getByRole('button', { name: /Pause job price update/ }).click();
    await job.locator('[data-role=job-status]', { hasText: 'PAUSED' }).waitFor({ timeout: LIVE_TIMEOUT });
    expect(await job.locator('[data-role=job-rollout]').textContent()).toContain('paused: paused by admin');
    await job.getByRole('button', { name: /Resume job price update/ }).click();
    await job.locator('[data-role=job-status]', { hasText: 'SCHEDULED' }).waitFor({ timeout: LIVE_TIMEOUT });
    clock.advance(3_600_000);
    await job.locator('[data-role=job-status]', { hasText: 'COMPLETED' }).waitFor({ timeout: LIVE_TIMEOUT });
    expect(created.statusCode).toBe(201);
  });
});
