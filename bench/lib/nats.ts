/**
 * The benchmarks' nats-server (test/support/broker-programs.ts: free client and MQTT ports,
 * loopback, a generated config and a JetStream store directory of its own, removed on stop).
 * The MQTT gateway keeps sessions, retained messages and QoS 1 deliveries in JetStream; its
 * `max_ack_pending` (QoS 1 messages sent to one session and not yet acknowledged) is raised from
 * the default of 1,024 to 20,000, the most nats-server 2.9 grants (above it every subscription is
 * refused): a controller of 10,000 registers receives some 40,000 QoS 1 messages within seconds
 * (docs/benchmarks.md, "Fan-out at scale"). BENCH_NATS_LOG=<file> keeps nats-server's own log,
 * to see why it dropped or refused clients.
 */
import { type RunningProgramBroker, startNatsServer } from '../../test/support/broker-programs.ts';
import { installed } from '../../test/support/installed.ts';

export const natsInstalled = (): boolean => installed('nats-server');

export function startBenchNats(): Promise<RunningProgramBroker> {
  const log = process.env.BENCH_NATS_LOG;
  return startNatsServer({
    mqtt: ['max_ack_pending: 20000'],
    config: log ? [`log_file: ${JSON.stringify(log)}`] : [],
  });
}
