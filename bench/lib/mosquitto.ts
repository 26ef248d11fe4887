/**
 * A private mosquitto for one scenario: free port, loopback only, generated config, no
 * persistence. The queue limits are raised above mosquitto's defaults (20 in flight, 1000 queued
 * per client) because a controller of 500 registers receives 1,500 QoS 1 status messages at once,
 * and with the defaults mosquitto drops the excess; an operator would set these for a store too.
 */
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './ports.ts';
import { startProgram, terminate, waitForPort } from './proc.ts';

export interface RunningMosquitto {
  port: number;
  url: string;
  pid: number | undefined;
  stop(): Promise<void>;
}

const CANDIDATES = ['/usr/sbin/mosquitto', '/usr/local/sbin/mosquitto', '/usr/bin/mosquitto', 'mosquitto'];

export async function startMosquitto(): Promise<RunningMosquitto> {
  const binary = CANDIDATES.find((c) => c === 'mosquitto' || existsSync(c))!;
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'regbridge-bench-mosquitto-'));
  const config = join(dir, 'mosquitto.conf');
  writeFileSync(
    config,
    [
      `listener ${port} 127.0.0.1`,
      'allow_anonymous true',
      'persistence false',
      // BENCH_MOSQUITTO_DEFAULTS=1 keeps mosquitto's own limits, to see what they cost.
      ...(process.env.BENCH_MOSQUITTO_DEFAULTS === '1'
        ? []
        : ['max_inflight_messages 1000', 'max_queued_messages 1000000']),
      'log_dest stderr',
      'log_type error',
      'log_type warning',
      '',
    ].join('\n'),
  );
  const { child, output } = startProgram(binary, ['-c', config]);
  try {
    await waitForPort(port, '127.0.0.1', 5000);
  } catch (error) {
    await terminate(child, 500);
    rmSync(dir, { recursive: true, force: true });
    throw new Error(`mosquitto did not start: ${(error as Error).message}\n${output()}`);
  }
  return {
    port,
    url: `mqtt://127.0.0.1:${port}`,
    pid: child.pid,
    async stop() {
      await terminate(child, 2000);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
