/**
 * DueTimers (controller/due-timers.ts): the submissions of a job share one deadline timer and one
 * recheck timer per millisecond they fall due, instead of two timers per register. vitest's fake
 * clock (setTimeout and Date) moves the time.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { DueTimers } from '../../controller/due-timers.ts';

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

describe('DueTimers', () => {
  it('items due at the same millisecond share one timer and each fires once', () => {
    const fired: string[] = [];
    const timers = new DueTimers<string>((item) => fired.push(item));
    const due = Date.now() + 20;
    for (const item of ['reg1', 'reg2', 'reg3']) timers.add(item, due);
    expect(timers.size).toBe(1);
    expect(vi.getTimerCount()).toBe(1);
    vi.advanceTimersByTime(19);
    expect(fired).toEqual([]);
    vi.advanceTimersByTime(1);
    expect(fired).toEqual(['reg1', 'reg2', 'reg3']);
    expect(timers.size).toBe(0);
  });

  it('a deleted item never fires; the last one deleted clears the timer', () => {
    const fired: string[] = [];
    const timers = new DueTimers<string>((item) => fired.push(item));
    const due = Date.now() + 10;
    timers.add('gone', due);
    timers.add('kept', due);
    timers.add('also gone', due + 5);
    timers.delete('gone', due);
    timers.delete('also gone', due + 5);
    expect(timers.size).toBe(1);
    expect(vi.getTimerCount()).toBe(1);
    vi.advanceTimersByTime(40);
    expect(fired).toEqual(['kept']);
    expect(timers.size).toBe(0);
  });

  it('an item deleted while its slot fires (its submission ended meanwhile) does not fire', () => {
    const fired: string[] = [];
    const due = Date.now() + 5;
    const timers: DueTimers<string> = new DueTimers<string>((item) => {
      fired.push(item);
      timers.delete('second', due); // as finish() does for a submission ended meanwhile
    });
    timers.add('first', due);
    timers.add('second', due);
    vi.advanceTimersByTime(5);
    expect(fired).toEqual(['first']);
    expect(timers.size).toBe(0);
  });

  it('clear() cancels everything', () => {
    const fired: string[] = [];
    const timers = new DueTimers<string>((item) => fired.push(item));
    timers.add('a', Date.now() + 5);
    timers.add('b', Date.now() + 6);
    timers.clear();
    expect(timers.size).toBe(0);
    expect(vi.getTimerCount()).toBe(0);
    vi.advanceTimersByTime(30);
    expect(fired).toEqual([]);
  });
});
