import { pino } from 'pino';
import { connectAsync } from 'mqtt';
import { StoreBroker } from '/work/main/broker/store-broker.ts';
import { startRedisServer } from '/work/main/test/helpers/redis-server.ts';

const redis = await startRedisServer();
const mk = () => new StoreBroker({ port: 0, host: '127.0.0.1', ns: 'pos', users: [{name:'c',password:'p',role:'controller'},{name:'d1',password:'p',role:'device'}], redisUrl: redis.url, logger: pino({level:'warn'}) });
const a = mk(), b = mk();
await a.start(); await b.start();
for (const clean of [true, false]) {
  const dev = await connectAsync(`mqtt://127.0.0.1:${a.port}`, { clientId: `dev-${clean}`, clean, username: 'd1', password: 'p' });
  await dev.subscribeAsync('pos/devices/d1/scripts', { qos: 1 });
  const got = new Promise<string>((res) => dev.on('message', (t, p) => res(p.toString())));
  const ctl = await connectAsync(`mqtt://127.0.0.1:${b.port}`, { clientId: `ctl-${clean}`, username: 'c', password: 'p' });
  await ctl.publishAsync('pos/devices/d1/scripts', `hello ${clean}`, { qos: 1 });
  const r = await Promise.race([got, new Promise((res) => setTimeout(() => res('TIMEOUT'), 3000))]);
  console.log('clean', clean, '->', r);
  await dev.endAsync(); await ctl.endAsync();
}
await a.stop(); await b.stop(); await redis.stop();
