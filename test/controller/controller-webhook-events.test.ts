/**
 * The events the running service hands to webhooks, end to end: the real service (its
 * composition root wires the sources) on the embedded broker, a webhook created over HTTP, and a
 * real HTTP receiver on loopback. Time is a TestClock, so a schedule's run is missed on demand.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningControllerService } from '../../cli/controller-service.ts';
import { brokersByName, type RunningBroker } from '../support/brokers.ts';
import { api, login, startService } from '../support/controller-service.ts';
import { TestClock } from '../support/test-clock.ts';
import { until } from '../support/waits.ts';

const ns = `stores/hookevents${randomUUID().slice(0, 6)}`;
const HOUR = 3_600_000;
const clock = new TestClock(Date.now());
let broker: RunningBroker;
let service: RunningControllerService;
let token: string;
let server: Server;
let url: string;
const received: { headers: Record<string, string>; body: string }[] = [];

beforeAll(async () => {
  server = createServer((request, response) => {
    let body = '';
    request.on('data', (chunk: Buffer) => {
      body += chunk.toString();
    });
    request.on('end', () => {
      received.push({ headers: request.headers as Record<string, string>, body });
      response.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
  broker = await brokersByName.embedded.start(ns);
  service = await startService(broker, ns, { clock, settings: { approval: 'all' } });
  token = await login(service.app);
});

afterAll(async () => {
  await service?.stop();
  await broker?.stop();
  server?.closeAllConnections();
  await new Promise<void>((resolve) => server?.close(() => resolve()));
});

/** The next delivery (deliveries wait on the service's clock). */
async function nextDelivery(what: string): Promise<{ headers: Record<string, string>; body: string }> {
  const seen = received.length;
  await until(() => {
    clock.advance(0);
    return received.length > seen;
  }, what);
  return received[seen]!;
}

describe('events delivered by the service', () => {
  it('job.waiting_for_approval and schedule.missed reach a subscribed receiver', async () => {
    const hook = await api(service.app, token, 'POST', '/api/webhooks', {
      url,
      events: ['job.waiting_for_approval', 'schedule.missed'],
    });
    expect(hook.statusCode).toBe(201);
    const { secret } = hook.body;

    const job = await api(service.app, token, 'POST', '/api/jobs', {
      name: 'Z report',
      script: 'Z REPORT',
      target: { devices: ['reg1'], allowUnknown: true },
    });
    expect(job.statusCode).toBe(201);
    expect(job.body.status).toBe('WAITING_FOR_APPROVAL');
    const first = await nextDelivery('job.waiting_for_approval');
    const waiting = new Webhook(secret).verify(first.body, first.headers) as { type: string; data: unknown };
    expect(waiting.type).toBe('job.waiting_for_approval');
    expect(waiting.data).toMatchObject({
      jobId: job.body.jobId,
      name: 'Z report',
      status: 'WAITING_FOR_APPROVAL',
      createdBy: 'admin',
    });
    expect(waiting.data).not.toHaveProperty('script');

    // An hourly schedule whose run comes 2 minutes late, with a grace of 1 minute: missed.
    const schedule = await api(service.app, token, 'POST', '/api/schedules', {
      name: 'Hourly X report',
      cron: '0 * * * *',
      timezone: 'UTC',
      misfireGraceMs: 60_000,
      job: { script: 'X REPORT', target: { devices: ['reg1'], allowUnknown: true } },
    });
    expect(schedule.statusCode).toBe(201);
    const fireAt = Math.ceil((clock.now() + 1) / HOUR) * HOUR;
    clock.advance(fireAt + 120_000 - clock.now());
    // Not verified here: its timestamp is the service's clock, an hour ahead of the verifier's.
    const missed = JSON.parse((await nextDelivery('schedule.missed')).body);
    expect(missed).toMatchObject({
      type: 'schedule.missed',
      data: {
        scheduleId: schedule.body.scheduleId,
        name: 'Hourly X report',
        fireAt: new Date(fireAt).toISOString(),
        lateMs: 120_000,
      },
    });
    expect(received).toHaveLength(2);
  });
});
