import { connectAsync } from 'mqtt';
import { brokersByName } from '/work/main/test/helpers/brokers.ts';
const ns = 'pos';
const broker = await brokersByName.redisPair.start(ns);
const dev = await connectAsync(broker.url, { ...broker.deviceCreds('d1') });
const same = await connectAsync(broker.url, { ...broker.controllerCreds });
const other = await connectAsync(broker.controllerUrl, { ...broker.controllerCreds });
const counts: Record<string, number> = {};
for (const [name, c] of [['same', same], ['other', other]] as const) {
  await c.subscribeAsync(`${ns}/devices/+/tasks/+/status`, { qos: Number(process.env.SQ ?? 1) as 0 | 1 });
  c.on('message', (t, p) => { const k = `${name} ${p.toString().split(':')[0]}`; counts[k] = (counts[k] ?? 0) + 1; });
}
for (let i = 0; i < 50; i++) {
  await dev.publishAsync(`${ns}/devices/d1/tasks/${i}/status`, `retained:${i}`, { qos: 1, retain: true });
  await dev.publishAsync(`${ns}/devices/d1/tasks/${i}/status`, `plain:${i}`, { qos: 1, retain: false });
  await new Promise((r) => setTimeout(r, 10));
}
await new Promise((r) => setTimeout(r, 1000));
console.log(counts);
await Promise.all([dev.endAsync(), same.endAsync(), other.endAsync()]);
await broker.stop();
