/**
 * The task engine (docs/api.md, "Semantics"), driven by an executor whose scripts end
 * when the test says so: one at a time in arrival order, ids, events, retention, idempotency,
 * QUEUE_FULL, long-poll waits, stop(), and bounded memory.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterEach, describe, expect, it } from 'vitest';
import { DomainError } from '../../src/errors.ts';
import type { Task } from '../../src/tasks/task.ts';
import { TaskQueue } from '../../src/tasks/task-queue.ts';
import {
  ControlledExecutor,
  InstantExecutor,
  makeQueue,
  queues,
  recordEvents,
} from '../support/task-engine.ts';
import { until } from '../support/waits.ts';

afterEach(async () => {
  await Promise.all(queues.splice(0).map((queue) => queue.stop()));
});

describe('TaskQueue', () => {
  it('runs one script at a time, in arrival order, with strictly increasing ids', async () => {
    const executor = new ControlledExecutor();
    const queue = makeQueue(executor);
    const tasks = ['a', 'b', 'c'].map((script) => queue.submit(script, { source: 'rest' }).task);
    expect(tasks[1]!.id).toBeGreaterThan(tasks[0]!.id);
    expect(tasks[2]!.id).toBeGreaterThan(tasks[1]!.id);
    expect(tasks.map((task) => task.state)).toEqual(['running', 'queued', 'queued']);
    expect(queue.queuedCount).toBe(2);
    for (let index = 0; index < 3; index += 1) await executor.finish(index);
    await until(() => tasks.every((task) => task.state === 'finished'));
    expect(executor.calls.map((call) => call.script)).toEqual(['a', 'b', 'c']);
    expect(executor.maxRunning).toBe(1);
    expect(tasks.map((task) => task.report)).toEqual(['report 0', 'report 1', 'report 2']);
    expect(queue.list().map((task) => task.id)).toEqual(tasks.map((task) => task.id).reverse());
  });

  it('emits queued, started, finished or failed, in order; drops the script at the end', async () => {
    const executor = new ControlledExecutor();
    const queue = makeQueue(executor);
    const events = recordEvents(queue);
    const first = queue.submit('one', { source: 'rest' }).task;
    const second = queue.submit('two', { source: 'mqtt', requestId: 'r-2' }).task;
    await executor.finish(0);
    await executor.finish(1, { ok: false, error: 'boom' });
    await until(() => second.state === 'failed');
    // The script is '' once a task has ended, so the log shows ids from then on.
    expect(events).toEqual([
      'queued one',
      'started one',
      'queued two',
      `finished ${first.id}`,
      'started two',
      `failed ${second.id}`,
    ]);
    expect(first.script).toBe('');
    expect(second.script).toBe('');
    expect(second).toMatchObject({ error: 'boom', requestId: 'r-2', source: 'mqtt' });
    expect(second.report).toBeUndefined();
    expect(first.startedAt!.getTime()).toBeGreaterThanOrEqual(first.queuedAt.getTime());
    expect(first.finishedAt!.getTime()).toBeGreaterThanOrEqual(first.startedAt!.getTime());
  });

  it('keeps the last `retain` ended tasks; older ids answer undefined and fire evicted', async () => {
    const queue = makeQueue(new InstantExecutor(), { retain: 128 });
    const evicted: number[] = [];
    queue.on('evicted', (task) => evicted.push(task.id));
    const ids: number[] = [];
    for (let index = 0; index < 130; index += 1) {
      ids.push(queue.submit(`s${index}`, { source: 'rest' }).task.id);
      await queue.waitForEnd(ids[index]!, 5000);
    }
    expect(evicted).toEqual([ids[0], ids[1]]);
    expect(queue.get(ids[0]!)).toBeUndefined();
    expect(queue.get(ids[1]!)).toBeUndefined();
    expect(queue.get(ids[2]!)?.state).toBe('finished');
    expect(queue.heldCount).toBe(128);
    expect(queue.list()).toHaveLength(128);
  });

  it('gives a restarted queue larger ids, in the same process and in a new one', async () => {
    const before = makeQueue(new InstantExecutor()).submit('x', { source: 'rest' }).task.id;
    const after = makeQueue(new InstantExecutor()).submit('x', { source: 'rest' }).task.id;
    expect(after).toBeGreaterThan(before);
    // A real restart: a new process seeds its ids from the clock, above everything issued here.
    const program = "import('./src/tasks/id-source.ts').then((m) => console.log(new m.IdSource().next()))";
    const run = async (): Promise<number> =>
      Number((await promisify(execFile)(process.execPath, ['--import', 'tsx', '-e', program])).stdout.trim());
    const firstBoot = await run();
    const secondBoot = await run();
    expect(firstBoot).toBeGreaterThan(after);
    expect(secondBoot).toBeGreaterThan(firstBoot);
    expect(secondBoot).toBeLessThan(2 ** 53);
  });

  it('refuses more than maxQueue waiting tasks with QUEUE_FULL and Retry-After', async () => {
    const executor = new ControlledExecutor();
    const queue = makeQueue(executor, { maxQueue: 2, retryAfterSeconds: 3 });
    queue.submit('running', { source: 'rest' });
    queue.submit('waiting 1', { source: 'rest' });
    queue.submit('waiting 2', { source: 'rest' });
    const lastId = queue.lastIssuedId;
    let refusal: unknown;
    try {
      queue.submit('one too many', { source: 'rest' });
    } catch (error) {
      refusal = error;
    }
    expect(refusal).toBeInstanceOf(DomainError);
    expect(refusal).toMatchObject({ code: 'QUEUE_FULL', retryAfterSeconds: 3 });
    expect(refusal).not.toHaveProperty('statusCode');
    expect(queue.lastIssuedId).toBe(lastId);
    // Expired tasks never wait, so they are accepted even when the queue is full.
    expect(queue.submit('expired', { source: 'mqtt', notAfter: Date.now() - 1 }).task.state).toBe('failed');
    await executor.finish(0);
    await until(() => queue.queuedCount === 1);
    expect(queue.submit('fits again', { source: 'rest' }).created).toBe(true);
  });

  it('answers a repeated Idempotency-Key with the first task, or IDEMPOTENCY_CONFLICT', async () => {
    const executor = new ControlledExecutor();
    const queue = makeQueue(executor, { retain: 1 });
    const first = queue.submit('PRINT a', { source: 'rest', idempotencyKey: 'k1' });
    expect(first.created).toBe(true);
    const again = queue.submit('PRINT a', { source: 'rest', idempotencyKey: 'k1' });
    expect(again).toEqual({ task: first.task, created: false });
    expect(() => queue.submit('PRINT b', { source: 'rest', idempotencyKey: 'k1' })).toThrow(
      expect.objectContaining({ code: 'IDEMPOTENCY_CONFLICT', details: { id: first.task.id } }),
    );
    await executor.finish(0);
    await queue.waitForEnd(first.task.id, 5000);
    // Still retained after its end: still the same task, nothing runs again.
    expect(queue.submit('PRINT a', { source: 'rest', idempotencyKey: 'k1' }).created).toBe(false);
    expect(executor.calls).toHaveLength(1);
    // Evicted (retain 1): the key is free again.
    const other = queue.submit('PRINT c', { source: 'rest' });
    await executor.finish(1);
    await queue.waitForEnd(other.task.id, 5000);
    expect(queue.get(first.task.id)).toBeUndefined();
    const reused = queue.submit('PRINT b', { source: 'rest', idempotencyKey: 'k1' });
    expect(reused.created).toBe(true);
    expect(reused.task.id).toBeGreaterThan(other.task.id);
  });

  it('a passed notAfter creates the task and fails it EXPIRED at once, without running it', () => {
    const executor = new ControlledExecutor();
    const queue = makeQueue(executor, { now: () => Date.UTC(2026, 0, 5, 8) });
    const events = recordEvents(queue);
    const { task, created } = queue.submit('PRINT late', {
      source: 'mqtt',
      notAfter: Date.UTC(2026, 0, 5, 7),
    });
    expect(created).toBe(true);
    expect(task).toMatchObject({
      state: 'failed',
      error: 'EXPIRED: notAfter 2026-01-05T07:00:00.000Z passed before the device received the script',
      script: '',
    });
    expect(task.finishedAt).toBeInstanceOf(Date);
    expect(task.startedAt).toBeUndefined();
    expect(events).toEqual(['queued PRINT late', `failed ${task.id}`]);
    expect(executor.calls).toHaveLength(0);
  });

  it('waitForEnd resolves at the end, after its timeout, or with undefined', async () => {
    const executor = new ControlledExecutor();
    const queue = makeQueue(executor);
    const { task } = queue.submit('slow', { source: 'rest' });
    expect(await queue.waitForEnd(task.id, 20)).toMatchObject({ id: task.id, state: 'running' });
    const waiting = queue.waitForEnd(task.id, 30_000);
    await executor.finish(0, { ok: true, report: 'done' });
    expect(await waiting).toMatchObject({ id: task.id, state: 'finished', report: 'done' });
    expect(await queue.waitForEnd(task.id, 30_000)).toMatchObject({ state: 'finished' });
    expect(await queue.waitForEnd(task.id + 1000, 30_000)).toBeUndefined();
    const aborter = new AbortController();
    const second = queue.submit('slower', { source: 'rest' }).task;
    const aborted = queue.waitForEnd(second.id, 30_000, aborter.signal);
    aborter.abort();
    expect(await aborted).toMatchObject({ id: second.id, state: 'running' });
  });

  it('stop() aborts the running task, which fails; queued tasks stay queued', async () => {
    const executor = new ControlledExecutor();
    const queue = makeQueue(executor);
    const running = queue.submit('long', { source: 'rest' }).task;
    const waiting = queue.submit('next', { source: 'rest' }).task;
    const waiter = queue.waitForEnd(waiting.id, 30_000);
    await until(() => executor.calls.length === 1);
    await queue.stop();
    expect(executor.calls[0]!.signal.aborted).toBe(true);
    expect(running).toMatchObject({ state: 'failed', error: 'aborted' });
    expect(waiting.state).toBe('queued');
    // stop() wakes long polls, which answer the current state.
    expect(await waiter).toMatchObject({ id: waiting.id, state: 'queued' });
    expect(executor.calls).toHaveLength(1);
  });

  it('holds at most `retain` reports however many tasks pass through', async () => {
    const queue = makeQueue(new InstantExecutor(100_000), { retain: 128 });
    let evicted = 0;
    queue.on('evicted', () => {
      evicted += 1;
    });
    let lastId = 0;
    for (let index = 0; index < 5000; index += 1) {
      lastId = queue.submit(`s${index}`, { source: 'rest' }).task.id;
      if (index % 500 === 499) await queue.waitForEnd(lastId, 10_000);
    }
    await queue.waitForEnd(lastId, 10_000);
    expect(queue.heldCount).toBe(128);
    expect(evicted).toBe(5000 - 128);
    const held = queue.list();
    expect(held.every((task) => task.script === '' && task.report?.length === 100_000)).toBe(true);
    expect(held[0]!.id).toBe(lastId);
  });

  it('never runs two scripts at once, even when a listener submits from inside an event', async () => {
    const executor = new ControlledExecutor();
    const queue = makeQueue(executor);
    let submitted = false;
    queue.on('started', () => {
      if (submitted) return;
      submitted = true;
      queue.submit('from a listener', { source: 'rest' });
    });
    queue.submit('first', { source: 'rest' });
    await new Promise((resolve) => setImmediate(resolve));
    expect(executor.maxRunning).toBe(1);
    expect(executor.calls.map((call) => call.script)).toEqual(['first']);
    await executor.finish(0);
    await executor.finish(1);
    expect(executor.calls.map((call) => call.script)).toEqual(['first', 'from a listener']);
  });

  it('runs a task submitted in a microtask right after the queue went idle', async () => {
    const queue = makeQueue(new InstantExecutor());
    const late: Array<Readonly<Task>> = [];
    queue.once('finished', () => {
      queueMicrotask(() => late.push(queue.submit('late', { source: 'rest' }).task));
    });
    const first = queue.submit('first', { source: 'rest' }).task;
    await queue.waitForEnd(first.id, 5000);
    await until(() => late.length === 1);
    expect(await queue.waitForEnd(late[0]!.id, 5000)).toMatchObject({ state: 'finished' });
  });
});

describe('listener failures', () => {
  it('keeps running tasks and calls the other listeners when one listener throws', async () => {
    const errors: string[] = [];
    const queue = new TaskQueue({
      executor: { name: 'echo', execute: async (script) => ({ ok: true, report: script }) },
      retain: 10,
      maxQueue: 10,
      onListenerError: (_error, event) => errors.push(event),
    });
    const finished: number[] = [];
    let onceCalls = 0;
    queue.on('started', () => {
      throw new Error('broken subscriber');
    });
    queue.once('finished', () => {
      onceCalls += 1;
    });
    queue.on('finished', (task) => finished.push(task.id));
    queue.start();
    const a = queue.submit('PRINT a', { source: 'rest' }).task;
    const b = queue.submit('PRINT b', { source: 'rest' }).task;
    expect((await queue.waitForEnd(b.id, 5000))?.state).toBe('finished');
    expect(finished).toEqual([a.id, b.id]);
    expect(onceCalls).toBe(1);
    expect(errors).toEqual(['started', 'started']);
    await queue.stop();
  });
});

describe('TaskQueue: scripts submitted in one turn run back to back, after it', () => {
  it('starts the first at once, runs the scripts in the check phase, in order, one at a time', async () => {
    const scripts: string[] = [];
    const executor = {
      name: 'recording',
      async execute(script: string) {
        scripts.push(script);
        return { ok: true as const, report: script };
      },
    };
    const queue = makeQueue(executor);
    const tasks = ['a', 'b', 'c'].map((script) => queue.submit(script, { source: 'rest' }).task);
    // Submitted in the same turn (as requests read in one I/O phase): the first is running (a
    // cancel is TASK_RUNNING, maxQueue counts the others), no script has run yet.
    expect(tasks.map((task) => task.state)).toEqual(['running', 'queued', 'queued']);
    await Promise.resolve();
    expect(scripts).toEqual([]);
    await new Promise((resolve) => setImmediate(resolve));
    await until(() => tasks.every((task) => task.state === 'finished'));
    expect(scripts).toEqual(['a', 'b', 'c']);
  });

  it('a queue stopped before the first script ran ends it FAILURE without running it', async () => {
    const executor = new ControlledExecutor();
    const queue = new TaskQueue({ executor, retain: 10, maxQueue: 10 });
    queue.start();
    const { task } = queue.submit('PRINT never', { source: 'rest' });
    expect(task.state).toBe('running');
    await queue.stop();
    expect(task.state).toBe('failed');
    expect(task.error).toBe('aborted before it ran (service stopping)');
    expect(executor.calls).toEqual([]);
  });
});
