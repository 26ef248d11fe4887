/**
 * docs/topology.md's head-office hub: a Mosquitto bridge dialing a store broker as a
 * `controller`. State and task status come in with their retain flag kept (Mosquitto's bridge
 * mode, `try_private true`), scripts go out, the registers' replies (`<ns>/devices/+/replies/#`) come in.
 * Skipped only when the mosquitto binary is missing.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import mqtt, { type IClientOptions, type MqttClient } from 'mqtt';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deviceClientId } from '../../bridge/contract/topics.ts';
import { StoreBroker } from '../../broker/store-broker.ts';
import { skipWithout } from '../support/binaries.ts';
import { silent } from '../support/loggers.ts';
import { freePort } from '../support/ports.ts';

const NS = 'stores/042';

const clients: MqttClient[] = [];

async function connect(url: string, options: IClientOptions = {}): Promise<MqttClient> {
  const deadline = Date.now() + 10_000;
  // The hub may still be starting: retry refused TCP connections until the deadline.
  for (;;) {
    const client = mqtt.connect(url, { reconnectPeriod: 0, ...options });
    try {
      await new Promise<void>((resolve, reject) => {
        client.once('connect', () => resolve());
        client.once('error', reject);
      });
      clients.push(client);
      return client;
    } catch (error) {
      client.end(true);
      if (Date.now() > deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
}

function next(
  client: MqttClient,
  payload: string,
  timeoutMs = 10_000,
): Promise<{ topic: string; retain: boolean }> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no message ${payload}`)), timeoutMs);
    const onMessage = (topic: string, body: Buffer, packet: { retain: boolean }): void => {
      if (body.toString() !== payload) return;
      clearTimeout(timer);
      client.off('message', onMessage);
      resolve({ topic, retain: packet.retain });
    };
    client.on('message', onMessage);
  });
}

// Skipped only outside CI when the binary is missing; CI (.ci/run) installs it, so there it always runs.
describe.skipIf(skipWithout(['mosquitto'], 'a Mosquitto hub bridged to a store broker'))(
  'a Mosquitto hub bridged to a store broker',
  () => {
    let store: StoreBroker;
    let hub: ChildProcess | undefined;
    let hubUrl: string;
    let device: MqttClient;
    const dir = mkdtempSync(join(tmpdir(), 'regbridge-hub-'));

    beforeAll(async () => {
      store = new StoreBroker({
        port: 0,
        host: '127.0.0.1',
        ns: NS,
        users: [
          { name: 'hq-bridge', password: 'bridge-secret', role: 'controller' },
          { name: 'reg-1', password: 'reg-secret', role: 'device' },
        ],
        logger: silent,
      });
      await store.start();
      device = await connect(`mqtt://127.0.0.1:${store.port}`, {
        username: 'reg-1',
        password: 'reg-secret',
        clientId: deviceClientId(NS, 'reg-1'),
      });
      await device.publishAsync(`${NS}/devices/reg-1/state`, 'v1', { qos: 1, retain: true });
      const hubPort = await freePort();
      hubUrl = `mqtt://127.0.0.1:${hubPort}`;
      const config = join(dir, 'hub.conf');
      writeFileSync(
        config,
        [
          `listener ${hubPort} 127.0.0.1`,
          'allow_anonymous true',
          'persistence false',
          'connection store-042',
          `address 127.0.0.1:${store.port}`,
          'remote_username hq-bridge',
          'remote_password bridge-secret',
          'remote_clientid hq-bridge-042',
          'bridge_protocol_version mqttv311',
          'try_private true',
          'notifications false',
          'cleansession false',
          `topic ${NS}/devices/+/state in 1`,
          `topic ${NS}/devices/+/tasks/+/status in 1`,
          `topic ${NS}/devices/+/replies/# in 1`,
          `topic ${NS}/devices/+/scripts out 1`,
          `topic ${NS}/groups/+/scripts out 1`,
          '',
        ].join('\n'),
      );
      hub = spawn('mosquitto', ['-c', config], { stdio: 'ignore' });
    });

    afterAll(async () => {
      await Promise.all(clients.splice(0).map((c) => c.endAsync(true)));
      if (hub && hub.exitCode === null) {
        const exited = new Promise((resolve) => hub?.once('exit', resolve));
        hub.kill('SIGTERM');
        await exited;
      }
      await store.stop();
      rmSync(dir, { recursive: true, force: true });
    });

    it('brings state in, retained, and keeps it retained for live updates too', async () => {
      const hq = await connect(hubUrl);
      const v1 = next(hq, 'v1');
      await hq.subscribeAsync(`${NS}/#`, { qos: 1 });
      await v1; // the store's retained snapshot, once the bridge has subscribed
      const v2 = next(hq, 'v2');
      await device.publishAsync(`${NS}/devices/reg-1/state`, 'v2', { qos: 1, retain: true });
      await v2;
      const late = await connect(hubUrl);
      const retained = next(late, 'v2');
      await late.subscribeAsync(`${NS}/devices/+/state`, { qos: 1 });
      expect(await retained).toEqual({ topic: `${NS}/devices/reg-1/state`, retain: true });
    });

    it('carries scripts out to the store and replies back in', async () => {
      await device.subscribeAsync(`${NS}/groups/all/scripts`, { qos: 1 });
      const hq = await connect(hubUrl);
      await hq.subscribeAsync(`${NS}/devices/+/replies/#`, { qos: 1 });
      const script = next(device, '{"script":"PRINT hi"}');
      await hq.publishAsync(`${NS}/groups/all/scripts`, '{"script":"PRINT hi"}', { qos: 1 });
      expect((await script).topic).toBe(`${NS}/groups/all/scripts`);
      const reply = next(hq, '{"requestId":"r1"}');
      await device.publishAsync(`${NS}/devices/reg-1/replies/r1`, '{"requestId":"r1"}', { qos: 1 });
      expect(await reply).toEqual({ topic: `${NS}/devices/reg-1/replies/r1`, retain: false });
    });
  },
);
