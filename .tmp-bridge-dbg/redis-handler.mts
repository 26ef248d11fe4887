import { connectAsync } from 'mqtt';
import { brokersByName } from '/work/main/test/helpers/brokers.ts';
const ns = 'pos';
const broker = await brokersByName.redisPair.start(ns);
for (const clean of [true, false]) for (const retain of [true, false]) {
  const tag = `clean=${clean} retain=${retain}`;
  const dev = await connectAsync(broker.url, { clientId: `d-${clean}-${retain}`, clean, ...broker.deviceCreds('d1') });
  await dev.subscribeAsync(`${ns}/devices/d1/scripts`, { qos: 1 });
  if (process.env.SELF) await dev.subscribeAsync(`${ns}/devices/d1/tasks/+/status`, { qos: 1 });
  dev.on("message", (topic) => { if (!topic.endsWith("/scripts")) return;
    for (const n of [1, 2]) dev.publish(`${ns}/devices/d1/tasks/${n}/status`, `${tag} ${n}`, { qos: 1, retain });
  });
  const sub = await connectAsync(broker.controllerUrl, { ...broker.controllerCreds });
  await sub.subscribeAsync(`${ns}/devices/d1/tasks/+/status`, { qos: 1 });
  const got: string[] = [];
  sub.on('message', (t, p, pk) => { if (!pk.retain) got.push(p.toString()); });
  await sub.publishAsync(`${ns}/devices/d1/scripts`, 'go', { qos: 1 });
  await new Promise((r) => setTimeout(r, 1500));
  console.log(tag, got.filter((g) => g.startsWith(tag)));
  await dev.endAsync(); await sub.endAsync();
}
await broker.stop();
