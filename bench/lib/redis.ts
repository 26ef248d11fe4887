/** A private redis-server for one scenario: free port, loopback, no persistence. */
import { existsSync } from 'node:fs';
import { freePort } from './ports.ts';
import { startProgram, terminate, waitForPort } from './proc.ts';

export interface RunningRedis {
  port: number;
  url: string;
  stop(): Promise<void>;
}

export async function startRedis(): Promise<RunningRedis> {
  const binary =
    ['/usr/bin/redis-server', '/usr/local/bin/redis-server'].find((c) => existsSync(c)) ?? 'redis-server';
  const port = await freePort();
  const { child, output } = startProgram(binary, [
    '--port',
    String(port),
    '--bind',
    '127.0.0.1',
    '--save',
    '',
    '--appendonly',
    'no',
    '--protected-mode',
    'no',
  ]);
  try {
    await waitForPort(port, '127.0.0.1', 5000);
  } catch (error) {
    await terminate(child, 500);
    throw new Error(`redis-server did not start: ${(error as Error).message}\n${output()}`);
  }
  return {
    port,
    url: `redis://127.0.0.1:${port}`,
    async stop() {
      await terminate(child, 2000);
    },
  };
}
