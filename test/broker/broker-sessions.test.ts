/**
 * Persistent sessions (clean=false) on the store broker, in memory and over Redis: what a session
 * keeps is what the ACL granted, and overlapping subscriptions neither drop the client nor leave
 * copies behind (broker/aedes-fixes/subscription-store.ts, broker/aedes-fixes/dedupe.ts; faults of aedes 1.2 worked around).
 */

import { Redis } from 'ioredis';
import mqtt, { type IClientOptions, type MqttClient } from 'mqtt';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { deviceClientId } from '../../bridge/contract/topics.ts';
import type { StoreBroker } from '../../broker/store-broker.ts';
import { skipWithout } from '../support/binaries.ts';
import { MqttClients, recordPayloads } from '../support/mqtt-clients.ts';
import { type RunningRedis, startRedisServer } from '../support/redis-server.ts';
import { CTL, DEV, storeBroker } from '../support/store-brokers.ts';
import { until } from '../support/waits.ts';

const NS = 'stores/9';
// A device user connects with its own client id only (contract 6.1).
const REG1 = deviceClientId(NS, DEV.username);

const clients = new MqttClients();

afterEach(async () => {
  await clients.closeAll();
});

function connect(port: number, options: IClientOptions): Promise<MqttClient> {
  return clients.connect(port, options);
}

// Over Redis only where the redis-server binary exists.
const backends = [
  { name: 'in memory', redis: false },
  ...(skipWithout(['redis-server'], 'store broker sessions over Redis')
    ? []
    : [{ name: 'over Redis', redis: true }]),
];

describe.each(backends)('persistent sessions on the store broker ($name)', ({ redis: useRedis }) => {
  let redis: RunningRedis | undefined;
  let broker: StoreBroker;

  beforeAll(async () => {
    if (useRedis) redis = await startRedisServer();
    broker = storeBroker(NS, redis && { redisUrl: redis.url });
    await broker.start();
  });
  afterAll(async () => {
    await broker?.stop();
    await redis?.stop();
  });

  it('keeps only the granted filters of a SUBSCRIBE: a refused one never delivers, not even queued', async () => {
    const own = `${NS}/devices/reg-1/scripts`;
    const other = `${NS}/devices/reg-2/scripts`;
    const device = await connect(broker.port, { ...DEV, clientId: REG1, clean: false });
    const refused = await device.subscribeAsync([own, other], { qos: 1 }).then(
      () => undefined,
      (error: Error & { packet?: { granted?: number[] } }) => error.packet?.granted,
    );
    expect(refused).toEqual([1, 128]);
    await device.endAsync();
    const ctl = await connect(broker.port, CTL);
    // Queued in this order: the refused topic's message first, so it would arrive first.
    await ctl.publishAsync(other, 'for reg-2 only', { qos: 1 });
    await ctl.publishAsync(own, 'for reg-1', { qos: 1 });
    const back = mqtt.connect(`mqtt://127.0.0.1:${broker.port}`, {
      ...DEV,
      clientId: REG1,
      clean: false,
      reconnectPeriod: 0,
    });
    clients.add(back);
    const received = recordPayloads(back);
    await until(() => received.includes('for reg-1'), 'the message of the granted filter');
    // A live one on the refused topic does not arrive either; one on the granted topic after it does.
    await ctl.publishAsync(other, 'live for reg-2', { qos: 1 });
    await ctl.publishAsync(own, 'live for reg-1', { qos: 1 });
    await until(() => received.includes('live for reg-1'), 'the live message of the granted filter');
    expect(received).toEqual(['for reg-1', 'live for reg-1']);
  });

  it('delivers each message once to overlapping subscriptions, stays connected, and resends nothing on resume', async () => {
    const filters = [`${NS}/devices/+/scripts`, `${NS}/devices/reg-7/scripts`];
    const watcher = await connect(broker.port, { ...CTL, clientId: 'ctl-overlap', clean: false });
    await watcher.subscribeAsync(filters[0] as string, { qos: 1 });
    await watcher.subscribeAsync(filters[1] as string, { qos: 1 });
    let closed = false;
    watcher.on('close', () => {
      closed = true;
    });
    const received = recordPayloads(watcher);
    const ctl = await connect(broker.port, CTL);
    const sent = Array.from({ length: 20 }, (_, i) => `m${i}`);
    // Back to back: aedes 1.2 closed such a session with `no such packet` and lost messages.
    await Promise.all(sent.map((m) => ctl.publishAsync(`${NS}/devices/reg-7/scripts`, m, { qos: 1 })));
    await until(() => received.length >= sent.length, '20 messages');
    expect([...received].sort()).toEqual([...sent].sort());
    expect(closed).toBe(false);

    await watcher.endAsync();
    const back = await connect(broker.port, { ...CTL, clientId: 'ctl-overlap', clean: false });
    const again = recordPayloads(back);
    // A marker sent after the resume arrives after anything the session still had queued.
    await ctl.publishAsync(`${NS}/devices/reg-7/scripts`, 'marker', { qos: 1 });
    await until(() => again.includes('marker'), 'the marker');
    expect(again).toEqual(['marker']);
    if (redis) {
      // Every queued copy was acknowledged, so Redis keeps no packet of them.
      const db = new Redis(redis.url);
      try {
        await until(
          async () => (await db.keys('packet:*')).length === 0,
          'no packet left in Redis',
          5000,
          50,
        );
      } finally {
        db.disconnect();
      }
    }
  });
});
