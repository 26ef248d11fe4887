/**
 * Task ids: positive integers below 2^53, strictly increasing, never reused, not even across a
 * restart (docs/api.md). Nothing is persisted, so the counter is seeded from the clock in
 * microseconds: a restarted device starts above every id it could have issued before, unless it
 * issued more than a million ids a second. 2^53 microseconds after the epoch is the year 2255.
 */
let lastIssuedInProcess = 0;

function nowMicros(): number {
  return Math.floor((performance.timeOrigin + performance.now()) * 1000);
}

export class IdSource {
  private last: number;

  constructor(seed: number = nowMicros()) {
    // Several devices in one process (tests, the demo) still never share or reorder ids.
    this.last = Math.max(seed, lastIssuedInProcess);
  }

  next(): number {
    this.last += 1;
    if (this.last >= Number.MAX_SAFE_INTEGER) throw new Error('task id space exhausted');
    lastIssuedInProcess = Math.max(lastIssuedInProcess, this.last);
    return this.last;
  }

  get lastIssued(): number {
    return this.last;
  }
}
