/**
 * An in-process aedes broker behind a listener that, while `dropping`, accepts every connection
 * and closes it at once, as the front of an overloaded or halted broker would: the reconnect
 * backoff's suites (test/reconnect-backoff.test.ts, test/reconnect-health.test.ts). It can also
 * stop listening, so that connections are refused (test/mqtt-log.test.ts).
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
  /** Closes every connection and the listener: connections are refused (ECONNREFUSED). */
  refuse(): Promise<void>;
  /** Listens again on the same port (after refuse()), dropping or not as `dropping` says. */
  listenAgain(): Promise<void>;
  close(): Promise<void>;
}

export async function droppingBroker(): Promise<DroppingBroker> {
  const aedes = await Aedes.createBroker();
  const broker = {
    url: '',
    dropping: true,
    accepts: [] as number[],
    dropAll() {
      broker.dropping = true;
      const clients = (aedes as unknown as { clients: Record<string, { conn: net.Socket }> }).clients;
      for (const client of Object.values(clients)) client.conn.destroy();
    },
    async refuse() {
      const dropping = broker.dropping;
      broker.dropAll();
      broker.dropping = dropping;
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
    async listenAgain() {
      if (server.listening) return;
      await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', () => resolve()));
    },
    async close() {
      await new Promise<void>((resolve) => aedes.close(() => resolve()));
      if (server.listening) await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  const server = net.createServer((socket) => {
    if (broker.dropping) {
      broker.accepts.push(performance.now());
      socket.destroy();
    } else aedes.handle(socket);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const { port } = server.address() as net.AddressInfo;
  broker.url = `mqtt://127.0.0.1:${port}`;
  return broker;
}

/**
 * One dropping broker for the suite (as brokerPerSuite does for the real ones): `started` receives
 * it; after each test it drops again and forgets its accepts. Returns the suite's cleanups.
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
    broker.accepts = [];
  });
  afterAll(() => broker?.close());
  return cleanups;
}
