/**
 * Whether a broker program (mosquitto, nats-server, redis-server) is on PATH, without vitest, so
 * benchmarks can use the same starters (support/broker-programs.ts). Suites skip on it through
 * support/binaries.ts.
 */
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

export function missingText(binaries: readonly string[]): string {
  return binaries
    .filter((binary) => !installed(binary))
    .map((binary) => `${binary} not found on PATH; ${HOW[binary] ?? 'install it'}`)
    .join('; ');
}

/** In a fixture's start(): fail at once, naming the binary, instead of waiting for a port. */
export function assertInstalled(binary: string): void {
  if (!installed(binary)) {
    throw new Error(
      `${missingText([binary])}${process.env.CI ? ': CI never skips a suite for a missing broker' : ''}`,
    );
  }
}
