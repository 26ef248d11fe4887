/**
 * The event stream's job events (controller/service/event-stream.ts): the changes of one turn are
 * written together, one `event: job` per changed result plus one for the job's own status, each
 * with the job as it is when written, serialized once, without the script. Driven through the
 * engine's and directory's events, written to a real HTTP response read by a real client.
 */
import { EventEmitter } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import type { JobEngine } from '../../controller/job-engine.ts';
import type { JobResult, JobSummary } from '../../controller/job-types.ts';
import { EventStream } from '../../controller/service/event-stream.ts';
import type { DirectoryView } from '../../controller/service/service-app.ts';
import { readEventStream } from '../support/event-stream.ts';
import { silent } from '../support/loggers.ts';

function summary(status: JobSummary['status'], finished: number, running: number): JobSummary {
  return {
    jobId: 'job-1',
    createdBy: 'admin',
    createdAt: '2026-11-26T10:00:00.000Z',
    status,
    script: 'PRINT a very long script',
    target: { group: 'all' },
    deadlineAt: '2026-11-26T10:10:00.000Z',
    counts: { total: 2, pending: 0, running, finished, failed: 0, offline: 0, noAnswer: 0, cancelled: 0 },
    ...(status !== 'IN_PROGRESS' && { endedAt: '2026-11-26T10:00:01.000Z' }),
  };
}

let server: Server | undefined;
let stream: EventStream | undefined;
afterEach(async () => {
  stream?.close();
  await new Promise((resolve) => server?.close(resolve));
});

describe('event stream: job events', () => {
  it("writes a turn's changes of a job together, each with the job as it is then, without its script and target", async () => {
    const engine = new EventEmitter();
    const directory = Object.assign(new EventEmitter(), {
      connection: 'connected',
      devices: () => [],
      device: () => undefined,
      taskSummary: () => ({ queued: 0, running: 0 }),
    }) as unknown as DirectoryView;
    const events = new EventStream(engine as unknown as JobEngine, directory, silent, {
      sessions: { isLive: () => true, onSessionEnd: () => () => {} },
    });
    stream = events;
    server = createServer((_request, response) =>
      events.add(response, { key: 'k', userName: 'admin', expiresAt: Date.now() + 60_000 }),
    );
    await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    const response = await fetch(`http://127.0.0.1:${port}/`);
    const sse = readEventStream(response);
    await sse.readUntil(/: connected\n\n/);
    sse.clear();
    const reg1: JobResult = { deviceId: 'reg1', status: 'FINISHED', taskId: 7, report: 'r1' };
    const reg2: JobResult = { deviceId: 'reg2', status: 'FINISHED', taskId: 8, report: 'r2' };
    // One turn: two results end, then the job does.
    engine.emit('job', summary('IN_PROGRESS', 1, 1), reg1);
    engine.emit('job', summary('IN_PROGRESS', 2, 0), reg2);
    engine.emit('job', summary('COMPLETED', 2, 0), undefined);
    await sse.readUntil(/"status":"COMPLETED","deadlineAt"[^\n]*\}\n\n$/);
    const blocks = sse.text.split('\n\n').filter((block) => block.length > 0);
    expect(blocks.every((block) => block.startsWith('event: job\ndata: '))).toBe(true);
    const jobs = blocks.map((block) => JSON.parse(block.slice('event: job\ndata: '.length)));
    expect(jobs.map((job) => job.result?.deviceId ?? null)).toEqual(['reg1', 'reg2', null]);
    // Nor its target: a list of up to 10,000 ids, repeated in every result's event.
    const { script: _script, target: _target, ...newest } = summary('COMPLETED', 2, 0);
    expect(jobs).toEqual([{ ...newest, result: reg1 }, { ...newest, result: reg2 }, newest]);
    await sse.cancel();
  });
});
