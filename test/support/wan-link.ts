/**
 * A WAN link simulated on loopback: a TCP pass-through on a free port to one target. cut()
 * closes every connection through it and, until restore(), closes each new one at once (the
 * store's line to the head office is down); the store side then retries as it would over a real
 * WAN. Used between a store's Mosquitto bridge and the hub's nodes, and in front of a controller.
 */
import net from 'node:net';
import { freePort } from './ports.ts';

export interface WanLink {
  /** host:port of the link's near end. */
  readonly address: string;
  readonly port: number;
  readonly up: boolean;
  /** Connections accepted while up, so far. */
  readonly connections: number;
  cut(): void;
  restore(): void;
  close(): Promise<void>;
}

export async function startWanLink(targetPort: number, targetHost = '127.0.0.1'): Promise<WanLink> {
  const port = await freePort();
  const sockets = new Set<net.Socket>();
  let up = true;
  let connections = 0;
  const server = net.createServer((near) => {
    if (!up) {
      near.destroy();
      return;
    }
    connections += 1;
    const far = net.connect(targetPort, targetHost);
    for (const socket of [near, far]) {
      sockets.add(socket);
      socket.setNoDelay(true);
      socket.on('error', () => undefined);
      socket.on('close', () => {
        sockets.delete(socket);
        near.destroy();
        far.destroy();
      });
    }
    near.pipe(far);
    far.pipe(near);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve());
  });
  const cutAll = (): void => {
    for (const socket of sockets) socket.destroy();
    sockets.clear();
  };
  return {
    address: `127.0.0.1:${port}`,
    port,
    get up() {
      return up;
    },
    get connections() {
      return connections;
    },
    cut() {
      up = false;
      cutAll();
    },
    restore() {
      up = true;
    },
    async close() {
      up = false;
      cutAll();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
