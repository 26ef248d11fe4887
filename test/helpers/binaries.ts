/**
 * Suites that need a broker binary (mosquitto, nats-server, redis-server): outside CI a machine
 * without it skips them with a one-line reason (README, "Development": what `npm test` needs and
 * how to get it); with CI=true they never skip, and a missing binary fails at once, naming it.
 */
import { it } from 'vitest';
import { programProblem } from '../../src/executors/program-check.ts';

const HOW: Record<string, string> = {
  mosquitto: 'apt-get install mosquitto, or brew install mosquitto',
  'nats-server': 'apt-get install nats-server, or brew install nats-server',
  'redis-server': 'apt-get install redis-server, or brew install redis',
  mosquitto_sub: 'apt-get install mosquitto-clients, or brew install mosquitto',
  mosquitto_pub: 'apt-get install mosquitto-clients, or brew install mosquitto',
  curl: 'apt-get install curl, or brew install curl',
};

const known = new Map<string, boolean>();

/** On PATH (Debian puts mosquitto and nats-server in /usr/sbin: add it to PATH; .ci/run does). */
export function installed(binary: string): boolean {
  let found = known.get(binary);
  if (found === undefined) {
    found = programProblem(binary) === undefined;
    known.set(binary, found);
  }
  return found;
}

function missingText(binaries: readonly string[]): string {
  return binaries
    .filter((binary) => !installed(binary))
    .map((binary) => `${binary} not found on PATH; ${HOW[binary] ?? 'install it'}`)
    .join('; ');
}

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

/** In a fixture's start(): fail at once, naming the binary, instead of waiting for a port. */
export function assertInstalled(binary: string): void {
  if (!installed(binary)) {
    throw new Error(
      `${missingText([binary])}${process.env.CI ? ': CI never skips a suite for a missing broker' : ''}`,
    );
  }
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
