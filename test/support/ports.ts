/**
 * Free ports and waiting for a listener, for tests and benchmarks alike. Our own servers listen
 * on port 0; these are for programs that cannot be told to pick one (mosquitto, nats-server,
 * redis-server) and for a port a test wants taken or known to be free.
 */
import net from 'node:net';

/** A port that was free a moment ago (bind 0, read it, close). */
export function freePort(host = '127.0.0.1'): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, host, () => {
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
      socket.once('error', () => {
        socket.destroy();
        resolve(false);
      });
    });
    if (ok) return;
    if (Date.now() > deadline) throw new Error(`nothing listens on ${host}:${port} after ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
