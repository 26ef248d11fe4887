/** A clock for components that take a PacingClock: time moves only when the test says. */
import type { PacingClock } from '../../controller/rollout.ts';

/** A clock the test moves; timers fire when it passes their time. */
export class TestClock implements PacingClock {
  timers = new Map<number, { at: number; callback: () => void }>();
  private nextId = 1;
  constructor(public time: number) {}
  now(): number {
    return this.time;
  }
  setTimeout(callback: () => void, ms: number): unknown {
    const id = this.nextId++;
    this.timers.set(id, { at: this.time + ms, callback });
    return id;
  }
  clearTimeout(handle: unknown): void {
    this.timers.delete(handle as number);
  }
  advance(ms: number): void {
    this.time += ms;
    for (const [id, timer] of [...this.timers]) {
      if (timer.at <= this.time) {
        this.timers.delete(id);
        timer.callback();
      }
    }
  }
}
