/**
 * The benchmarks' nats-server (test/support/broker-programs.ts: free client and MQTT ports,
 * loopback, a generated config and a JetStream store directory of its own, removed on stop).
 * The MQTT gateway keeps sessions, retained messages and QoS 1 deliveries in JetStream. Its
 * `max_ack_pending` stays at the default (1,024 unacknowledged QoS 1 messages per session):
 * raised to 65,535 every subscription is refused, and at 20,000 the registers' subscriptions were
 * granted in the first runs and refused in later ones (the bridge then retries them for ever;
 * docs/benchmarks.md, "Fan-out at scale"). BENCH_NATS_LOG=<file> keeps nats-server's own log,
 * to see why it dropped or refused clients.
 */
import { type RunningProgramBroker, startNatsServer } from '../../test/support/broker-programs.ts';
import { installed } from '../../test/support/installed.ts';

export const natsInstalled = (): boolean => installed('nats-server');

export function startBenchNats(): Promise<RunningProgramBroker> {
  const log = process.env.BENCH_NATS_LOG;
  return startNatsServer({ config: log ? [`log_file: ${JSON.stringify(log)}`] : [] });
}
