/**
 * Webhook deliveries against real HTTP receivers on loopback: signatures checked with the
 * standardwebhooks package's own verifier, a receiver that fails twice then succeeds (the same
 * webhook-id each time, across a restart of the sender between retries), one that hangs (its
 * time-out costs only its own retries), the 24-hour limit of the backoff, and a log without the
 * secret. Time is a TestClock; only the receivers' sockets are real.
 */
import { EventEmitter } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Webhook } from 'standardwebhooks';
import { afterEach, describe, expect, it } from 'vitest';
import type { AuditEntry } from '../../controller/audit-log.ts';
import { type HistoryDb, openHistory } from '../../controller/history-db.ts';
import type { JobCounts, JobSummary } from '../../controller/job-types.ts';
import { announceToWebhooks, outcomeOf } from '../../controller/webhook-events.ts';
import { backoffMs, WEBHOOK_DEFAULTS, Webhooks } from '../../controller/webhooks.ts';
import { memoryLogger } from '../support/loggers.ts';
import { TestClock } from '../support/test-clock.ts';
import { until } from '../support/waits.ts';

interface Received {
  headers: IncomingHttpHeaders;
  body: string;
}

interface Receiver {
  url: string;
  received: Received[];
  server: Server;
  hanging: ServerResponse[];
}

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A receiver answering each request with `answer(n)` (n from 1), or never when it returns 'hang'. */
async function receiver(answer: (n: number) => number | 'hang'): Promise<Receiver> {
  const received: Received[] = [];
  const hanging: ServerResponse[] = [];
  const server = createServer((request, response) => {
    let body = '';
    request.on('data', (chunk: Buffer) => {
      body += chunk.toString();
    });
    request.on('end', () => {
      received.push({ headers: request.headers, body });
      const status = answer(received.length);
      if (status === 'hang') hanging.push(response);
      else response.writeHead(status).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  cleanups.push(
    () =>
      new Promise<void>((resolve) => {
        for (const response of hanging) response.destroy();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  );
  return { url: `http://127.0.0.1:${port}/hook`, received, server, hanging };
}

function historyFile(): HistoryDb {
  const dir = mkdtempSync(join(tmpdir(), 'regbridge-webhooks-'));
  const db = openHistory(join(dir, 'history.db'));
  cleanups.push(() => {
    db.close();
    rmSync(dir, { recursive: true, force: true });
  });
  return db;
}

describe('webhook deliveries', () => {
  it('signs per Standard Webhooks, retries a 500 with backoff and the same webhook-id across a restart, and never logs the secret', async () => {
    const db = historyFile();
    const clock = new TestClock(Date.now());
    const { logger, lines } = memoryLogger('debug');
    const options = { db, clock, logger, timeoutMs: 500 };
    let sender = new Webhooks(options);
    sender.start();
    const flaky = await receiver((n) => (n <= 2 ? 500 : 204));
    const hook = sender.create({ url: flaky.url, events: ['job.completed'] }, 'admin');
    expect(hook.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    const other = await receiver(() => 204);
    sender.create({ url: other.url, events: ['device.offline'] }, 'admin');

    const data = { jobId: 'j1', status: 'COMPLETED', outcome: 'PARTIAL' };
    sender.emit('job.completed', data);
    expect(flaky.received).toHaveLength(0); // emit only queues
    clock.advance(0);
    await until(() => sender.deliveries(hook.webhookId, 1)[0]!.attempts === 1, 'the first attempt');
    const afterFirst = sender.deliveries(hook.webhookId, 10);
    expect(afterFirst).toEqual([
      {
        messageId: flaky.received[0]!.headers['webhook-id'],
        event: 'job.completed',
        status: 'PENDING',
        attempts: 1,
        createdAt: new Date(clock.now()).toISOString(),
        lastAttemptAt: new Date(clock.now()).toISOString(),
        lastStatus: 500,
        nextAttemptAt: new Date(clock.now() + 5000).toISOString(),
      },
    ]);
    expect(other.received).toHaveLength(0); // not subscribed to job.completed

    // A restart between retries: the delivery is resumed from the file.
    sender.stop();
    sender = new Webhooks(options);
    sender.start();
    clock.advance(4999);
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(flaky.received).toHaveLength(1);
    clock.advance(1);
    await until(() => sender.deliveries(hook.webhookId, 1)[0]!.attempts === 2, 'the second attempt');
    clock.advance(10_000);
    await until(() => sender.deliveries(hook.webhookId, 1)[0]!.status === 'DELIVERED', 'the third attempt');
    sender.stop();

    expect(flaky.received).toHaveLength(3);
    const ids = new Set(flaky.received.map((r) => r.headers['webhook-id']));
    expect(ids.size).toBe(1);
    for (const request of flaky.received) {
      expect(request.headers['content-type']).toBe('application/json');
      const verified = new Webhook(hook.secret).verify(
        request.body,
        request.headers as Record<string, string>,
      );
      expect(verified).toEqual({ type: 'job.completed', timestamp: afterFirst[0]!.createdAt, data });
    }
    expect(flaky.received[2]!.headers['webhook-timestamp']).toBe(String(Math.floor(clock.now() / 1000)));
    expect(() =>
      new Webhook(`whsec_${Buffer.alloc(32, 1).toString('base64')}`).verify(
        flaky.received[0]!.body,
        flaky.received[0]!.headers as Record<string, string>,
      ),
    ).toThrow();
    const logged = JSON.stringify(lines);
    expect(lines.some((line) => line.msg === 'webhook delivery failed')).toBe(true);
    expect(logged).not.toContain(hook.secret);
    expect(logged).not.toContain(hook.secret.slice(6));
  });

  it('a receiver that hangs times out and costs only its own retries', async () => {
    const db = historyFile();
    const clock = new TestClock(Date.now());
    const sender = new Webhooks({ db, clock, logger: memoryLogger('silent').logger, timeoutMs: 300 });
    sender.start();
    cleanups.push(() => sender.stop());
    const stuck = await receiver(() => 'hang');
    const fine = await receiver(() => 200);
    const slow = sender.create({ url: stuck.url, events: ['device.offline'] }, 'admin');
    const fast = sender.create({ url: fine.url, events: ['device.offline'] }, 'admin');
    sender.emit('device.offline', { deviceId: 'reg1' });
    clock.advance(0);
    await until(() => sender.deliveries(fast.webhookId, 1)[0]!.status === 'DELIVERED', 'the other receiver');
    expect(sender.deliveries(slow.webhookId, 1)[0]!.attempts).toBe(0); // still waiting meanwhile
    await until(() => sender.deliveries(slow.webhookId, 1)[0]!.attempts === 1, 'the time-out');
    expect(sender.deliveries(slow.webhookId, 1)[0]).toMatchObject({
      status: 'PENDING',
      lastError: 'no answer within 300 ms',
      nextAttemptAt: new Date(clock.now() + 5000).toISOString(),
    });
    expect(fine.received).toHaveLength(1);
  });

  it('gives up 24 hours after the event, the waits doubling up to an hour', async () => {
    const db = historyFile();
    const clock = new TestClock(Date.now());
    const sender = new Webhooks({ db, clock, logger: memoryLogger('silent').logger });
    sender.start();
    cleanups.push(() => sender.stop());
    const broken = await receiver(() => 503);
    const hook = sender.create({ url: broken.url, events: ['device.online'] }, 'admin');
    const start = clock.now();
    sender.emit('device.online', { deviceId: 'reg1' });
    clock.advance(0);
    const attemptTimes: number[] = [];
    for (let i = 0; i < 100; i++) {
      await until(() => sender.deliveries(hook.webhookId, 1)[0]!.attempts === i + 1, `attempt ${i + 1}`);
      attemptTimes.push(clock.now() - start);
      const delivery = sender.deliveries(hook.webhookId, 1)[0]!;
      if (delivery.status === 'FAILED') break;
      clock.advance(Date.parse(delivery.nextAttemptAt!) - clock.now());
    }
    // The expected schedule, from the documented rule.
    const expected = [0];
    for (let n = 1; ; n++) {
      const next =
        expected[n - 1]! + backoffMs(n, WEBHOOK_DEFAULTS.firstBackoffMs, WEBHOOK_DEFAULTS.maxBackoffMs);
      if (next > WEBHOOK_DEFAULTS.retryForMs) break;
      expected.push(next);
    }
    expect(attemptTimes).toEqual(expected);
    expect(attemptTimes.slice(0, 4)).toEqual([0, 5000, 15_000, 35_000]);
    expect(sender.deliveries(hook.webhookId, 1)[0]!.status).toBe('FAILED');
    expect(broken.received).toHaveLength(expected.length);
  });
});

describe('what is announced', () => {
  it('job.created from the audit trail, waiting once, missed runs, one end per job with its outcome, and register changes after the first sight', async () => {
    const engine = new EventEmitter() as EventEmitter & { get(jobId: string): JobSummary | undefined };
    const directory = new EventEmitter();
    const scheduler = new EventEmitter();
    const auditListeners = new Set<(entry: AuditEntry) => void>();
    const summary = (
      status: JobSummary['status'],
      counts: Partial<JobCounts>,
      endedAt?: string,
    ): JobSummary => ({
      jobId: 'j1',
      createdBy: 'admin',
      createdAt: '2026-11-22T22:00:00.000Z',
      status,
      script: 'Z REPORT',
      target: { group: 'front' },
      deadlineAt: '2026-11-22T22:10:00.000Z',
      counts: {
        total: 2,
        pending: 0,
        running: 0,
        finished: 0,
        failed: 0,
        offline: 0,
        noAnswer: 0,
        cancelled: 0,
        ...counts,
      },
      ...(endedAt !== undefined && { endedAt }),
    });
    engine.get = () => ({ ...summary('IN_PROGRESS', { pending: 2 }), results: [] }) as unknown as JobSummary;
    const emitted: [string, Record<string, unknown>][] = [];
    const stop = announceToWebhooks(
      {
        engine,
        directory,
        scheduler,
        audit: {
          onEntry: (listener) => {
            auditListeners.add(listener);
            return () => auditListeners.delete(listener);
          },
        },
      },
      (event, data) => emitted.push([event, data]),
    );
    for (const listener of auditListeners) {
      listener({
        at: '',
        user: 'admin',
        address: '',
        action: 'job_created',
        detail: 'job j1 to group front (2 registers)',
      });
    }
    await Promise.resolve();
    const waiting = { ...summary('WAITING_FOR_APPROVAL', { pending: 2 }), jobId: 'j2' };
    engine.emit('job', waiting);
    engine.emit('job', waiting); // announced once
    await Promise.resolve();
    const run = { scheduleId: 's1', name: 'Nightly', fireAt: '2026-11-22T21:00:00.000Z', lateMs: 7_200_000 };
    scheduler.emit('missed', run);
    engine.emit('job', summary('IN_PROGRESS', { running: 1, finished: 1 }));
    engine.emit('job', summary('COMPLETED', { finished: 1, failed: 1 }, '2026-11-22T22:01:00.000Z'));
    engine.emit('job', summary('COMPLETED', { finished: 1, failed: 1 }, '2026-11-22T22:01:00.000Z'));
    const device = { deviceId: 'reg1', bootId: 'b', groups: ['front'], lastSeen: '2026-11-22T22:00:00.000Z' };
    directory.emit('device', { ...device, online: true }); // first sight: nothing
    directory.emit('device', { ...device, online: true });
    directory.emit('device', { ...device, online: false });
    directory.emit('device', { ...device, online: true });
    stop();
    directory.emit('device', { ...device, online: false });
    scheduler.emit('missed', run);
    expect(emitted.map(([event]) => event)).toEqual([
      'job.created',
      'job.waiting_for_approval',
      'schedule.missed',
      'job.completed',
      'device.offline',
      'device.online',
    ]);
    expect(emitted[0]![1]).not.toHaveProperty('script');
    expect(emitted[0]![1]).not.toHaveProperty('results');
    expect(emitted[1]![1]).toMatchObject({ jobId: 'j2', status: 'WAITING_FOR_APPROVAL' });
    expect(emitted[1]![1]).not.toHaveProperty('script');
    expect(emitted[1]![1]).not.toHaveProperty('outcome');
    expect(emitted[2]![1]).toEqual(run);
    expect(emitted[3]![1]).toMatchObject({ jobId: 'j1', status: 'COMPLETED', outcome: 'PARTIAL' });
    expect(emitted[4]![1]).toEqual({
      deviceId: 'reg1',
      groups: ['front'],
      lastSeenAt: '2026-11-22T22:00:00.000Z',
    });
  });

  it('outcome: every result FINISHED, some, none', () => {
    const counts = {
      total: 3,
      pending: 0,
      running: 0,
      finished: 0,
      failed: 0,
      offline: 0,
      noAnswer: 0,
      cancelled: 0,
    };
    expect(outcomeOf({ ...counts, finished: 3 })).toBe('SUCCEEDED');
    expect(outcomeOf({ ...counts, finished: 1, offline: 2 })).toBe('PARTIAL');
    expect(outcomeOf({ ...counts, failed: 3 })).toBe('FAILED');
  });
});
