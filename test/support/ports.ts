/**
 * Free ports and waiting for a listener, for tests and benchmarks alike. Our own servers listen
 * on port 0; these are for programs that cannot be told to pick one (mosquitto, nats-server,
 * redis-server) and for a port a test wants taken or known to be free.
 */
import { readFileSync } from 'node:fs';
import net from 'node:net';

/**
 * The lowest port the kernel hands out on its own (Linux: ip_local_port_range; 32768 elsewhere,
 * below the BSD and Windows ranges too).
 */
function ephemeralFloor(): number {
  try {
    const low = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
    return Number.isInteger(low) && low > 11_000 ? low : 32_768;
  } catch {
    return 32_768;
  }
}

const FLOOR = ephemeralFloor();

function bindable(port: number, host: string): Promise<boolean> {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.unref();
    server.once('error', () => resolve(false));
    server.listen(port, host, () => server.close(() => resolve(true)));
  });
}

/**
 * A port that was free a moment ago, chosen below the kernel's ephemeral range: a program started
 * on it later (or restarted on it after a SIGKILL, as the NATS cluster suite does) must not find
 * it taken by the source port of some other test's outgoing connection or by another listener on
 * port 0, which the kernel picks from that range. Falls back to port 0 after 100 taken picks.
 */
export async function freePort(host = '127.0.0.1'): Promise<number> {
  for (let attempt = 0; attempt < 100; attempt++) {
    const port = 10_000 + Math.floor(Math.random() * (FLOOR - 10_000));
    if (await bindable(port, host)) return port;
  }
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
