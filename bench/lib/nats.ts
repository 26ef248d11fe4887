/**
 * A private nats-server with its MQTT gateway for one scenario: free client and MQTT ports,
 * loopback only, a generated config and a JetStream store directory of its own (the MQTT gateway
 * keeps sessions, retained messages and QoS 1 deliveries in JetStream streams), removed on stop.
 * `max_ack_pending` (QoS 1 messages sent to one session and not yet acknowledged) is raised from
 * its default of 1,024 to 20,000, the most nats-server 2.9 grants (above it every subscription is
 * refused): a controller of 10,000 registers receives some 40,000 QoS 1 messages within a second
 * (docs/benchmarks.md, "Fan-out at scale").
 */
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './ports.ts';
import { startProgram, terminate, waitForPort } from './proc.ts';

export interface RunningNats {
  port: number;
  url: string;
  pid: number | undefined;
  stop(): Promise<void>;
}

const CANDIDATES = ['/usr/sbin/nats-server', '/usr/local/bin/nats-server', '/usr/bin/nats-server'];

export function natsBinary(): string | undefined {
  return CANDIDATES.find((c) => existsSync(c));
}

export async function startNats(): Promise<RunningNats> {
  const binary = natsBinary() ?? 'nats-server';
  const [clientPort, port] = [await freePort(), await freePort()];
  const dir = mkdtempSync(join(tmpdir(), 'regbridge-bench-nats-'));
  const config = join(dir, 'nats.conf');
  writeFileSync(
    config,
    [
      `server_name: regbridge_bench_${port}`,
      `listen: 127.0.0.1:${clientPort}`,
      `jetstream { store_dir: ${JSON.stringify(join(dir, 'js'))} }`,
      `mqtt { listen: 127.0.0.1:${port}, max_ack_pending: 20000 }`,
      // BENCH_NATS_LOG=<file>: nats-server's own log, to see why it dropped or refused clients.
      ...(process.env.BENCH_NATS_LOG ? [`log_file: ${JSON.stringify(process.env.BENCH_NATS_LOG)}`] : []),
      '',
    ].join('\n'),
  );
  const { child, output } = startProgram(binary, ['-c', config]);
  try {
    await waitForPort(port, '127.0.0.1', 10_000);
  } catch (error) {
    await terminate(child, 500);
    rmSync(dir, { recursive: true, force: true });
    throw new Error(`nats-server did not start: ${(error as Error).message}\n${output()}`);
  }
  return {
    port,
    url: `mqtt://127.0.0.1:${port}`,
    pid: child.pid,
    async stop() {
      await terminate(child, 5000);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
