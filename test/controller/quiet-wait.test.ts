/**
 * QuietWait (controller/broker-connection.ts): resolves once messages stop coming; a second wait
 * (a second reconnect) ends the first at once instead of leaving it hanging on a stolen timer.
 */
import { afterEach, beforeEach, expect, it, vi } from 'vitest';
import { QuietWait } from '../../controller/broker-connection.ts';

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

it('resolves after quietMs without activity, and no later than maxMs', async () => {
  const quiet = new QuietWait();
  let last = Date.now();
  let done = false;
  void quiet
    .wait(() => last, 100, 1_000)
    .then(() => {
      done = true;
    });
  await vi.advanceTimersByTimeAsync(60);
  last = Date.now();
  await vi.advanceTimersByTimeAsync(60);
  expect(done).toBe(false);
  await vi.advanceTimersByTimeAsync(60);
  expect(done).toBe(true);
});

it('a second wait resolves the first at once and keeps its own timer', async () => {
  const quiet = new QuietWait();
  const ended: string[] = [];
  void quiet.wait(() => Date.now(), 100, 10_000).then(() => ended.push('first'));
  await vi.advanceTimersByTimeAsync(50);
  void quiet.wait(() => 0, 100, 10_000).then(() => ended.push('second'));
  await vi.advanceTimersByTimeAsync(0);
  expect(ended).toEqual(['first']);
  await vi.advanceTimersByTimeAsync(100);
  expect(ended).toEqual(['first', 'second']);
  expect(vi.getTimerCount()).toBe(0);
});
