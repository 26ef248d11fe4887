/** Starting devices for the benchmarks: silent logs, loopback, free ports. */

import { type RunningDevice, startDevice } from '../../cli/device.ts';
import { applyHeapGrowth } from '../../cli/heap-growth.ts';
import { parseServeConfig, type ServeConfigInput } from '../../cli/serve-config.ts';
import { createLogger, type Logger } from '../../src/logger.ts';
import { silent } from '../../test/support/loggers.ts';

export const BENCH_USER = 'bench';
export const BENCH_PASSWORD = 'bench-password-1';

/**
 * A logger that writes nothing but counts messages by text, so a scenario can see events such as
 * MQTT reconnects without paying for log output.
 */
export function countingLogger(counts: Map<string, number>): Logger {
  return createLogger({
    level: 'info',
    hooks: {
      logMethod(args) {
        const message = args.find((a): a is string => typeof a === 'string') ?? '';
        counts.set(message, (counts.get(message) ?? 0) + 1);
      },
    },
  });
}

export async function startBenchDevice(
  input: ServeConfigInput,
  logger: Logger = silent,
): Promise<RunningDevice> {
  const config = parseServeConfig({
    port: 0,
    host: '127.0.0.1',
    brokerHost: '127.0.0.1',
    users: [`${BENCH_USER}:${BENCH_PASSWORD}`],
    logLevel: 'silent',
    ...input,
  });
  // As `regbridge serve` does (cli/serve-command.ts): the benchmarks measure the device it runs.
  applyHeapGrowth(config.heapGrowth);
  return await startDevice(config, { logger });
}

/** A bearer token from POST /api/authenticate. */
export async function fetchToken(port: number): Promise<string> {
  const response = await fetch(`http://127.0.0.1:${port}/api/authenticate`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ userName: BENCH_USER, password: BENCH_PASSWORD }),
  });
  if (response.status !== 200)
    throw new Error(`authenticate answered ${response.status}: ${await response.text()}`);
  const body = (await response.json()) as { token: string };
  return body.token;
}
