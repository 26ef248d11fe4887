import { connectAsync } from 'mqtt';
import { brokersByName } from '/work/main/test/helpers/brokers.ts';
const ns = 'pos';
const broker = await brokersByName.redisPair.start(ns);
for (const retain of [false, true]) for (const sameTopic of [true, false]) {
  const dev = await connectAsync(broker.url, { clientId: `d-${retain}-${sameTopic}`, clean: false, ...broker.deviceCreds('d1') });
  const sub = await connectAsync(broker.controllerUrl, { ...broker.controllerCreds });
  await sub.subscribeAsync(`${ns}/devices/d1/tasks/+/status`, { qos: 1 });
  const got: string[] = [];
  sub.on('message', (t, p, pk) => { if (!pk.retain) got.push(p.toString()); });
  const tag = `${retain}-${sameTopic}`;
  await Promise.all([1,2,3,4].map((n) => dev.publishAsync(`${ns}/devices/d1/tasks/${sameTopic ? 1 : n}/status`, `${tag}-${n}`, { qos: 1, retain })));
  await new Promise((r) => setTimeout(r, 1500));
  console.log(`retain=${retain} sameTopic=${sameTopic}`, got.filter(g => g.startsWith(tag)));
  await dev.endAsync(); await sub.endAsync();
}
await broker.stop();
