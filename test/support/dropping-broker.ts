/**
 * An in-process aedes broker behind a listener that, while `dropping`, accepts every connection
 * and closes it at once, as the front of an overloaded or halted broker would: the reconnect
 * backoff's suites (test/bridge/reconnect-backoff.test.ts, test/bridge/reconnect-health.test.ts). It can also
 * refuse every CONNECT as unavailable (test/bridge/mqtt-log.test.ts).
 */
import net from 'node:net';
import { Aedes } from 'aedes';
import { afterAll, afterEach, beforeAll } from 'vitest';
import { type Cleanup, cleanupsAfterEach } from './suite-hooks.ts';

export interface DroppingBroker {
  readonly url: string;
  /** While true, every new connection is accepted and closed at once. */
  dropping: boolean;
  /** When each dropped connection was accepted (performance.now(), ms). */
  accepts: number[];
  /** Starts dropping and closes every connection aedes holds now. */
  dropAll(): void;
  /**
   * While true, aedes answers every CONNECT with CONNACK 3, "server unavailable" (a retryable
   * refusal, [MQTT-3.2.2-5]): each reconnect attempt fails with the same client error.
   */
  unavailable: boolean;
  /** Closes every connection aedes holds now, changing no mode. */
  closeAll(): void;
  close(): Promise<void>;
}

export async function droppingBroker(): Promise<DroppingBroker> {
  const aedes = await Aedes.createBroker();
  const broker = {
    url: '',
    dropping: true,
    accepts: [] as number[],
    unavailable: false,
    dropAll() {
      broker.dropping = true;
      broker.closeAll();
    },
    closeAll() {
      const clients = (aedes as unknown as { clients: Record<string, { conn: net.Socket }> }).clients;
      for (const client of Object.values(clients)) client.conn.destroy();
    },
    async close() {
      await new Promise<void>((resolve) => aedes.close(() => resolve()));
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  aedes.authenticate = (_client, _username, _password, done) => {
    if (!broker.unavailable) return done(null, true);
    done(Object.assign(new Error('server unavailable'), { returnCode: 3 as const }), false);
  };
  const server = net.createServer((socket) => {
    if (broker.dropping) {
      broker.accepts.push(performance.now());
      socket.destroy();
    } else aedes.handle(socket);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  broker.url = `mqtt://127.0.0.1:${(server.address() as net.AddressInfo).port}`;
  return broker;
}

/**
 * One dropping broker for the suite (as brokerPerSuite does for the real ones): `started` receives
 * it; after each test it drops again, is available again, and forgets its accepts. Returns the
 * suite's cleanups.
 */
export function droppingBrokerPerSuite(started: (broker: DroppingBroker) => void): Cleanup[] {
  let broker: DroppingBroker | undefined;
  beforeAll(async () => {
    broker = await droppingBroker();
    started(broker);
  });
  const cleanups = cleanupsAfterEach();
  afterEach(() => {
    if (!broker) return;
    broker.dropping = true;
    broker.unavailable = false;
    broker.accepts = [];
  });
  afterAll(() => broker?.close());
  return cleanups;
}
