/**
 * Cancel in the engine (docs/api.md): by id and by requestId, the cancel-before-script
 * rule within the requestId memory, and the domain refusals REST and MQTT translate.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { DomainError } from '../../src/errors.ts';
import {
  ControlledExecutor,
  InstantExecutor,
  makeQueue,
  queues,
  recordEvents,
} from '../support/task-engine.ts';

afterEach(async () => {
  await Promise.all(queues.splice(0).map((queue) => queue.stop()));
});

function refusal(action: () => unknown): DomainError {
  try {
    action();
  } catch (error) {
    expect(error).toBeInstanceOf(DomainError);
    expect(error).not.toHaveProperty('statusCode');
    return error as DomainError;
  }
  throw new Error('expected a refusal');
}

describe('cancel(id)', () => {
  it('ends a queued task FAILURE CANCELLED without running it; the queue goes on', async () => {
    const executor = new ControlledExecutor();
    const queue = makeQueue(executor);
    const events = recordEvents(queue);
    const first = queue.submit('first', { source: 'rest' }).task;
    const second = queue.submit('second', { source: 'rest' }).task;
    const third = queue.submit('third', { source: 'rest' }).task;
    expect(queue.queuedCount).toBe(2);
    const cancelled = queue.cancel(second.id, 'by the test');
    expect(cancelled).toBe(second);
    expect(cancelled).toMatchObject({ state: 'failed', error: 'CANCELLED: by the test', script: '' });
    expect(cancelled.startedAt).toBeUndefined();
    expect(queue.queuedCount).toBe(1);
    await executor.finish(0);
    await executor.finish(1);
    await queue.waitForEnd(third.id, 5000);
    expect(executor.calls.map((call) => call.script)).toEqual(['first', 'third']);
    expect(events).toEqual([
      'queued first',
      'started first',
      'queued second',
      'queued third',
      `failed ${second.id}`,
      `finished ${first.id}`,
      'started third',
      `finished ${third.id}`,
    ]);
  });

  it('refuses a running task (TASK_RUNNING), an ended one (TASK_ENDED, id and status) and an unknown id', async () => {
    const executor = new ControlledExecutor();
    const queue = makeQueue(executor);
    const running = queue.submit('running', { source: 'rest' }).task;
    expect(refusal(() => queue.cancel(running.id, 'x'))).toMatchObject({
      code: 'TASK_RUNNING',
      message: `Task ${running.id} is running; a running script is never cut`,
      details: {},
    });
    expect(running.state).toBe('running');
    await executor.finish(0, { ok: false, error: 'paper out' });
    await queue.waitForEnd(running.id, 5000);
    expect(refusal(() => queue.cancel(running.id, 'x'))).toMatchObject({
      code: 'TASK_ENDED',
      message: `Task ${running.id} has already ended (FAILURE)`,
      details: { id: running.id, status: 'FAILURE' },
    });
    expect(refusal(() => queue.cancel(42, 'x'))).toMatchObject({
      code: 'TASK_DOES_NOT_EXIST',
      details: { id: 42, status: 'TASK_DOES_NOT_EXIST' },
    });
  });

  it('a cancelled task counts among the retained ended tasks and is evicted like them', async () => {
    const queue = makeQueue(new ControlledExecutor(), { retain: 1 });
    queue.submit('running', { source: 'rest' });
    const a = queue.submit('a', { source: 'rest' }).task;
    const b = queue.submit('b', { source: 'rest' }).task;
    queue.cancel(a.id, 'x');
    queue.cancel(b.id, 'x');
    expect(queue.get(a.id)).toBeUndefined();
    expect(queue.get(b.id)?.state).toBe('failed');
  });
});

describe('cancelRequest(requestId)', () => {
  it('cancels the queued task of a requestId', () => {
    const queue = makeQueue(new ControlledExecutor());
    queue.submit('running', { source: 'mqtt', requestId: 'r-0' });
    const queued = queue.submit('PRINT x', { source: 'mqtt', requestId: 'r-1' }).task;
    expect(queue.cancelRequest('r-1', 'over MQTT')).toEqual({ task: queued });
    expect(queued).toMatchObject({ state: 'failed', error: 'CANCELLED: over MQTT' });
    // A repeat of the submission now answers the cancelled task and runs nothing.
    expect(queue.submit('PRINT x', { source: 'mqtt', requestId: 'r-1' })).toEqual({
      task: queued,
      created: false,
    });
    expect(refusal(() => queue.cancelRequest('r-0', 'x')).code).toBe('TASK_RUNNING');
  });

  it('remembers a cancel that overtakes its script: the script creates no task and is refused CANCELLED', () => {
    const executor = new ControlledExecutor();
    const queue = makeQueue(executor);
    const before = queue.lastIssuedId;
    expect(queue.cancelRequest('early', 'x')).toEqual({ remembered: true });
    expect(queue.cancelRequest('early', 'x')).toEqual({ remembered: true });
    const error = refusal(() => queue.submit('PRINT late', { source: 'mqtt', requestId: 'early' }));
    expect(error.code).toBe('CANCELLED');
    expect(error.coded).toBe(
      'CANCELLED: requestId early was cancelled before its script arrived; nothing runs',
    );
    // And again on a redelivery.
    expect(refusal(() => queue.submit('PRINT late', { source: 'mqtt', requestId: 'early' })).code).toBe(
      'CANCELLED',
    );
    expect(queue.lastIssuedId).toBe(before);
    expect(queue.list()).toEqual([]);
    expect(executor.calls).toEqual([]);
    // The REST Idempotency-Key is another namespace: not affected.
    expect(queue.submit('PRINT rest', { source: 'rest', idempotencyKey: 'early' }).created).toBe(true);
  });

  it('the remembered cancel lives within the requestId memory (oldest forgotten first)', () => {
    const queue = makeQueue(new ControlledExecutor(), { requestIdMemory: 2 });
    queue.cancelRequest('c-1', 'x');
    queue.submit('PRINT a', { source: 'mqtt', requestId: 'a' });
    queue.submit('PRINT b', { source: 'mqtt', requestId: 'b' });
    // c-1 was the oldest of three: forgotten, so its script now runs.
    expect(queue.submit('PRINT c', { source: 'mqtt', requestId: 'c-1' }).created).toBe(true);
  });

  it('an evicted task of a requestId is TASK_ENDED with its final status', async () => {
    const queue = makeQueue(new InstantExecutor(), { retain: 1 });
    const first = queue.submit('PRINT a', { source: 'mqtt', requestId: 'r-1' }).task;
    await queue.waitForEnd(first.id, 5000);
    const second = queue.submit('PRINT b', { source: 'mqtt' }).task;
    await queue.waitForEnd(second.id, 5000);
    expect(queue.get(first.id)).toBeUndefined();
    expect(refusal(() => queue.cancelRequest('r-1', 'x'))).toMatchObject({
      code: 'TASK_ENDED',
      details: { id: first.id, status: 'FINISHED' },
    });
  });
});
