/**
 * The harness every scenario file runs in (each scenario is its own child process of
 * bench/run.ts): figures and logs go to the parent over IPC, clean-ups run in reverse order
 * whatever happens, and a crash is reported as such instead of hanging. Run alone
 * (`node bin/run-ts.js bench/scenarios/<name>.ts --quick`) it prints its figures as JSON lines.
 */
import { killAllChildren } from '../../test/support/processes.ts';
import type { Figure, ScenarioMessage } from './types.ts';

export interface ScenarioContext {
  readonly quick: boolean;
  readonly args: readonly string[];
  report(figure: Omit<Figure, 'scenario'>): void;
  log(text: string): void;
  /** Registers a clean-up; they run last-in first-out when the scenario ends, even on failure. */
  defer(cleanup: () => Promise<void> | void): void;
}

export class SkipScenario extends Error {}

function send(message: ScenarioMessage): void {
  if (process.send) process.send(message);
  else if (message.type === 'log') console.error(message.text);
  else console.log(JSON.stringify(message));
}

export function runScenario(name: string, body: (ctx: ScenarioContext) => Promise<void>): void {
  const args = process.argv.slice(2);
  const cleanups: Array<() => Promise<void> | void> = [];
  let reported = 0;
  const ctx: ScenarioContext = {
    quick: args.includes('--quick'),
    args,
    report(figure) {
      reported += 1;
      send({ type: 'figure', figure: { scenario: name, ...figure } });
    },
    log(text) {
      send({ type: 'log', text: `[${name}] ${text}` });
    },
    defer(cleanup) {
      cleanups.push(cleanup);
    },
  };
  const cleanUp = async (): Promise<void> => {
    while (cleanups.length > 0) {
      const cleanup = cleanups.pop()!;
      try {
        await Promise.race([cleanup(), new Promise((r) => setTimeout(r, 10_000).unref())]);
      } catch (error) {
        ctx.log(`clean-up failed: ${(error as Error).message}`);
      }
    }
    killAllChildren();
  };
  // The parent kills the whole process group on its time-out; SIGTERM first lets us clean up.
  process.once('SIGTERM', () => {
    void cleanUp().finally(() => process.exit(143));
  });
  // Orphaned (the run was killed): clean up rather than keep brokers running.
  process.once('disconnect', () => {
    void cleanUp().finally(() => process.exit(1));
  });
  const finish = (message: ScenarioMessage, code: number): void => {
    send(message);
    // Give the IPC channel a moment to flush before leaving.
    setTimeout(() => process.exit(code), 50);
  };
  void (async () => {
    try {
      await body(ctx);
      await cleanUp();
      if (reported === 0) finish({ type: 'error', message: 'scenario produced no figure' }, 1);
      else finish({ type: 'done' }, 0);
    } catch (error) {
      await cleanUp();
      if (error instanceof SkipScenario) finish({ type: 'skipped', reason: error.message }, 0);
      else finish({ type: 'error', message: (error as Error).stack ?? String(error) }, 1);
    }
  })();
}

/** Rejects after `ms` with a message naming what took too long, so no step can hang a scenario. */
export async function withTimeout<T>(what: string, ms: number, work: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      work,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`${what}: no result within ${ms} ms`)), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Wall-clock milliseconds with sub-millisecond precision, comparable between processes of one host. */
export function nowMs(): number {
  return performance.timeOrigin + performance.now();
}

export function round(value: number, digits = 2): number {
  const f = 10 ** digits;
  return Math.round(value * f) / f;
}
