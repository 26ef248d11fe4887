import { pino } from 'pino';
import { connectAsync } from 'mqtt';
import { brokersByName } from '/work/main/test/helpers/brokers.ts';
const ns = 'pos';
const broker = await brokersByName.redisPair.start(ns);
const variants: Array<[string, (c: any) => Promise<unknown>]> = [
  ['one filter', (c) => c.subscribeAsync([`${ns}/devices/d1/scripts`], { qos: 1 })],
  ['two filters', (c) => c.subscribeAsync([`${ns}/devices/d1/scripts`, `${ns}/groups/all/scripts`], { qos: 1 })],
  ['group only', (c) => c.subscribeAsync([`${ns}/groups/all/scripts`], { qos: 1 })],
  ['status wildcard', (c) => c.subscribeAsync([`${ns}/devices/d1/tasks/+/status`], { qos: 1 })],
];
let i = 0;
for (const clean of [true, false]) for (const [name, sub] of variants) {
  i++;
  const c = await connectAsync(broker.url, { clientId: `x${i}`, clean, ...broker.deviceCreds('d1') });
  const r = await Promise.race([sub(c).then(() => 'ok', (e: Error) => 'err ' + e.message), new Promise((res) => setTimeout(() => res('TIMEOUT'), 2000))]);
  console.log(clean, name, r);
  await c.endAsync(true);
}
await broker.stop();
