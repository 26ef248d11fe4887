/**
 * The REST controller of the fan-out comparison: the vendor flow with the TypeScript client,
 * once per register: `vendorScript`, then `waitForTask` polling every 100 ms (no long poll).
 */
import { DeviceClient } from '../../src/client/index.ts';
import { BENCH_PASSWORD, BENCH_USER } from './device.ts';

export class RestFanout {
  private readonly clients: DeviceClient[];

  constructor(ports: number[]) {
    this.clients = ports.map(
      (port) => new DeviceClient('127.0.0.1', port, BENCH_USER, BENCH_PASSWORD, { connections: 1 }),
    );
  }

  /** Tokens first, like an MQTT controller that is connected before it sends. */
  async authenticate(): Promise<void> {
    await Promise.all(this.clients.map((c) => c.authenticate()));
  }

  /** Resolves with the wall time until the last register's task ended, and how many FINISHED. */
  async run(script: string, timeoutMs: number): Promise<{ ms: number; finished: number }> {
    const started = performance.now();
    const reports = await Promise.allSettled(
      this.clients.map(async (client) => {
        const id = await client.vendorScript(script);
        return await client.waitForTask(id, { intervalMs: 100, longPoll: false, timeoutMs });
      }),
    );
    const ms = performance.now() - started;
    return { ms, finished: reports.filter((r) => r.status === 'fulfilled').length };
  }

  async close(): Promise<void> {
    await Promise.all(this.clients.map((c) => c.close()));
  }
}
