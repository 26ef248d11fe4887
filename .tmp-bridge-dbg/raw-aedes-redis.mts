import net from 'node:net';
import { Aedes } from 'aedes';
import mqemitterRedis from 'mqemitter-redis';
import aedesPersistenceRedis from 'aedes-persistence-redis';
import { connectAsync } from 'mqtt';
import { startRedisServer } from '/work/main/test/helpers/redis-server.ts';
const redis = await startRedisServer();
const mode = process.env.MODE ?? 'both';
const mq = mode === 'persist' ? undefined : mqemitterRedis({ connectionString: redis.url });
const persistence = mode === 'mq' ? undefined : aedesPersistenceRedis({ connectionString: redis.url } as any);
const aedes = await Aedes.createBroker({ ...(mq && { mq }), ...(persistence && { persistence }) } as any);
const server = net.createServer(aedes.handle);
await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
const url = `mqtt://127.0.0.1:${(server.address() as net.AddressInfo).port}`;
const dev = await connectAsync(url, {});
const sub = await connectAsync(url, {});
await sub.subscribeAsync('s/+', { qos: 1 });
const counts: Record<string, number> = {};
sub.on('message', (t, p) => { const k = p.toString().split(':')[0]; counts[k] = (counts[k] ?? 0) + 1; });
for (let i = 0; i < 50; i++) {
  await dev.publishAsync(`s/${i}`, `retained:${i}`, { qos: 1, retain: true });
  await dev.publishAsync(`s/${i}`, `plain:${i}`, { qos: 1, retain: false });
  await new Promise((r) => setTimeout(r, 10));
}
await new Promise((r) => setTimeout(r, 1000));
console.log(mode, counts);
process.exit(0);
