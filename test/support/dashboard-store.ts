/**
 * A store for the dashboard's page suites: eight real registers (reg1-reg4 in group front,
 * reg5-reg8 in back) on a real store broker, the controller service over HTTP with an admin and
 * an operator, last night's Z report over all of them, an unnamed X report on the front group and
 * a library script; plus opening the dashboard at an address, as a shared link is.
 */
import { randomUUID } from 'node:crypto';
import type { BrowserContext, Page } from 'playwright-core';
import type { RunningControllerService } from '../../cli/controller-service.ts';
import type { RunningDevice } from '../../cli/device.ts';
import type { Job } from '../../controller/job-types.ts';
import { brokersByName, type RunningBroker } from './brokers.ts';
import { LIVE_TIMEOUT } from './chromium.ts';
import { startRealDevice } from './controller-env.ts';
import { ADMIN, api, ended, login, startService, waitForJob } from './controller-service.ts';
import { until } from './waits.ts';

export const OPERATOR = { name: 'ops', password: 'ops-pw', role: 'operator' as const };
export const REGISTERS = ['reg1', 'reg2', 'reg3', 'reg4', 'reg5', 'reg6', 'reg7', 'reg8'];

export interface DashboardStore {
  service: RunningControllerService;
  token: string;
  /** Last night's Z report, ended, with every register's report. */
  zReport: Job;
  /** Creates a job over the API and resolves once it has ended. */
  jobVia(body: Record<string, unknown>): Promise<Job>;
  stop(): Promise<void>;
}

export async function startDashboardStore(): Promise<DashboardStore> {
  const ns = `stores/pg${randomUUID().slice(0, 6)}`;
  const broker: RunningBroker = await brokersByName.embedded.start(ns);
  const devices: RunningDevice[] = await Promise.all(
    REGISTERS.map((id, i) => startRealDevice(broker, ns, id, { groups: [i < 4 ? 'front' : 'back'] })),
  );
  const service = await startService(broker, ns, { settings: { users: [ADMIN, OPERATOR] } });
  const stop = async (): Promise<void> => {
    await service.stop();
    await Promise.allSettled(devices.map((d) => d.stop()));
    await broker.stop();
  };
  await until(
    () => service.controller.devices().filter((d) => d.online).length === REGISTERS.length,
    'registers online',
    30_000,
  );
  const token = await login(service.app);
  const jobVia = async (body: Record<string, unknown>): Promise<Job> => {
    const created = await api(service.app, token, 'POST', '/api/jobs', body);
    if (created.statusCode !== 201) throw new Error(`job refused: ${JSON.stringify(created.body)}`);
    return waitForJob(service, token, created.body.jobId, ended, 'the job');
  };
  const zReport = await jobVia({ name: 'Z report', script: 'Z REPORT', target: { group: 'all' } });
  await jobVia({ script: 'X REPORT', target: { group: 'front' } });
  const saved = await api(service.app, token, 'POST', '/api/scripts', {
    name: 'Till message',
    body: 'PRINT {{message}}',
    params: [{ name: 'message', type: 'string', required: true }],
  });
  if (saved.statusCode !== 201) throw new Error(`script refused: ${JSON.stringify(saved.body)}`);
  return { service, token, zReport, jobVia, stop };
}

/** Logs in at `path` (a shared link) and resolves once the page is live. */
export async function openAt(context: BrowserContext, port: number, path: string): Promise<Page> {
  const page = await context.newPage();
  await page.goto(`http://127.0.0.1:${port}${path}`);
  await page.getByLabel('User name').fill(ADMIN.name);
  await page.getByLabel('Password').fill(ADMIN.password);
  await page.keyboard.press('Enter');
  await page.locator('#connection', { hasText: 'Live' }).waitFor({ timeout: LIVE_TIMEOUT });
  return page;
}

/** The page's address: path and query. */
export function pathOf(page: Page): string {
  const url = new URL(page.url());
  return url.pathname + url.search;
}
