/**
 * Real MQTT brokers for the bridge contract suite, each started on free ports with its own
 * configuration: the embedded store broker (aedes), a mosquitto process, a nats-server with
 * JetStream and its MQTT listener, and two store brokers sharing state through Redis.
 * Adding a broker is one more entry in `brokers`.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { StoreBroker } from '../../broker/store-broker.ts';
import { assertInstalled } from './binaries.ts';
import { startRedisServer } from './redis-server.ts';

export interface Credentials {
  username?: string;
  password?: string;
}

export interface RunningBroker {
  /** Where devices connect (no credentials in it). */
  url: string;
  /** Where controllers and test subscribers connect; another instance for the Redis pair. */
  controllerUrl: string;
  controllerCreds: Credentials;
  /** Credentials of a device user for `deviceId` (created on demand where the broker has users). */
  deviceCreds(deviceId: string): Credentials;
  /** Stops the broker and starts it again on the same port(s); state kept only where the broker persists it. */
  restart?(): Promise<void>;
  /** Stops and later starts it (for "broker down while tasks run"). */
  halt?(): Promise<void>;
  resume?(): Promise<void>;
  stop(): Promise<void>;
  /** Speaks MQTT 5 too (from its fixture): devices use `--mqtt-protocol auto` there, 3.1.1 elsewhere. */
  mqtt5?: boolean;
}

export interface BrokerFixture {
  name: string;
  /** Speaks MQTT 5 too. */
  mqtt5: boolean;
  /** The store broker's ACL refuses retained scripts itself (a device cannot see the flag live in 3.1.1). */
  refusesRetainedScripts: boolean;
  /** Programs it runs; without them the suites using it skip outside CI (helpers/binaries.ts). */
  binaries: readonly string[];
  start(ns: string): Promise<RunningBroker>;
}

/** Silent unless TEST_BROKER_LOG_LEVEL is set (debugging a failing suite). */
const brokerLogger = pino({ level: process.env.TEST_BROKER_LOG_LEVEL ?? 'silent' });

/** A port that was free a moment ago (bind 0, read it, close). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

/** Polls until something accepts TCP connections on the port (no fixed sleep). */
export async function waitForPort(port: number, timeoutMs = 15_000, host = '127.0.0.1'): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const ok = await new Promise<boolean>((resolve) => {
      const socket = net.connect({ port, host });
      socket.once('connect', () => {
        socket.destroy();
        resolve(true);
      });
      socket.once('error', () => resolve(false));
    });
    if (ok) return;
    if (Date.now() > deadline) throw new Error(`nothing listens on ${host}:${port} after ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** A child process with its stderr kept for error messages; stop() kills it and waits. */
class Child {
  private process: ChildProcess | undefined;
  private stderr = '';

  constructor(
    private readonly command: string,
    private readonly args: string[],
  ) {}

  start(): void {
    this.stderr = '';
    const child = spawn(this.command, this.args, { stdio: ['ignore', 'ignore', 'pipe'] });
    child.stderr?.on('data', (chunk: Buffer) => {
      this.stderr = (this.stderr + chunk.toString()).slice(-4000);
    });
    child.on('error', (error) => {
      this.stderr += `\nspawn error: ${error.message}`;
    });
    this.process = child;
  }

  async ready(port: number): Promise<void> {
    try {
      await waitForPort(port);
    } catch (error) {
      throw new Error(`${this.command} did not start: ${(error as Error).message}\n${this.stderr}`);
    }
  }

  async stop(): Promise<void> {
    const child = this.process;
    this.process = undefined;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    await new Promise<void>((resolve) => {
      const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
      child.once('exit', () => {
        clearTimeout(timer);
        resolve();
      });
      child.kill('SIGTERM');
    });
  }
}

const CONTROLLER = { name: 'controller', password: 'controller-secret' };

function storeBroker(port: number, ns: string, devices: Map<string, string>, redisUrl?: string): StoreBroker {
  return new StoreBroker({
    port,
    host: '127.0.0.1',
    ns,
    users: [
      { ...CONTROLLER, role: 'controller' },
      ...[...devices].map(([name, password]) => ({ name, password, role: 'device' as const })),
    ],
    ...(redisUrl !== undefined && { redisUrl }),
    logger: brokerLogger,
  });
}

/** Device users are created on demand, on every instance, and survive restarts. */
function deviceUsers(instances: () => StoreBroker[], devices: Map<string, string>) {
  return (deviceId: string): Credentials => {
    let password = devices.get(deviceId);
    if (password === undefined) {
      password = `pw-${deviceId}`;
      devices.set(deviceId, password);
      for (const broker of instances()) broker.addUser({ name: deviceId, password, role: 'device' });
    }
    return { username: deviceId, password };
  };
}

const embedded: BrokerFixture = {
  name: 'aedes (store broker)',
  mqtt5: false,
  refusesRetainedScripts: true,
  binaries: [],
  async start(ns) {
    const devices = new Map<string, string>();
    let broker = storeBroker(0, ns, devices);
    await broker.start();
    const port = broker.port;
    const url = `mqtt://127.0.0.1:${port}`;
    const halt = (): Promise<void> => broker.stop();
    const resume = async (): Promise<void> => {
      // In-memory persistence: like mosquitto without persistence, retained messages and
      // sessions are gone after a restart.
      broker = storeBroker(port, ns, devices);
      await broker.start();
    };
    return {
      url,
      controllerUrl: url,
      controllerCreds: { username: CONTROLLER.name, password: CONTROLLER.password },
      deviceCreds: deviceUsers(() => [broker], devices),
      halt,
      resume,
      restart: async () => {
        await halt();
        await resume();
      },
      stop: () => broker.stop(),
    };
  },
};

/**
 * A broker binary run as a child process with its own config file, anonymous, on `port`; its
 * temporary directory goes with it. `restartable` brokers keep no state worth keeping, so a
 * restart is a halt and a resume.
 */
async function startChildBroker(
  command: string,
  config: string,
  port: number,
  dir: string,
  options: { restartable: boolean },
): Promise<RunningBroker> {
  assertInstalled(command);
  const child = new Child(command, ['-c', config]);
  child.start();
  await child.ready(port);
  const url = `mqtt://127.0.0.1:${port}`;
  const halt = (): Promise<void> => child.stop();
  const resume = async (): Promise<void> => {
    child.start();
    await child.ready(port);
  };
  return {
    url,
    controllerUrl: url,
    controllerCreds: {},
    deviceCreds: () => ({}),
    halt,
    resume,
    ...(options.restartable && {
      restart: async () => {
        await halt();
        await resume();
      },
    }),
    stop: async () => {
      await child.stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

const mosquitto: BrokerFixture = {
  name: 'mosquitto',
  mqtt5: true,
  refusesRetainedScripts: false,
  binaries: ['mosquitto'],
  async start() {
    const dir = await mkdtemp(join(tmpdir(), 'regbridge-mosquitto-'));
    const port = await freePort();
    const config = join(dir, 'mosquitto.conf');
    await writeFile(
      config,
      [
        `listener ${port} 127.0.0.1`,
        'allow_anonymous true',
        'persistence false',
        'log_dest stderr',
        'log_type error',
        'log_type warning',
        '',
      ].join('\n'),
    );
    return startChildBroker('mosquitto', config, port, dir, { restartable: true });
  },
};

const nats: BrokerFixture = {
  name: 'nats-server (JetStream MQTT)',
  mqtt5: false,
  refusesRetainedScripts: false,
  binaries: ['nats-server'],
  async start() {
    const dir = await mkdtemp(join(tmpdir(), 'regbridge-nats-'));
    const [clientPort, mqttPort] = [await freePort(), await freePort()];
    const config = join(dir, 'nats.conf');
    await writeFile(
      config,
      [
        `server_name: regbridge_test_${mqttPort}`,
        `listen: 127.0.0.1:${clientPort}`,
        `jetstream { store_dir: ${JSON.stringify(join(dir, 'js'))} }`,
        `mqtt { listen: 127.0.0.1:${mqttPort} }`,
        '',
      ].join('\n'),
    );
    return startChildBroker('nats-server', config, mqttPort, dir, { restartable: false });
  },
};

const redisPair: BrokerFixture = {
  name: 'aedes x2 over Redis',
  mqtt5: false,
  refusesRetainedScripts: true,
  binaries: ['redis-server'],
  async start(ns) {
    assertInstalled('redis-server');
    const redis = await startRedisServer();
    const devices = new Map<string, string>();
    const a = storeBroker(0, ns, devices, redis.url);
    const b = storeBroker(0, ns, devices, redis.url);
    try {
      await a.start();
      await b.start();
    } catch (error) {
      await Promise.allSettled([a.stop(), b.stop()]);
      await redis.stop();
      throw error;
    }
    return {
      // Devices on one instance, controllers and subscribers on the other: every message
      // crosses Redis.
      url: `mqtt://127.0.0.1:${a.port}`,
      controllerUrl: `mqtt://127.0.0.1:${b.port}`,
      controllerCreds: { username: CONTROLLER.name, password: CONTROLLER.password },
      deviceCreds: deviceUsers(() => [a, b], devices),
      stop: async () => {
        await Promise.allSettled([a.stop(), b.stop()]);
        await redis.stop();
      },
    };
  },
};

/** Every running broker knows whether it speaks MQTT 5. */
function tagged(fixture: BrokerFixture): BrokerFixture {
  return {
    ...fixture,
    start: async (ns) => Object.assign(await fixture.start(ns), { mqtt5: fixture.mqtt5 }),
  };
}

export const brokersByName = {
  embedded: tagged(embedded),
  mosquitto: tagged(mosquitto),
  nats: tagged(nats),
  redisPair: tagged(redisPair),
} as const;

export const brokers: BrokerFixture[] = Object.values(brokersByName);
