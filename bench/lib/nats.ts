/**
 * The benchmarks' nats-server (test/support/broker-programs.ts: free client, MQTT and monitoring
 * ports, loopback, a generated config and a JetStream store directory of its own, removed on
 * stop). The MQTT gateway keeps sessions, retained messages and QoS 1 deliveries in JetStream,
 * and every QoS 1 subscription of a persistent session is a durable JetStream consumer.
 * `max_ack_pending` stays at the default (1,024 unacknowledged QoS 1 messages per session):
 * raised to 65,535 every subscription is refused, and at 20,000 the registers' subscriptions were
 * granted in the first runs and refused in later ones (the bridge then retries them for ever;
 * docs/decisions/which-nats-server.md).
 * The bench tunes it as docs/topology.md ("nats-server at scale") describes, like the bench's
 * mosquitto: `$MQTT_msgs` created beforehand with limits retention, max age 1 h, in memory, and
 * `mqtt.consumer_memory_storage`. With nats-server's own defaults 2,000 registers got no script
 * within 60 s and 10,000 never finished subscribing. BENCH_NATS_PLAIN=1 runs those defaults.
 * NATS_SERVER_BIN=<path> runs another nats-server than the one on PATH (scripts/fetch-nats-server.sh
 * fetches Debian trixie's 2.10); the notes name the version in use.
 * Settings for trials, from the environment (each replaces the bench's own for its part):
 * - BENCH_NATS_MQTT: extra settings of the `mqtt { }` block, separated by `;`
 *   (`consumer_memory_storage: true; stream_replicas: 1`);
 * - BENCH_NATS_JS: extra settings of the `jetstream { }` block (`max_memory_store: 4G`);
 * - BENCH_NATS_DIR: where the store directory goes (`/dev/shm`: a tmpfs; default the system's
 *   temporary directory);
 * - BENCH_NATS_MSGS=limits:<max age s>:<file|memory>: the gateway's `$MQTT_msgs` stream created
 *   beforehand with limits retention (test/support/nats-api.ts) instead of nats-server's interest
 *   retention, whose cost grows with the number of consumers for every QoS 1 message;
 * - BENCH_NATS_CONFIG: extra top-level lines (`prof_port: 6061`: Go's pprof over HTTP, to see
 *   where nats-server's CPU goes, read with Go's pprof);
 * - BENCH_NATS_LOG=<file> keeps nats-server's own log, to see why it dropped or refused clients.
 */
import { type RunningProgramBroker, startNatsServer } from '../../test/support/broker-programs.ts';
import { installed, natsServerVersion, program } from '../../test/support/installed.ts';
import { createMqttMessageStream } from '../../test/support/nats-api.ts';

/** nats-server on PATH, or the program NATS_SERVER_BIN names (test/support/installed.ts). */
export const natsInstalled = (): boolean => installed('nats-server');

const list = (value: string | undefined): string[] =>
  (value ?? '')
    .split(';')
    .map((s) => s.trim())
    .filter((s) => s !== '');

const plain = (): boolean => process.env.BENCH_NATS_PLAIN === '1';
const mqttSettings = (): string[] =>
  process.env.BENCH_NATS_MQTT !== undefined || plain()
    ? list(process.env.BENCH_NATS_MQTT)
    : ['consumer_memory_storage: true'];
const messagesSetting = (): string | undefined =>
  process.env.BENCH_NATS_MSGS ?? (plain() ? undefined : 'limits:3600:memory');

/** The settings in use, and the server's version (NATS_SERVER_BIN picks another build), for the notes. */
export function benchNatsSettings(): string {
  const bin = program('nats-server');
  const server = `${natsServerVersion()}${bin === 'nats-server' ? '' : ` (${bin})`}`;
  return `${server}, ${benchNatsTuning()}`;
}

function benchNatsTuning(): string {
  const msgs = messagesSetting();
  const parts = [
    ...mqttSettings().map((s) => `mqtt.${s}`),
    ...consumerLimitSetting(natsServerVersion()).map(() => 'jetstream.limits.default_max_consumers: -1'),
    ...list(process.env.BENCH_NATS_JS).map((s) => `jetstream.${s}`),
    ...(process.env.BENCH_NATS_DIR ? [`store in ${process.env.BENCH_NATS_DIR}`] : []),
    ...(msgs ? [`$MQTT_msgs ${msgs}`] : []),
  ];
  return parts.length === 0 ? 'defaults' : parts.join(', ');
}

/** `limits:<max age s>:<file|memory>` parsed; a clear error for anything else. */
function messageStream(value: string): { maxAgeSeconds: number; storage: 'file' | 'memory' } {
  const [kind, age, storage = 'file'] = value.split(':');
  const maxAgeSeconds = Number(age);
  if (kind !== 'limits' || !(maxAgeSeconds > 0) || (storage !== 'file' && storage !== 'memory'))
    throw new Error(
      `BENCH_NATS_MSGS: expected limits:<max age s>:<file|memory>, got ${JSON.stringify(value)}`,
    );
  return { maxAgeSeconds, storage };
}

/**
 * nats-server 2.15 caps each stream at 1,000 consumers unless told otherwise
 * (`jetstream.limits.default_max_consumers`, 0 meaning 1,000; earlier versions refuse the key).
 * Every QoS 1 subscription of an MQTT session is a consumer of `$MQTT_msgs` (4 per register), so
 * the 251st register's subscriptions are refused: the limit is lifted for every run, tuned or
 * plain, as docs/topology.md tells a store to.
 */
export function consumerLimitSetting(version: string): string[] {
  const [major = 0, minor = 0] = (/^v?(\d+)\.(\d+)/.exec(version) ?? []).slice(1).map(Number);
  return major > 2 || (major === 2 && minor >= 15) ? ['limits { default_max_consumers: -1 }'] : [];
}

export async function startBenchNats(): Promise<RunningProgramBroker> {
  const log = process.env.BENCH_NATS_LOG;
  const setting = messagesSetting();
  const msgs = setting ? messageStream(setting) : undefined;
  const nats = await startNatsServer({
    mqtt: mqttSettings(),
    jetstream: [...consumerLimitSetting(natsServerVersion()), ...list(process.env.BENCH_NATS_JS)],
    ...(process.env.BENCH_NATS_DIR && { parentDir: process.env.BENCH_NATS_DIR }),
    monitor: true,
    config: [...list(process.env.BENCH_NATS_CONFIG), ...(log ? [`log_file: ${JSON.stringify(log)}`] : [])],
  });
  try {
    if (msgs) await createMqttMessageStream(nats.natsPort!, msgs);
  } catch (error) {
    await nats.stop();
    throw error;
  }
  return nats;
}

/** What nats-server's `/jsz` says: JetStream streams, consumers, messages, memory and store bytes. */
export interface JetStreamCounts {
  streams: number;
  consumers: number;
  messages: number;
  memory: number;
  storage: number;
}

export async function jetStreamCounts(monitorPort: number): Promise<JetStreamCounts> {
  const response = await fetch(`http://127.0.0.1:${monitorPort}/jsz`, {
    signal: AbortSignal.timeout(10_000),
  });
  const body = (await response.json()) as Partial<JetStreamCounts>;
  return {
    streams: body.streams ?? 0,
    consumers: body.consumers ?? 0,
    messages: body.messages ?? 0,
    memory: body.memory ?? 0,
    storage: body.storage ?? 0,
  };
}
