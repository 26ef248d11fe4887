/**
 * A clock the test moves (controller/rollout.ts PacingClock): starts at real time, so ISO times
 * the test writes (startAt, a schedule's cron) line up with it, and runs each timer due when the
 * test advances it, in time order, without waiting.
 */
import type { PacingClock } from '../../controller/rollout.ts';

export class ManualClock implements PacingClock {
  time: number;
  private readonly timers = new Map<number, { at: number; callback: () => void }>();
  private next = 1;

  constructor(start = Date.now()) {
    this.time = start;
  }

  now(): number {
    return this.time;
  }

  setTimeout(callback: () => void, ms: number): unknown {
    const id = this.next++;
    this.timers.set(id, { at: this.time + Math.max(0, ms), callback });
    return id;
  }

  clearTimeout(handle: unknown): void {
    this.timers.delete(handle as number);
  }

  /** Epoch ms of the timers set, soonest first. */
  dueTimes(): number[] {
    return [...this.timers.values()].map((t) => t.at).sort((a, b) => a - b);
  }

  /** Moves to `ms` later, firing what falls due on the way (timers a callback sets included). */
  advance(ms: number): void {
    this.advanceTo(this.time + ms);
  }

  advanceTo(target: number): void {
    for (let fired = 0; fired < 100_000; fired++) {
      let soonest: [number, { at: number; callback: () => void }] | undefined;
      for (const entry of this.timers) if (!soonest || entry[1].at < soonest[1].at) soonest = entry;
      if (!soonest || soonest[1].at > target) break;
      this.timers.delete(soonest[0]);
      this.time = Math.max(this.time, soonest[1].at);
      soonest[1].callback();
    }
    this.time = Math.max(this.time, target);
  }
}
