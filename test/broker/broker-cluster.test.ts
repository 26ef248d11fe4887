/**
 * Two store broker instances sharing one private redis-server (`--redis-url`, docs/broker.md):
 * fan-out, retained messages and last wills cross instances. Skipped only when the redis-server
 * binary is missing.
 */

import mqtt, { type IClientOptions, type MqttClient } from 'mqtt';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { deviceClientId } from '../../bridge/contract/topics.ts';
import { BrokerRedisError, type StoreBroker } from '../../broker/store-broker.ts';
import { skipWithout } from '../support/binaries.ts';
import { MqttClients, nextMessage } from '../support/mqtt-clients.ts';
import { type RunningRedis, startRedisServer } from '../support/redis-server.ts';
import { CTL, DEV, storeBroker } from '../support/store-brokers.ts';
import { until } from '../support/waits.ts';

const NS = 'stores/7';
// A device user connects with its own client id only (contract 6.1).
const REG1 = deviceClientId(NS, DEV.username);

const clients = new MqttClients();

function connect(port: number, options: IClientOptions): Promise<MqttClient> {
  return clients.connect(port, options);
}

function instance(redisUrl: string): StoreBroker {
  return storeBroker(NS, { redisUrl });
}

afterEach(async () => {
  await clients.closeAll();
});

// Skipped only outside CI when redis-server is missing; CI (.ci/run) installs it, so there it always runs.
describe.skipIf(skipWithout(['redis-server'], 'two store brokers over one Redis'))(
  'two store brokers over one Redis',
  () => {
    let redis: RunningRedis;
    let a: StoreBroker;
    let b: StoreBroker;

    beforeAll(async () => {
      redis = await startRedisServer();
      a = instance(redis.url);
      b = instance(redis.url);
      await a.start();
      await b.start();
    });
    afterAll(async () => {
      await Promise.allSettled([a?.stop(), b?.stop()]);
      await redis?.stop();
    });

    it('delivers a publish on A to a subscriber on B', async () => {
      const device = await connect(b.port, { ...DEV, clientId: REG1 });
      await device.subscribeAsync(`${NS}/groups/all/scripts`, { qos: 1 });
      const ctl = await connect(a.port, CTL);
      const got = nextMessage(device, '{"script":"PRINT x"}');
      await ctl.publishAsync(`${NS}/groups/all/scripts`, '{"script":"PRINT x"}', { qos: 1 });
      expect(await got).toEqual({ topic: `${NS}/groups/all/scripts`, retain: false });
    });

    it('delivers every message of a burst mixing retained and plain publishes', async () => {
      // aedes drops a message whose origin counter is lower than one already delivered to the
      // same client (its overlap de-duplication); a retained publish waits for Redis, so a plain
      // publish made after it overtakes it. broker/aedes-fixes/dedupe.ts keeps that from losing messages.
      const ctl = await connect(b.port, CTL);
      await ctl.subscribeAsync([`${NS}/devices/reg-1/tasks/+/status`, `${NS}/devices/reg-1/replies/#`], {
        qos: 1,
      });
      const local = await connect(a.port, CTL);
      await local.subscribeAsync([`${NS}/devices/reg-1/tasks/+/status`, `${NS}/devices/reg-1/replies/#`], {
        qos: 1,
      });
      const device = await connect(a.port, { ...DEV, clientId: REG1 });
      const expected = ['s1', 'r1', 's2', 'r2', 's3', 'r3'];
      const remote = Promise.all(expected.map((payload) => nextMessage(ctl, payload)));
      const near = Promise.all(expected.map((payload) => nextMessage(local, payload)));
      await Promise.all(
        [1, 2, 3].flatMap((n) => [
          device.publishAsync(`${NS}/devices/reg-1/tasks/${n}/status`, `s${n}`, { qos: 1, retain: true }),
          device.publishAsync(`${NS}/devices/reg-1/replies/${n}`, `r${n}`, { qos: 1 }),
        ]),
      );
      await Promise.all([remote, near]);
    });

    it('gives a subscriber on B the message retained on A', async () => {
      const device = await connect(a.port, { ...DEV, clientId: REG1 });
      await device.publishAsync(`${NS}/devices/reg-1/tasks/1/status`, 'retained on A', {
        qos: 1,
        retain: true,
      });
      const ctl = await connect(b.port, CTL);
      const got = nextMessage(ctl, 'retained on A');
      await ctl.subscribeAsync(`${NS}/devices/+/tasks/+/status`, { qos: 1 });
      expect(await got).toEqual({ topic: `${NS}/devices/reg-1/tasks/1/status`, retain: true });
    });

    it('shows B the last will of a client of A whose connection dropped', async () => {
      const ctl = await connect(b.port, CTL);
      await ctl.subscribeAsync(`${NS}/devices/reg-1/state`, { qos: 1 });
      const device = await connect(a.port, {
        ...DEV,
        clientId: REG1,
        will: { topic: `${NS}/devices/reg-1/state`, payload: Buffer.from('offline'), qos: 1, retain: true },
      });
      const online = nextMessage(ctl, 'online');
      await device.publishAsync(`${NS}/devices/reg-1/state`, 'online', { qos: 1, retain: true });
      await online;
      const offline = nextMessage(ctl, 'offline');
      device.stream.destroy();
      expect((await offline).topic).toBe(`${NS}/devices/reg-1/state`);
      // And it is retained in Redis for whoever subscribes later, on either instance.
      const late = await connect(a.port, CTL);
      const retained = nextMessage(late, 'offline');
      await late.subscribeAsync(`${NS}/devices/reg-1/state`, { qos: 1 });
      expect(await retained).toEqual({ topic: `${NS}/devices/reg-1/state`, retain: true });
    });

    it('publishes the wills of its clients when an instance stops, so the other one sees them', async () => {
      const c = instance(redis.url);
      await c.start();
      try {
        const ctl = await connect(b.port, CTL);
        await ctl.subscribeAsync(`${NS}/devices/reg-1/state`, { qos: 1 });
        const device = await connect(c.port, {
          ...DEV,
          clientId: REG1,
          will: {
            topic: `${NS}/devices/reg-1/state`,
            payload: Buffer.from('gone with C'),
            qos: 1,
            retain: true,
          },
        });
        const closed = new Promise<void>((resolve) => device.once('close', () => resolve()));
        const offline = nextMessage(ctl, 'gone with C');
        await c.stop();
        await closed;
        expect((await offline).topic).toBe(`${NS}/devices/reg-1/state`);
      } finally {
        await c.stop();
      }
    });

    it('acknowledges a SUBSCRIBE with several filters from a persistent session; the session keeps them', async () => {
      // aedes stored the filters once per filter, and aedes-persistence-redis' waits for its
      // announcements overwrote each other: no SUBACK (broker/aedes-fixes/subscription-store.ts).
      const scripts = `${NS}/devices/reg-1/scripts`;
      const group = `${NS}/groups/all/scripts`;
      const device = await connect(a.port, { ...DEV, clientId: REG1, clean: false });
      const granted = await device.subscribeAsync([scripts, group], { qos: 1 });
      expect(granted.map((g) => [g.topic, g.qos])).toEqual([
        [scripts, 1],
        [group, 1],
      ]);
      // Two SUBSCRIBEs in flight at once, starting with the same filter, are both answered too.
      const both = await Promise.all([
        device.subscribeAsync([scripts, `${NS}/groups/front/scripts`], { qos: 1 }),
        device.subscribeAsync([scripts, `${NS}/groups/back/scripts`], { qos: 1 }),
      ]);
      expect(both.map((g) => g.length)).toEqual([2, 2]);
      // B learns A's subscriptions through Redis asynchronously: wait until B routes both filters
      // to the device (a probe published on B arrives) before taking the device offline.
      const ctl = await connect(b.port, CTL);
      for (const topic of [scripts, group]) {
        for (let attempt = 0; ; attempt += 1) {
          const probe = `probe ${topic} ${attempt}`;
          const arrived = nextMessage(device, probe, 200).then(
            () => true,
            () => false,
          );
          await ctl.publishAsync(topic, probe, { qos: 1 });
          if (await arrived) break;
          if (attempt > 50) throw new Error(`instance B never routed ${topic} to the device`);
        }
      }
      await device.endAsync();
      // The client's DISCONNECT may still be in A's hands: publish once A has let the session go
      // offline, so the messages are queued for it rather than delivered to a closing socket.
      await until(() => a.stats.clients === 0, 'instance A to let the client go', 5000, 10);
      // Offline: what is published on B waits in the session (in Redis) and arrives on B.
      await ctl.publishAsync(scripts, 'to the device', { qos: 1 });
      await ctl.publishAsync(group, 'to the group', { qos: 1 });
      const back = mqtt.connect(`mqtt://127.0.0.1:${b.port}`, {
        ...DEV,
        clientId: REG1,
        clean: false,
        reconnectPeriod: 0,
      });
      clients.add(back);
      const received = Promise.all([nextMessage(back, 'to the device'), nextMessage(back, 'to the group')]);
      expect((await received).map((m) => m.topic)).toEqual([scripts, group]);
    });

    it('refuses to start when Redis cannot be reached, naming it without credentials', async () => {
      const broker = instance('redis://someone:hunter2@127.0.0.1:1');
      const error = await broker.start().then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(BrokerRedisError);
      expect((error as Error).message).toMatch(/cannot reach Redis at redis:\/\/127\.0\.0\.1:1/);
      expect((error as Error).message).not.toContain('hunter2');
      await broker.stop();
    });
  },
);
