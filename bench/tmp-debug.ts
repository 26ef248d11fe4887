import { connect } from 'mqtt';
import { BENCH_PASSWORD, BENCH_USER, startBenchDevice } from './lib/device.ts';
import { createLogger } from '../src/logger.ts';
import { parseServeConfig } from '../src/config.ts';
import { startDevice } from '../src/device.ts';
const d = await startDevice(parseServeConfig({ port: 0, host: '127.0.0.1', brokerHost: '127.0.0.1', users: ['bench:bench-password-1'], deviceId: 'flood', brokerPort: 0 }), { logger: createLogger({ level: 'info' }) });
const mk = (id: string) => connect(`mqtt://127.0.0.1:${d.brokerPort}`, { username: BENCH_USER, password: BENCH_PASSWORD, protocolVersion: 4, clean: true, reconnectPeriod: 0, clientId: id });
const client = mk('flooder'); const spy = mk('spy');
await Promise.all([client, spy].map((c) => new Promise((r) => c.once('connect', r))));
const t0 = Date.now(); client.on('close', () => console.log('flooder close', Date.now() - t0)); spy.on('close', () => console.log('spy close'));
let replies = 0, spyReplies = 0, queued = 0;
client.on('message', () => { replies++; });
spy.on('message', () => { spyReplies++; });
d.queue.on('queued', () => queued++);
let fin = 0; d.queue.on('finished', () => fin++);
const ids = new Set<string>(); client.on('message', (_t, p) => { ids.add(JSON.parse(p.toString()).requestId); });
await client.subscribeAsync('pos/replies/bench-flooder/#', { qos: 1 });
await spy.subscribeAsync('pos/replies/#', { qos: 1 });
const total = 5000; let sent = 0, acked = 0;
await new Promise<void>((resolve, reject) => {
  const pump = (): void => {
    while (sent < total && sent - acked < 1000) {
      sent += 1;
      client.publishAsync('pos/devices/flood/scripts', JSON.stringify({ script: 'PRINT x', requestId: `x${sent}`, replyTo: 'pos/replies/bench-flooder/r' }), { qos: 1 }).then(() => { acked++; if (acked === total) resolve(); else pump(); }, reject);
    }
  };
  pump();
});
for (let i = 0; i < 20; i++) {
  await new Promise((r) => setTimeout(r, 500));
  const metrics = (await d.registry.getSingleMetricAsString('regbridge_mqtt_messages_out_total')) + (await d.registry.getSingleMetricAsString('regbridge_mqtt_messages_in_total'));
  console.log({ health: JSON.stringify(d.bridge?.health()), stats: JSON.stringify(d.broker?.stats), fin, distinct: ids.size, lastId: d.queue.lastIssuedId, replies, spyReplies, queued, out: metrics.split('\n').filter((l) => !l.startsWith('#')).join(' ') });
  if (replies >= total) break;
}
await client.endAsync(true); await spy.endAsync(true); await d.stop();
