/**
 * A TCP proxy in front of a test's redis-server that can stop one connection's commands at a
 * chosen point: the first connection (after holdOn) that sends a command containing a marker is
 * held from that command on, until release(). A broker instance behind it then waits at that
 * Redis round trip for as long as the test needs, which makes an interleaving of the instance's
 * steps reproducible without sleeps. Replies (Redis to the instance) are never held.
 */
import net from 'node:net';

export interface RedisProxy {
  /** redis:// URL of the proxy. */
  url: string;
  /** Resolves when a connection sent `marker` and is being held from that command on. */
  holdOn(marker: string): Promise<void>;
  /** Resolves when the held connection has sent `marker` (kept, not forwarded yet). */
  heldSent(marker: string): Promise<void>;
  /** Forwards what was held, in order, and stops holding. */
  release(): void;
  close(): Promise<void>;
}

interface Watch {
  marker: string;
  resolve: () => void;
}

/** Markers are looked for across chunk boundaries in the last bytes of each stream. */
const TAIL = 256;

export async function startRedisProxy(redisPort: number): Promise<RedisProxy> {
  const sockets = new Set<net.Socket>();
  let arm: Watch | undefined;
  let held: { chunks: Buffer[]; upstream: net.Socket; seen: string } | undefined;
  const watches: Watch[] = [];

  const checkWatches = (): void => {
    if (!held) return;
    for (const watch of [...watches]) {
      if (!held.seen.includes(watch.marker)) continue;
      watches.splice(watches.indexOf(watch), 1);
      watch.resolve();
    }
  };

  const server = net.createServer((client) => {
    const upstream = net.connect(redisPort, '127.0.0.1');
    sockets.add(client);
    sockets.add(upstream);
    let tail = '';
    client.on('data', (chunk: Buffer) => {
      const text = tail + chunk.toString('latin1');
      tail = text.slice(-TAIL);
      if (held?.upstream === upstream) {
        held.chunks.push(chunk);
        held.seen += chunk.toString('latin1');
        checkWatches();
        return;
      }
      if (arm && !held && text.includes(arm.marker)) {
        held = { chunks: [chunk], upstream, seen: text };
        const armed = arm;
        arm = undefined;
        armed.resolve();
        checkWatches();
        return;
      }
      upstream.write(chunk);
    });
    upstream.on('data', (chunk: Buffer) => client.write(chunk));
    const end = (): void => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    client.on('close', end);
    upstream.on('close', end);
    client.on('error', end);
    upstream.on('error', end);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as net.AddressInfo;

  return {
    url: `redis://127.0.0.1:${port}`,
    holdOn: (marker) =>
      new Promise((resolve) => {
        arm = { marker, resolve };
      }),
    heldSent: (marker) =>
      new Promise((resolve) => {
        watches.push({ marker, resolve });
        checkWatches();
      }),
    release: () => {
      const released = held;
      held = undefined;
      if (released) for (const chunk of released.chunks) released.upstream.write(chunk);
    },
    close: () =>
      new Promise((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}
