import { createServer } from 'node:net';

/**
 * A port that was free a moment ago, for programs that cannot be told to pick one (mosquitto,
 * redis-server). Our own servers listen on port 0 instead.
 */
export async function freePort(host = '127.0.0.1'): Promise<number> {
  return await new Promise<number>((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.once('error', reject);
    server.listen(0, host, () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}
