/**
 * DueTimers (controller/due-timers.ts): the submissions of a job share one deadline timer and one
 * recheck timer per millisecond they fall due, instead of two timers per register.
 */
import { describe, expect, it } from 'vitest';
import { DueTimers } from '../../controller/due-timers.ts';

describe('DueTimers', () => {
  it('items due at the same millisecond share one timer and each fires once', async () => {
    const fired: string[] = [];
    let allFired: () => void = () => undefined;
    const done = new Promise<void>((resolve) => {
      allFired = resolve;
    });
    const timers = new DueTimers<string>((item) => {
      fired.push(item);
      if (fired.length === 3) allFired();
    });
    const due = Date.now() + 20;
    for (const item of ['reg1', 'reg2', 'reg3']) timers.add(item, due);
    expect(timers.size).toBe(1);
    await done;
    expect(fired).toEqual(['reg1', 'reg2', 'reg3']);
    expect(timers.size).toBe(0);
  });

  it('a deleted item never fires; the last one deleted clears the timer', async () => {
    const fired: string[] = [];
    const timers = new DueTimers<string>((item) => fired.push(item));
    const due = Date.now() + 10;
    timers.add('gone', due);
    timers.add('kept', due);
    timers.add('also gone', due + 5);
    timers.delete('gone', due);
    timers.delete('also gone', due + 5);
    expect(timers.size).toBe(1);
    // A later timer of the test's own: by then the shared one has fired.
    await new Promise((resolve) => setTimeout(resolve, 40));
    expect(fired).toEqual(['kept']);
    expect(timers.size).toBe(0);
  });

  it('an item deleted while its slot fires (its submission ended meanwhile) does not fire', async () => {
    const fired: string[] = [];
    const due = Date.now() + 5;
    const timers: DueTimers<string> = new DueTimers<string>((item) => {
      fired.push(item);
      timers.delete('second', due); // as finish() does for a submission ended meanwhile
    });
    timers.add('first', due);
    timers.add('second', due);
    await new Promise((resolve) => setTimeout(resolve, 30));
    expect(fired).toEqual(['first']);
    expect(timers.size).toBe(0);
  });

  it('clear() cancels everything', async () => {
    const fired: string[] = [];
    const timers = new DueTimers<string>((item) => fired.push(item));
    timers.add('a', Date.now() + 5);
    timers.add('b', Date.now() + 6);
    timers.clear();
    expect(timers.size).toBe(0);
    await new Promise((resolve) => setTimeout(resolve, 30));
    expect(fired).toEqual([]);
  });
});
