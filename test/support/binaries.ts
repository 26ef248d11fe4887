/**
 * Suites that need a broker binary (mosquitto, nats-server, redis-server): outside CI a machine
 * without it skips them with a one-line reason (README, "Development": what `npm test` needs and
 * how to get it); with CI=true they never skip, and a missing binary fails at once, naming it.
 */
import { it } from 'vitest';
import { missingText } from './installed.ts';

/** Why a suite needing `binaries` is skipped here; undefined when it runs (always in CI). */
export function skipReason(binaries: readonly string[]): string | undefined {
  if (process.env.CI) return undefined;
  const text = missingText(binaries);
  if (!text) return undefined;
  return text;
}

const announced = new Set<string>();

/** True when the suite should skip; says so once per suite on stderr, on one line. */
export function skipWithout(binaries: readonly string[], suite: string): boolean {
  const reason = skipReason(binaries);
  if (reason && !announced.has(suite)) {
    announced.add(suite);
    process.stderr.write(`skipping "${suite}": ${reason}\n`);
  }
  return reason !== undefined;
}

/**
 * First thing in a describe body: when the suite must skip (outside CI, a binary missing), it
 * registers one skipped test whose name is the reason, says it on stderr, and answers true: the
 * body then returns before its hooks.
 */
export function skipSuite(binaries: readonly string[], suite: string): boolean {
  if (!skipWithout(binaries, suite)) return false;
  it.skip(`skipped: ${skipReason(binaries)}`, () => {});
  return true;
}
