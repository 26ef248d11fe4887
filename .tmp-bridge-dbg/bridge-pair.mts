import { pino } from 'pino';
import { Registry } from 'prom-client';
import { connectAsync } from 'mqtt';
import { brokersByName } from '/work/main/test/helpers/brokers.ts';
import { DeviceBridge } from '/work/main/bridge/device-bridge.ts';
import { TaskQueue } from '/work/main/src/tasks/task-queue.ts';
import { SimulatorExecutor } from '/work/main/src/executors/simulator.ts';

const ns = 'test/store-042';
const broker = await brokersByName.redisPair.start(ns);
const logger = pino({ level: process.env.LL ?? 'debug' });
for (const n of [1, 2]) {
  const deviceId = `d${n}`;
  const queue = new TaskQueue({ executor: new SimulatorExecutor({}), retain: 8, maxQueue: 8 });
  queue.start();
  const creds = broker.deviceCreds(deviceId);
  const bridge = new DeviceBridge({ url: broker.url, ...creds, ns, deviceId, groups: [], installation: 'pos', version: '1', queue, registry: new Registry(), logger, maxScriptBytes: 1000 });
  let t = Date.now();
  await bridge.start();
  console.log('started in', Date.now() - t);
  const ctl = await connectAsync(broker.controllerUrl, { username: broker.controllerCreds.username, password: broker.controllerCreds.password });
  await ctl.subscribeAsync(`${ns}/replies/x`, { qos: 1 });
  const got = new Promise<string>((res) => ctl.on('message', (tp, p) => res(p.toString())));
  await ctl.publishAsync(`${ns}/devices/${deviceId}/scripts`, JSON.stringify({ script: 'PRINT x', replyTo: `${ns}/replies/x` }), { qos: 1 });
  console.log('reply', await Promise.race([got, new Promise((res) => setTimeout(() => res('TIMEOUT'), 3000))]));
  t = Date.now();
  await queue.stop(); await bridge.stop();
  console.log('stopped in', Date.now() - t);
  await ctl.endAsync();
}
await broker.stop();
