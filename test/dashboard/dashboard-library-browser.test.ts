/**
 * The dashboard's script library, jobs from it and approvals in a real browser (headless
 * Chromium, playwright-core) against a real controller service with a real register: an author
 * saves a parameterised script after checking its lines, an operator previews it (a value not
 * matching the pattern shows the problem) and starts it, an approver approves it and it runs;
 * each role sees only the controls it may use (docs/controller.md, "Script library", "Approval").
 */
import { randomUUID } from 'node:crypto';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { RunningControllerService } from '../../cli/controller-service.ts';
import type { RunningDevice } from '../../cli/device.ts';
import { brokersByName, type RunningBroker } from '../support/brokers.ts';
import { launchChromium } from '../support/chromium.ts';
import { startRealDevice } from '../support/controller-env.ts';
import { startService } from '../support/controller-service.ts';
import { until } from '../support/waits.ts';

const ns = `stores/uilib${randomUUID().slice(0, 6)}`;
const USERS = (['viewer', 'operator', 'author', 'approver'] as const).map((role) => ({
  name: role,
  password: `${role}-pw`,
  role,
}));
let broker: RunningBroker;
let device: RunningDevice;
let service: RunningControllerService;
let browser: Browser;
let page: Page;

beforeAll(async () => {
  broker = await brokersByName.embedded.start(ns);
  device = await startRealDevice(broker, ns, 'reg1', { groups: ['front'] });
  service = await startService(broker, ns, { settings: { users: USERS } });
  await until(() => service.controller.devices().some((d) => d.online), 'the register online');
  browser = await launchChromium();
  page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  await page.goto(`http://127.0.0.1:${service.httpPort}/`);
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await service?.stop();
  await device?.stop();
  await broker?.stop();
});

async function logInAs(role: string): Promise<void> {
  if (await page.isVisible('#logout')) await page.click('#logout');
  await page.fill('#login-user', role);
  await page.fill('#login-password', `${role}-pw`);
  await page.click('#login-form button[type=submit]');
  await page.getByRole('navigation', { name: 'Pages' }).getByRole('link', { name: 'Scripts' }).click();
  await page.waitForSelector('#library:not([hidden])');
  await page.locator('#connection', { hasText: 'Live' }).waitFor();
}

/** Whether the Jobs page offers "Start a job" (the job form) to this role. */
function mayStartJobs(): Promise<boolean> {
  return page.locator('#new-job-link').evaluate((link) => !(link as unknown as { hidden: boolean }).hidden);
}

it('an author checks and saves a script; it may not start jobs', async () => {
  await logInAs('author');
  expect(await mayStartJobs()).toBe(false);
  await page.fill('#library-name', 'Close day');
  await page.fill('#library-body', 'PRINT closing {{store}}\nZ REPORT');
  await page.fill('#library-params', '[{"name": "store", "type": "string", "pattern": "[a-z]{2}[0-9]{2}"}]');
  await page.check('input[name=requiresApproval]');
  await page.click('#library-check');
  await page.getByText('Every line is a known command.').waitFor();
  await page.click('#library-editor button[type=submit]');
  await page.getByText('Saved Close day v1').waitFor();
  await page.locator('.library-script', { hasText: 'Close day' }).waitFor();
  expect(await page.locator('.library-start').count()).toBe(0);
});

it('an operator previews (problems shown), starts the script, and cannot approve', async () => {
  await logInAs('operator');
  expect(await page.isVisible('#library-editor')).toBe(false);
  expect(await mayStartJobs()).toBe(true);
  const form = page.locator('.library-start').first();
  await form.getByLabel('store').fill('XX');
  await form.getByText('Preview').click();
  await form.getByText('parameter store does not match the pattern [a-z]{2}[0-9]{2}').waitFor();
  await form.getByLabel('store').fill('ab12');
  await form.getByText('Preview').click();
  await form.locator('pre', { hasText: 'PRINT closing ab12' }).waitFor();
  await form.getByLabel('Group for Close day').fill('front');
  await form.getByText('Start Close day').click();
  await form.getByText(/WAITING_FOR_APPROVAL/).waitFor();
  await page.locator('.approval', { hasText: 'PRINT closing ab12' }).waitFor();
  expect(await page.locator('.approval button').count()).toBe(0);
});

it('an approver approves; the job runs', async () => {
  await logInAs('approver');
  expect(await mayStartJobs()).toBe(false);
  const waiting = page.locator('.approval', { hasText: 'PRINT closing ab12' });
  await waiting.getByText('Approve').click();
  await waiting.waitFor({ state: 'detached' });
  const [job] = (await service.engine.list(1)) ?? [];
  expect(job?.approval).toMatchObject({ decision: 'approved', by: 'approver' });
  await until(
    () => service.engine.get(job!.jobId)?.status === 'COMPLETED',
    'the approved job completes',
    15_000,
  );
});

it('a viewer sees the library and no control', async () => {
  await logInAs('viewer');
  await page.locator('.library-script', { hasText: 'Close day' }).waitFor();
  expect(await mayStartJobs()).toBe(false);
  expect(await page.isVisible('#library-editor')).toBe(false);
  expect(await page.locator('.library-start, .edit-button, .approval button').count()).toBe(0);
});
