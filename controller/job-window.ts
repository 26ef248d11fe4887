/**
 * When a job may send (contract 7.4; docs/controller.md, "Start at and windows"): not before its
 * startAt, and with a window only while one is open. A window opens at every match of its cron
 * (five fields, in its IANA time zone, croner) and stays open durationMs. Pure apart from croner.
 */
import { Cron } from 'croner';
import type { JobStatus, JobWindow } from './job-types.ts';

/** The cron of `expression` in `timezone`, never started (we only ask it for times). */
export function cronOf(expression: string, timezone: string): Cron {
  return new Cron(expression, { timezone, paused: true, mode: '5-part' });
}

/** A problem with a cron expression or time zone, for a 400; undefined when both are usable. */
export function cronProblem(expression: string, timezone: string): string | undefined {
  try {
    new Intl.DateTimeFormat('en', { timeZone: timezone });
  } catch {
    return `unknown time zone '${timezone}' (an IANA name such as Europe/Berlin)`;
  }
  try {
    const cron = cronOf(expression, timezone);
    if (cron.nextRun() === null) return `cron '${expression}' never matches`;
  } catch (error) {
    return `cron '${expression}': ${(error as Error).message}`;
  }
  return undefined;
}

/** Whether a window is open at `now`, and when that changes (epoch ms). */
export function windowAt(window: JobWindow, now: number): { open: boolean; changeAt: number } {
  // The first opening after (now - durationMs): at or before now, the window it opens is open.
  const opening = cronOf(window.cron, window.timezone).nextRun(new Date(now - window.durationMs));
  if (opening === null) return { open: false, changeAt: Number.POSITIVE_INFINITY };
  const at = opening.getTime();
  if (at <= now) return { open: true, changeAt: at + window.durationMs };
  return { open: false, changeAt: at };
}

/** When a job first sends: its startAt (or `now`), moved to the next window opening if closed. */
export function firstStart(startAt: number | undefined, window: JobWindow | undefined, now: number): number {
  const from = Math.max(now, startAt ?? now);
  if (!window) return from;
  const state = windowAt(window, from);
  return state.open ? from : state.changeAt;
}

/**
 * The status a job not paused and not ended has at `now`, and when it next changes (epoch ms,
 * Infinity: never by itself).
 */
export function timedStatus(
  job: { startAt?: string | undefined; window?: JobWindow | undefined },
  now: number,
): { status: JobStatus; changeAt: number } {
  const startAt = job.startAt !== undefined ? Date.parse(job.startAt) : undefined;
  if (startAt !== undefined && startAt > now) return { status: 'SCHEDULED', changeAt: startAt };
  if (!job.window) return { status: 'IN_PROGRESS', changeAt: Number.POSITIVE_INFINITY };
  const state = windowAt(job.window, now);
  return { status: state.open ? 'IN_PROGRESS' : 'WAITING_FOR_WINDOW', changeAt: state.changeAt };
}
