/**
 * The engine's one admission path (TaskQueue.submit, src/tasks/script-text.ts): blank, UTF-8
 * validity, size, idempotency and expiry are decided here, with registered domain codes and no
 * HTTP in them. REST and MQTT only translate (test/device/http-admission.test.ts, the bridge contract
 * suite).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { DomainError, errorRegistry } from '../../src/errors.ts';
import { decodeUtf8 } from '../../src/tasks/script-text.ts';
import { ControlledExecutor, InstantExecutor, makeQueue, queues } from '../support/task-engine.ts';
import { until } from '../support/waits.ts';

afterEach(async () => {
  await Promise.all(queues.splice(0).map((queue) => queue.stop()));
});

/** The DomainError submit() throws, or a failure if it does not throw one. */
function refusal(action: () => unknown): DomainError {
  try {
    action();
  } catch (error) {
    expect(error).toBeInstanceOf(DomainError);
    const domain = error as DomainError;
    // Registered, and free of HTTP.
    expect(errorRegistry[domain.code]).toBeDefined();
    expect(domain).not.toHaveProperty('statusCode');
    expect(domain).not.toHaveProperty('headers');
    return domain;
  }
  throw new Error('expected a refusal');
}

describe('what a valid script is', () => {
  it('refuses empty and blank scripts with INVALID_REQUEST, naming the script as the caller does', () => {
    const queue = makeQueue(new ControlledExecutor());
    for (const script of ['', ' ', ' \r\n\t ', '\n\n']) {
      const error = refusal(() => queue.submit(script, { source: 'mqtt' }));
      expect([error.code, error.message]).toEqual(['INVALID_REQUEST', 'the script must not be empty']);
    }
    const rest = refusal(() => queue.submit(' ', { source: 'rest', subject: "body field 'fmScript'" }));
    expect(rest.message).toBe("body field 'fmScript' must not be empty");
    expect(queue.list()).toEqual([]);
  });

  it('measures the size in UTF-8 bytes and refuses beyond the limit with SCRIPT_TOO_LARGE', () => {
    const queue = makeQueue(new ControlledExecutor(), { maxScriptBytes: 12 });
    // 4 euro signs: 4 UTF-16 units, 12 bytes of UTF-8.
    expect(queue.submit('€€€€', { source: 'rest' }).created).toBe(true);
    const before = queue.lastIssuedId;
    const error = refusal(() => queue.submit('€€€€x', { source: 'mqtt' }));
    expect([error.code, error.message]).toEqual([
      'SCRIPT_TOO_LARGE',
      'the script is 13 bytes of UTF-8; the limit is 12',
    ]);
    // 4-byte characters: two UTF-16 units each.
    expect(refusal(() => queue.submit('😀😀😀x', { source: 'mqtt' })).message).toBe(
      'the script is 13 bytes of UTF-8; the limit is 12',
    );
    expect(queue.lastIssuedId).toBe(before);
  });

  it('decodes UTF-8 strictly: invalid bytes are refused, never turned into U+FFFD', () => {
    const invalid = [
      [0xff],
      [0x50, 0xc3], // truncated 2-byte sequence
      [0xc0, 0x80], // overlong NUL
      [0xed, 0xa0, 0x80], // an encoded surrogate
      [0xf4, 0x90, 0x80, 0x80], // above U+10FFFF
    ];
    for (const bytes of invalid) {
      let thrown: unknown;
      try {
        decodeUtf8(Buffer.from(bytes), 'the payload');
      } catch (error) {
        thrown = error;
      }
      expect(thrown).toBeInstanceOf(DomainError);
      expect(thrown).toMatchObject({ code: 'INVALID_REQUEST', message: 'the payload is not valid UTF-8' });
    }
    expect(decodeUtf8(Buffer.from('PRINT é € 😀 \uFFFD', 'utf8'), 'Body')).toBe('PRINT é € 😀 \uFFFD');
  });
});

describe('idempotency and expiry, decided once', () => {
  it('a repeated requestId runs nothing, whatever its script, and says when the script differs', async () => {
    const executor = new ControlledExecutor();
    const queue = makeQueue(executor);
    const first = queue.submit('PRINT a', { source: 'mqtt', requestId: 'r-1' });
    expect(first.created).toBe(true);
    expect(queue.submit('PRINT a', { source: 'mqtt', requestId: 'r-1' })).toEqual({
      task: first.task,
      created: false,
    });
    expect(queue.submit('PRINT b', { source: 'mqtt', requestId: 'r-1' })).toEqual({
      task: first.task,
      created: false,
      otherScript: true,
    });
    // The REST key and the MQTT requestId are separate: the same string is no repeat.
    expect(queue.submit('PRINT a', { source: 'rest', idempotencyKey: 'r-1' }).created).toBe(true);
    await executor.finish(0);
    await executor.finish(1);
    expect(executor.calls.map((call) => call.script)).toEqual(['PRINT a', 'PRINT a']);
  });

  it('a requestId outlives its task: after eviction a repeat names the task in its final state', async () => {
    const queue = makeQueue(new InstantExecutor(), { retain: 1 });
    const first = queue.submit('PRINT a', { source: 'mqtt', requestId: 'r-1' }).task;
    await queue.waitForEnd(first.id, 5000);
    const second = queue.submit('PRINT b', { source: 'mqtt' }).task;
    await queue.waitForEnd(second.id, 5000);
    expect(queue.get(first.id)).toBeUndefined();
    const repeat = queue.submit('PRINT a', { source: 'mqtt', requestId: 'r-1' });
    expect(repeat.created).toBe(false);
    expect(repeat.task).toMatchObject({ id: first.id, state: 'finished', requestId: 'r-1' });
    expect(repeat.task.report).toBeUndefined();
    expect(queue.isHeld(repeat.task)).toBe(false);
    expect(queue.list().map((task) => task.id)).toEqual([second.id]);
  });

  it('remembers only the last requestIdMemory submissions, and never a refused one', async () => {
    const executor = new ControlledExecutor();
    const queue = makeQueue(executor, { requestIdMemory: 2, maxQueue: 1 });
    queue.submit('PRINT running', { source: 'mqtt', requestId: 'a' });
    await executor.finish(0, { ok: true, report: '' });
    queue.submit('HOLD', { source: 'mqtt', requestId: 'b' });
    queue.submit('PRINT waits', { source: 'mqtt', requestId: 'c' });
    // Full: refused, so not remembered, and retrying the same requestId later works.
    expect(refusal(() => queue.submit('PRINT d', { source: 'mqtt', requestId: 'd' })).code).toBe(
      'QUEUE_FULL',
    );
    await executor.finish(1);
    await until(() => queue.queuedCount === 0);
    expect(queue.submit('PRINT d', { source: 'mqtt', requestId: 'd' }).created).toBe(true);
    // Memory 2 holds c and d now: c is a repeat, a was forgotten and is new again.
    expect(queue.submit('PRINT waits', { source: 'mqtt', requestId: 'c' }).created).toBe(false);
    await executor.finish(2);
    await until(() => queue.queuedCount === 0);
    expect(queue.submit('PRINT running', { source: 'mqtt', requestId: 'a' }).created).toBe(true);
  });

  it('a blank or oversized repeat is refused before it is compared', () => {
    const queue = makeQueue(new ControlledExecutor(), { maxScriptBytes: 10 });
    queue.submit('PRINT a', { source: 'mqtt', requestId: 'r-1' });
    expect(refusal(() => queue.submit('', { source: 'mqtt', requestId: 'r-1' })).code).toBe(
      'INVALID_REQUEST',
    );
    expect(refusal(() => queue.submit('x'.repeat(11), { source: 'mqtt', requestId: 'r-1' })).code).toBe(
      'SCRIPT_TOO_LARGE',
    );
  });

  it('notAfter: passed is a task that ends EXPIRED unrun (even with a full queue); ahead runs', async () => {
    const now = Date.UTC(2026, 0, 5, 8);
    const executor = new ControlledExecutor();
    const queue = makeQueue(executor, { maxQueue: 1, now: () => now });
    queue.submit('HOLD', { source: 'rest' });
    queue.submit('PRINT waits', { source: 'rest' });
    const expired = queue.submit('PRINT stale', { source: 'mqtt', notAfter: now - 1 });
    expect(expired.created).toBe(true);
    expect(expired.task.state).toBe('failed');
    expect(expired.task.error).toBe(
      'EXPIRED: notAfter 2026-01-05T07:59:59.999Z passed before the device received the script',
    );
    expect(refusal(() => queue.submit('PRINT fresh', { source: 'mqtt', notAfter: now })).code).toBe(
      'QUEUE_FULL',
    );
    await executor.finish(0);
    await until(() => queue.queuedCount === 0);
    const fresh = queue.submit('PRINT fresh', { source: 'mqtt', notAfter: now });
    expect(fresh.task.state).toBe('queued');
    await executor.finish(1);
    await executor.finish(2);
    expect(executor.calls.map((call) => call.script)).toEqual(['HOLD', 'PRINT waits', 'PRINT fresh']);
  });

  it('QUEUE_FULL says when to try again in seconds, not as an HTTP header', () => {
    const queue = makeQueue(new ControlledExecutor(), { maxQueue: 1, retryAfterSeconds: 7 });
    queue.submit('PRINT running', { source: 'rest' });
    queue.submit('PRINT waiting', { source: 'rest' });
    const error = refusal(() => queue.submit('PRINT one more', { source: 'rest' }));
    expect(error).toMatchObject({ code: 'QUEUE_FULL', retryAfterSeconds: 7, details: {} });
    expect(error.coded).toBe('QUEUE_FULL: The queue holds 1 tasks; try again later');
  });
});
