/**
 * mosquitto and nats-server (with JetStream and its MQTT listener) as child processes on free
 * loopback ports with generated configs in a temporary directory, for tests and benchmarks.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { assertInstalled, program } from './installed.ts';
import { freePort } from './ports.ts';
import { ServerProcess } from './processes.ts';

export interface RunningProgramBroker {
  /** The MQTT port. */
  port: number;
  /** nats-server's monitoring port (`/jsz`, `/healthz`), when asked for. */
  monitorPort?: number;
  /** nats-server's NATS client port (its JetStream API: test/support/nats-api.ts). */
  natsPort?: number;
  url: string;
  pid: number | undefined;
  /** The last few KiB the program printed (for failure messages). */
  output(): string;
  /** Stops the program; resume() starts it again on the same port with the same config. */
  halt(): Promise<void>;
  resume(): Promise<void>;
  stop(): Promise<void>;
}

async function run(
  command: string,
  config: string,
  port: number,
  dir: string,
): Promise<RunningProgramBroker> {
  assertInstalled(command);
  const server = new ServerProcess(program(command), ['-c', config]);
  const resume = async (): Promise<void> => {
    server.start();
    try {
      await server.ready(port);
    } catch (error) {
      await server.stop(500);
      throw error;
    }
  };
  try {
    await resume();
  } catch (error) {
    await rm(dir, { recursive: true, force: true });
    throw error;
  }
  return {
    port,
    url: `mqtt://127.0.0.1:${port}`,
    get pid() {
      return server.pid;
    },
    output: () => server.output(),
    halt: () => server.stop(),
    resume,
    stop: async () => {
      await server.stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** An anonymous mosquitto without persistence; `config` adds lines (queue limits, for one). */
export async function startMosquitto(
  options: { config?: readonly string[] } = {},
): Promise<RunningProgramBroker> {
  const dir = await mkdtemp(join(tmpdir(), 'regbridge-mosquitto-'));
  const port = await freePort();
  const config = join(dir, 'mosquitto.conf');
  await writeFile(
    config,
    [
      `listener ${port} 127.0.0.1`,
      'allow_anonymous true',
      // As docs/broker.md recommends for controllers at QoS 0 (no Nagle delay on statuses).
      'set_tcp_nodelay true',
      'persistence false',
      ...(options.config ?? []),
      'log_dest stderr',
      'log_type error',
      'log_type warning',
      '',
    ].join('\n'),
  );
  return run('mosquitto', config, port, dir);
}

/**
 * A mosquitto running the configuration `config(port)` returns, `port` a free one for its
 * listener: a store broker's mosquitto.conf as `regbridge store-config` generates it. Its errors,
 * warnings and notices (bridge connections) are kept for failure messages.
 */
export async function startMosquittoWith(config: (port: number) => string): Promise<RunningProgramBroker> {
  const dir = await mkdtemp(join(tmpdir(), 'regbridge-mosquitto-'));
  const port = await freePort();
  const file = join(dir, 'mosquitto.conf');
  await writeFile(
    file,
    `${config(port)}\nlog_dest stderr\nlog_type error\nlog_type warning\nlog_type notice\n`,
  );
  return run('mosquitto', file, port, dir);
}

/**
 * A nats-server with JetStream (stored in its temporary directory) and an MQTT listener;
 * `mqtt` adds settings to the `mqtt { }` block (`max_ack_pending: 20000`), `jetstream` to the
 * `jetstream { }` block (`max_memory_store: 1G`), `config` lines to the file. `parentDir` puts
 * the temporary directory (and so the JetStream store) elsewhere than the system's (a tmpfs such
 * as /dev/shm, for the bench); `monitor` opens the monitoring port on loopback.
 */
export async function startNatsServer(
  options: {
    mqtt?: readonly string[];
    jetstream?: readonly string[];
    config?: readonly string[];
    parentDir?: string;
    monitor?: boolean;
  } = {},
): Promise<RunningProgramBroker> {
  const dir = await mkdtemp(join(options.parentDir ?? tmpdir(), 'regbridge-nats-'));
  const [clientPort, mqttPort] = [await freePort(), await freePort()];
  const monitorPort = options.monitor ? await freePort() : undefined;
  const config = join(dir, 'nats.conf');
  const jetstream = [`store_dir: ${JSON.stringify(join(dir, 'js'))}`, ...(options.jetstream ?? [])];
  await writeFile(
    config,
    [
      `server_name: regbridge_test_${mqttPort}`,
      `listen: 127.0.0.1:${clientPort}`,
      ...(monitorPort === undefined ? [] : [`http: 127.0.0.1:${monitorPort}`]),
      `jetstream { ${jetstream.join(', ')} }`,
      `mqtt { ${[`listen: 127.0.0.1:${mqttPort}`, ...(options.mqtt ?? [])].join(', ')} }`,
      ...(options.config ?? []),
      '',
    ].join('\n'),
  );
  const running = await run('nats-server', config, mqttPort, dir);
  return Object.assign(running, { natsPort: clientPort }, monitorPort === undefined ? {} : { monitorPort });
}
