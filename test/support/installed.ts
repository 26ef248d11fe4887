/**
 * Whether a broker program (mosquitto, nats-server, redis-server) is on PATH, without vitest, so
 * benchmarks can use the same starters (support/broker-programs.ts). Suites skip on it through
 * support/binaries.ts.
 */
import { execFileSync } from 'node:child_process';
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

/**
 * What to run for `binary`: NATS_SERVER_BIN, when set, names the nats-server tests and benchmarks
 * start (a path, or a name on PATH), so a newer build than the distribution's can be measured and
 * tested without replacing it (scripts/fetch-nats-server.sh fetches one; docs/benchmarks.md).
 */
export function program(binary: string): string {
  const chosen = binary === 'nats-server' ? process.env.NATS_SERVER_BIN : undefined;
  return chosen !== undefined && chosen !== '' ? chosen : binary;
}

const natsVersions = new Map<string, string>();

/** `nats-server --version` of the binary in use (`v2.15.1`), for the benchmarks' notes. */
export function natsServerVersion(): string {
  const bin = program('nats-server');
  let version = natsVersions.get(bin);
  if (version === undefined) {
    try {
      const out = execFileSync(bin, ['--version'], { encoding: 'utf8', timeout: 10_000 });
      version = /v\d+\.\d+\.\d+\S*/.exec(out)?.[0] ?? out.trim();
    } catch (error) {
      version = `unknown (${(error as Error).message.split('\n')[0]})`;
    }
    natsVersions.set(bin, version);
  }
  return version;
}

/** On PATH, or NATS_SERVER_BIN's program (Debian puts mosquitto and nats-server in /usr/sbin: add it to PATH; .ci/run does). */
export function installed(binary: string): boolean {
  const path = program(binary);
  let found = known.get(path);
  if (found === undefined) {
    found = programProblem(path) === undefined;
    known.set(path, found);
  }
  return found;
}

export function missingText(binaries: readonly string[]): string {
  return binaries
    .filter((binary) => !installed(binary))
    .map((binary) =>
      program(binary) === binary
        ? `${binary} not found on PATH; ${HOW[binary] ?? 'install it'}`
        : `${programProblem(program(binary))} (NATS_SERVER_BIN)`,
    )
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
