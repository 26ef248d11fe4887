import { connectAsync } from 'mqtt';
import { brokersByName } from '/work/main/test/helpers/brokers.ts';
const ns = 'pos';
const broker = await brokersByName.redisPair.start(ns);
const dev = await connectAsync(broker.url, { ...broker.deviceCreds('d1') });
for (const mode of ['single', 'multi', 'separate']) for (const retain of [false, true]) {
  const sub = await connectAsync(broker.controllerUrl, { ...broker.controllerCreds });
  const filters = [`${ns}/replies/x`, `${ns}/devices/+/tasks/+/status`];
  if (mode === 'single') await sub.subscribeAsync(filters[1], { qos: 1 });
  if (mode === 'multi') await sub.subscribeAsync(filters, { qos: 1 });
  if (mode === 'separate') for (const f of filters) await sub.subscribeAsync(f, { qos: 1 });
  const got: string[] = [];
  sub.on('message', (t, p, pk) => { if (!pk.retain) got.push(t); });
  await new Promise((r) => setTimeout(r, 300));
  await dev.publishAsync(`${ns}/devices/d1/tasks/1/status`, 'x', { qos: 1, retain });
  await dev.publishAsync(`${ns}/replies/x`, 'x', { qos: 1 });
  await new Promise((r) => setTimeout(r, 500));
  console.log(mode, 'retain', retain, got);
  await sub.endAsync();
}
await dev.endAsync();
await broker.stop();
