/**
 * Real MQTT brokers for the bridge contract suite, each started on free ports with its own
 * configuration: the embedded store broker (aedes), a mosquitto process, a nats-server with
 * JetStream and its MQTT listener, and two store brokers sharing state through Redis.
 * Adding a broker is one more entry in `brokers`.
 */
import { StoreBroker } from '../../broker/store-broker.ts';
import { type RunningProgramBroker, startMosquitto, startNatsServer } from './broker-programs.ts';
import { assertInstalled } from './installed.ts';
import { brokerLogger } from './loggers.ts';
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
  /** Programs it runs; without them the suites using it skip outside CI (support/binaries.ts). */
  binaries: readonly string[];
  start(ns: string): Promise<RunningBroker>;
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

/** The fields of a running broker program; restartable ones keep no state worth keeping. */
function programBroker(program: RunningProgramBroker, options: { restartable: boolean }): RunningBroker {
  return {
    url: program.url,
    controllerUrl: program.url,
    controllerCreds: {},
    deviceCreds: () => ({}),
    halt: program.halt,
    resume: program.resume,
    ...(options.restartable && {
      restart: async () => {
        await program.halt();
        await program.resume();
      },
    }),
    stop: program.stop,
  };
}

const mosquitto: BrokerFixture = {
  name: 'mosquitto',
  mqtt5: true,
  refusesRetainedScripts: false,
  binaries: ['mosquitto'],
  async start() {
    return programBroker(await startMosquitto(), { restartable: true });
  },
};

const nats: BrokerFixture = {
  name: 'nats-server (JetStream MQTT)',
  mqtt5: false,
  refusesRetainedScripts: false,
  binaries: ['nats-server'],
  async start() {
    return programBroker(await startNatsServer(), { restartable: false });
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
