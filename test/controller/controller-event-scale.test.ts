/**
 * The event stream stays O(changes) for a job to thousands of registers listed by id (issue 26
 * item 3): a cancel and a deadline of a job to 7,000 ids, with an event stream open over real
 * HTTP, write one small event per result (no target list in any), and the service keeps answering;
 * a stream whose client stops reading is dropped once 4 MiB wait for it (issue 26 item 12).
 */
import { randomUUID } from 'node:crypto';
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningControllerService } from '../../cli/controller-service.ts';
import { brokersByName, type RunningBroker } from '../support/brokers.ts';
import { api, ended, login, startService, waitForJob } from '../support/controller-service.ts';
import { type EventStreamReader, readEventStream } from '../support/event-stream.ts';

const ns = `stores/scale${randomUUID().slice(0, 6)}`;
const REGISTERS = 7_000;
const ids = Array.from({ length: REGISTERS }, (_, i) => `register-${String(i).padStart(5, '0')}`);
let broker: RunningBroker;
let service: RunningControllerService;
let token: string;
let stream: EventStreamReader;
const abort = new AbortController();

beforeAll(async () => {
  broker = await brokersByName.embedded.start(ns);
  service = await startService(broker, ns, { settings: { maxEventStreams: 2 } });
  token = await login(service.app);
  const response = await fetch(`http://127.0.0.1:${service.httpPort}/api/events`, {
    headers: { authorization: `Bearer ${token}` },
    signal: abort.signal,
  });
  stream = readEventStream(response);
  await stream.readUntil(/: connected\n\n/);
});

afterAll(async () => {
  abort.abort();
  await service?.stop();
  await broker?.stop();
});

/** The job events read for `jobId` once its end (an event without a result) has been read. */
async function jobEventsUntilEnded(jobId: string, status: string): Promise<string[]> {
  await stream.readUntil(
    new RegExp(
      `"jobId":"${jobId}","createdBy[^\\n]*"status":"${status}"[^\\n]*"counts":\\{[^}]*\\}(,"outcome":"[A-Z]+")?\\}\\n\\n`,
    ),
  );
  return stream.text
    .split('\n\n')
    .filter((block) => block.startsWith('event: job\n') && block.includes(`"jobId":"${jobId}"`));
}

async function expectServiceAlive(): Promise<void> {
  const health = await fetch(`http://127.0.0.1:${service.httpPort}/health`);
  expect(health.status).toBe(200);
}

describe('event stream of a job to 7,000 registers by id', () => {
  it('a cancel writes one small event per result, never the target list, and the service lives', async () => {
    const created = await api(service.app, token, 'POST', '/api/jobs', {
      script: 'PRINT x',
      target: { devices: ids, allowUnknown: true },
    });
    expect(created.statusCode).toBe(201);
    const { jobId } = created.body;
    stream.clear();
    const cancelled = await api(service.app, token, 'POST', `/api/jobs/${jobId}/cancel`);
    expect(cancelled.statusCode).toBe(200);
    expect(cancelled.body.counts).toMatchObject({ total: REGISTERS, cancelled: REGISTERS });
    const events = await jobEventsUntilEnded(jobId, 'CANCELLED');
    const results = events.filter((block) => block.includes('"result":'));
    expect(results).toHaveLength(REGISTERS);
    expect(events.some((block) => block.includes('"target"'))).toBe(false);
    // O(1) per event: the job's head and one result, whatever the job's size.
    expect(Math.max(...events.map((block) => block.length))).toBeLessThan(1_000);
    await expectServiceAlive();
  });

  it('a deadline ends 7,000 results in one turn, one small event each, and the service lives', async () => {
    const created = await api(service.app, token, 'POST', '/api/jobs', {
      script: 'PRINT x',
      target: { devices: ids, allowUnknown: true },
      deadlineMs: 1_000,
    });
    expect(created.statusCode).toBe(201);
    const { jobId } = created.body;
    const job = await waitForJob(service, token, jobId, ended, 'the deadline');
    expect(job.counts.offline).toBe(REGISTERS);
    const events = await jobEventsUntilEnded(jobId, 'COMPLETED');
    expect(events.filter((block) => block.includes('"status":"OFFLINE"'))).toHaveLength(REGISTERS);
    expect(events.some((block) => block.includes('"target"'))).toBe(false);
    expect(Math.max(...events.map((block) => block.length))).toBeLessThan(1_000);
    await expectServiceAlive();
  });

  it('a client that stops reading is dropped, not buffered without bound: its place is free again', async () => {
    // A stream whose reader never reads: the second and last this user may hold.
    const ticket = (await api(service.app, token, 'POST', '/api/events/ticket')).body.ticket;
    const stalled = connect(service.httpPort, '127.0.0.1');
    stalled.on('error', () => {});
    stalled.write(`GET /api/events?ticket=${ticket} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`);
    let head = '';
    await new Promise<void>((resolve) => {
      const onData = (chunk: Buffer): void => {
        head += chunk.toString('latin1');
        if (!head.includes(': connected')) return;
        stalled.off('data', onData);
        stalled.pause();
        resolve();
      };
      stalled.on('data', onData);
    });
    const third = async () =>
      fetch(
        `http://127.0.0.1:${service.httpPort}/api/events?ticket=${(await api(service.app, token, 'POST', '/api/events/ticket')).body.ticket}`,
      );
    const refused = await third();
    expect(refused.status).toBe(429);
    // Megabytes of events (cancels of 7,000 results, ~3 MB each) fill its socket past the 4 MiB
    // bound; after each, a third stream is tried: admitted once the stalled one is dropped.
    let admitted: Response | undefined;
    for (let i = 0; i < 5 && !admitted; i++) {
      const created = await api(service.app, token, 'POST', '/api/jobs', {
        script: 'PRINT x',
        target: { devices: ids, allowUnknown: true },
      });
      await api(service.app, token, 'POST', `/api/jobs/${created.body.jobId}/cancel`);
      await jobEventsUntilEnded(created.body.jobId, 'CANCELLED');
      stream.clear();
      const answer = await third();
      if (answer.status === 200) admitted = answer;
      else await answer.body?.cancel();
    }
    expect(admitted?.status).toBe(200);
    await admitted?.body?.cancel();
    stalled.destroy();
    await expectServiceAlive();
  });
});
