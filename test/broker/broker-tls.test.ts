/**
 * MQTT over TLS on the store broker (docs/broker.md, "TLS"): a private CA, server and client
 * certificates made by the test (openssl). Passwords over TLS; device certificates (`clientCa`):
 * the CN is the device, no password; a certificate of another CA and an expired one are refused.
 */

import type { IClientOptions, MqttClient } from 'mqtt';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { deviceClientId } from '../../bridge/contract/topics.ts';
import { StoreBroker } from '../../broker/store-broker.ts';
import { type Pem, TestPki } from '../support/certs.ts';
import { silent } from '../support/loggers.ts';
import { MqttClients } from '../support/mqtt-clients.ts';

const NS = 'pos';
const pki = new TestPki();
let ca: Pem;
let broker: StoreBroker;
let url: string;
const clients = new MqttClients();

beforeAll(async () => {
  ca = pki.ca('store-ca');
  const server = pki.issue('store-ca', 'server', 'localhost', { server: true });
  pki.ca('other-ca');
  broker = new StoreBroker({
    port: 0,
    host: '127.0.0.1',
    ns: NS,
    users: [
      { name: 'hq', password: 'hq-pw', role: 'controller' },
      { name: 'd2', password: 'd2-pw', role: 'device' },
    ],
    logger: silent,
    tls: { port: 0, cert: server.cert, key: server.key, clientCa: ca.cert },
  });
  await broker.start();
  url = `mqtts://127.0.0.1:${broker.tlsPort}`;
});
afterEach(async () => {
  await clients.closeAll();
});
afterAll(async () => {
  await broker?.stop();
  pki.remove();
});

/** Resolves on CONNACK 0; rejects with the CONNACK code, or the error, or 'closed'. */
function connect(target: string, options: IClientOptions): Promise<MqttClient> {
  return clients.connect(target, options);
}

async function refusal(target: string, options: IClientOptions): Promise<string> {
  try {
    await connect(target, options);
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    return typeof code === 'number' ? `CONNACK ${code}` : (error as Error).message;
  }
  throw new Error('the connection was accepted');
}

describe('MQTT over TLS', () => {
  it('serves passwords over TLS with a certificate of the private CA; a client without that CA refuses the server', async () => {
    const hq = await connect(url, { ca: ca.cert, username: 'hq', password: 'hq-pw' });
    const granted = await hq.subscribeAsync(`${NS}/replies/hq/x`, { qos: 1 });
    expect(granted[0]?.qos).toBe(1);
    const untrusted = await refusal(url, { username: 'hq', password: 'hq-pw', rejectUnauthorized: true });
    expect(untrusted).toMatch(/self-signed|unable to (get|verify)/);
    // Without a certificate the password is still required.
    expect(await refusal(url, { ca: ca.cert })).toBe('CONNACK 5');
    expect(await refusal(url, { ca: ca.cert, username: 'hq', password: 'wrong' })).toBe('CONNACK 4');
  });

  it('a device certificate logs in as the device named by its CN, without a password, with its ACL', async () => {
    const device = pki.issue('store-ca', 'dev-d1', 'd1');
    const hq = await connect(url, { ca: ca.cert, username: 'hq', password: 'hq-pw' });
    await hq.subscribeAsync(`${NS}/devices/+/state`, { qos: 1 });
    const state = new Promise<string>((resolve) =>
      hq.on('message', (topic, payload) => {
        if (topic === `${NS}/devices/d1/state`) resolve(payload.toString());
      }),
    );
    const d1 = await connect(url, {
      ca: ca.cert,
      cert: device.cert,
      key: device.key,
      clientId: deviceClientId(NS, 'd1'),
    });
    // The certificate's device, like a device user, holds its own client id only (contract 6.1).
    expect(
      await refusal(url, { ca: ca.cert, cert: device.cert, key: device.key, clientId: 'd1-other' }),
    ).toBe('CONNACK 5');
    await d1.publishAsync(`${NS}/devices/d1/state`, '{"online":true}', { qos: 1, retain: true });
    expect(await state).toBe('{"online":true}');
    // It is d1, a device: d2's topics are not its own.
    const refused = await d1.subscribeAsync(`${NS}/devices/d2/#`, { qos: 1 }).catch((e) => e.packet?.granted);
    expect(refused).toEqual([128]);
    // A user name that is not the CN is refused; the CN itself is fine.
    expect(
      await refusal(url, {
        ca: ca.cert,
        cert: device.cert,
        key: device.key,
        username: 'd2',
        password: 'd2-pw',
      }),
    ).toBe('CONNACK 5');
    await connect(url, {
      ca: ca.cert,
      cert: device.cert,
      key: device.key,
      username: 'd1',
      clientId: deviceClientId(NS, 'd1'),
    });
  });

  it('refuses a client certificate of another CA and an expired one before any MQTT packet', async () => {
    const foreign = pki.issue('other-ca', 'foreign-d1', 'd1');
    const expired = pki.issue('store-ca', 'expired-d1', 'd1', { days: -1 });
    for (const [what, pem] of [
      ['another CA', foreign],
      ['expired', expired],
    ] as const) {
      const outcome = await refusal(url, { ca: ca.cert, cert: pem.cert, key: pem.key });
      expect(outcome, what).not.toMatch(/^CONNACK/);
      // Even with the right password for a user: the bad certificate ends the connection.
      const withPassword = await refusal(url, {
        ca: ca.cert,
        cert: pem.cert,
        key: pem.key,
        username: 'hq',
        password: 'hq-pw',
      });
      expect(withPassword, what).not.toMatch(/^CONNACK/);
    }
  });

  it('a certificate whose CN is not a device id is refused with CONNACK 5', async () => {
    const odd = pki.issue('store-ca', 'odd', 'not a device id');
    expect(await refusal(url, { ca: ca.cert, cert: odd.cert, key: odd.key })).toBe('CONNACK 5');
  });

  it('keeps the plain TCP listener, where a certificate means nothing', async () => {
    const plain = `mqtt://127.0.0.1:${broker.port}`;
    await connect(plain, { username: 'd2', password: 'd2-pw', clientId: deviceClientId(NS, 'd2') });
    expect(await refusal(plain, {})).toBe('CONNACK 5');
  });
});
