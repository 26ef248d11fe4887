/**
 * TLS of the long-running commands as child processes (docs/security.md, "Deploying with TLS";
 * docs/broker.md, "TLS"): `serve --broker-tls-port` (MQTT over TLS on the embedded broker with
 * serve's --tls-cert/--tls-key, device certificates with --broker-client-ca), `serve` HTTPS with
 * an expired certificate, and the controller service over HTTPS. The CAs and certificates are
 * made by the test with openssl (test/support/certs.ts); a wrong CA, plain HTTP and expired
 * certificates are refused.
 */
import { writeFileSync } from 'node:fs';
import { request } from 'node:https';
import { join } from 'node:path';
import type { IClientOptions, MqttClient } from 'mqtt';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { deviceClientId } from '../../bridge/contract/topics.ts';
import { type Pem, TestPki } from '../support/certs.ts';
import {
  type CliProcess,
  CONTROLLER_ON_FREE_PORTS,
  SERVE_WITHOUT_AUTH,
  startCli,
  stopAll,
  stopCli,
  waitForOutput,
  waitForPrinted,
} from '../support/cli-process.ts';
import { runCli } from '../support/controller-cli.ts';
import { MqttClients } from '../support/mqtt-clients.ts';

const pki = new TestPki();
let ca: Pem;
let otherCa: Pem;
let server: Pem;
const clients = new MqttClients();

beforeAll(() => {
  ca = pki.ca('store-ca');
  otherCa = pki.ca('other-ca');
  server = pki.issue('store-ca', 'server', 'localhost', { server: true });
});
afterEach(async () => {
  await clients.closeAll();
});
afterAll(() => {
  stopAll();
  pki.remove();
});

interface Answer {
  status: number;
  body: string;
}

/** An HTTPS request trusting `trusted` only; rejects with the TLS error (its code) when refused. */
function https(
  url: string,
  trusted: Buffer,
  options: { method?: string; body?: unknown; token?: string } = {},
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const body = options.body === undefined ? undefined : JSON.stringify(options.body);
    const req = request(
      url,
      {
        method: options.method ?? 'GET',
        ca: trusted,
        headers: {
          ...(body !== undefined && { 'content-type': 'application/json' }),
          ...(options.token !== undefined && { authorization: `Bearer ${options.token}` }),
        },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          text += chunk;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

function refusalCode(promise: Promise<unknown>): Promise<string> {
  return promise.then(
    () => {
      throw new Error('the request was answered');
    },
    (error: NodeJS.ErrnoException) => error.code ?? error.message,
  );
}

/** Resolves on CONNACK 0; rejects with the CONNACK code, the TLS error, or 'closed'. */
function connect(url: string, options: IClientOptions): Promise<MqttClient> {
  return clients.connect(url, options);
}

async function mqttRefusal(url: string, options: IClientOptions): Promise<string> {
  try {
    await connect(url, options);
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    return typeof code === 'number' ? `CONNACK ${code}` : ((code as string) ?? (error as Error).message);
  }
  throw new Error('the connection was accepted');
}

/** Waits (bounded) until the process logged `text` on stderr. */
function logged(started: CliProcess, text: string): Promise<void> {
  return waitForPrinted(started, () => started.stderr().includes(text), `log line ${text}`, 10_000);
}

/** `serve` on a free loopback port without REST auth, as `deviceId` (the MQTT flags follow). */
const deviceWithoutAuth = (deviceId: string): string[] => [...SERVE_WITHOUT_AUTH, '--device-id', deviceId];

describe('serve --broker-tls-port: MQTT over TLS on the embedded broker', () => {
  let serve: CliProcess;
  let tlsUrl: string;
  let httpsUrl: string;

  beforeAll(async () => {
    serve = startCli([
      'serve',
      '--port',
      '0',
      '--host',
      '127.0.0.1',
      '--broker-port',
      '0',
      '--broker-host',
      '127.0.0.1',
      '--broker-tls-port',
      '0',
      '--broker-client-ca',
      ca.certPath,
      '--tls-cert',
      server.certPath,
      '--tls-key',
      server.keyPath,
      '--device-id',
      'till-tls',
      '--user',
      'hq:hq-password-1',
    ]);
    const tlsPort = await waitForOutput(
      serve,
      /embedded MQTT broker over TLS on mqtts:\/\/127\.0\.0\.1:(\d+)/,
    );
    const httpPort = await waitForOutput(serve, /listening on https:\/\/127\.0\.0\.1:(\d+)/);
    tlsUrl = `mqtts://localhost:${tlsPort}`;
    httpsUrl = `https://localhost:${httpPort}`;
  });
  afterAll(async () => {
    expect(await stopCli(serve)).toBe(0);
  });

  it('prints the mqtts:// line; a controller with the CA runs a script on the device over TLS', async () => {
    const hq = await connect(tlsUrl, { ca: ca.cert, username: 'hq', password: 'hq-password-1' });
    const finished = new Promise<Record<string, unknown>>((resolve) => {
      hq.on('message', (_topic, payload) => {
        const status = JSON.parse(payload.toString()) as Record<string, unknown>;
        if (status.status === 'FINISHED') resolve(status);
      });
    });
    await hq.subscribeAsync('pos/devices/till-tls/tasks/+/status', { qos: 1 });
    await hq.publishAsync(
      'pos/devices/till-tls/scripts',
      JSON.stringify({ script: 'PRINT over mqtts', requestId: 'tls-1' }),
      { qos: 1 },
    );
    expect(await finished).toMatchObject({ status: 'FINISHED', report: 'over mqtts' });
    // The same certificate answers HTTPS on --port.
    expect((await https(`${httpsUrl}/health`, ca.cert)).status).toBe(200);
  });

  it('a device certificate of --broker-client-ca logs in as the device of its CN', async () => {
    const device = pki.issue('store-ca', 'reg-9', 'reg-9');
    const client = await connect(tlsUrl, {
      ca: ca.cert,
      cert: device.cert,
      key: device.key,
      clientId: deviceClientId('pos', 'reg-9'),
    });
    expect((await client.subscribeAsync('pos/devices/reg-9/scripts', { qos: 1 }))[0]?.qos).toBe(1);
    // Its ACL is a device's: another device's topics are refused (granted 0x80; mqtt.js rejects).
    await expect(client.subscribeAsync('pos/devices/till-tls/scripts', { qos: 1 })).rejects.toThrow(
      /Subscribe error/,
    );
  });

  it('another device logs in by its certificate: serve --mqtt-url mqtts:// --mqtt-ca --mqtt-cert --mqtt-key', async () => {
    const own = pki.issue('store-ca', 'till-2', 'till-2');
    const device = startCli([
      ...deviceWithoutAuth('till-2'),
      '--mqtt-url',
      tlsUrl,
      '--mqtt-ca',
      ca.certPath,
      '--mqtt-cert',
      own.certPath,
      '--mqtt-key',
      own.keyPath,
    ]);
    const port = await waitForOutput(device, /listening on http:\/\/127\.0\.0\.1:(\d+)/);
    const health = (await (await fetch(`http://127.0.0.1:${port}/health`)).json()) as { mqtt: unknown };
    expect(health.mqtt).toMatchObject({ state: 'connected', url: tlsUrl });
    // It is the device till-2 on that broker: a controller's script for it runs there.
    const hq = await connect(tlsUrl, { ca: ca.cert, username: 'hq', password: 'hq-password-1' });
    const finished = new Promise<Record<string, unknown>>((resolve) => {
      hq.on('message', (_topic, payload) => {
        const status = JSON.parse(payload.toString()) as Record<string, unknown>;
        if (status.status === 'FINISHED' && status.requestId === 'cert-1') resolve(status);
      });
    });
    await hq.subscribeAsync('pos/devices/till-2/tasks/+/status', { qos: 1 });
    await hq.publishAsync(
      'pos/devices/till-2/scripts',
      JSON.stringify({ script: 'PRINT by certificate', requestId: 'cert-1' }),
      { qos: 1 },
    );
    expect(await finished).toMatchObject({ deviceId: 'till-2', report: 'by certificate' });
    expect(await stopCli(device)).toBe(0);
  });

  it('a device trusting another CA never connects, and logs the certificate error', async () => {
    const device = startCli([
      ...deviceWithoutAuth('till-3'),
      '--mqtt-url',
      `mqtts://hq:hq-password-1@localhost:${new URL(tlsUrl).port}`,
      '--mqtt-ca',
      otherCa.certPath,
    ]);
    const port = await waitForOutput(device, /listening on http:\/\/127\.0\.0\.1:(\d+)/);
    const health = (await (await fetch(`http://127.0.0.1:${port}/health`)).json()) as {
      mqtt: { state: string };
    };
    expect(health.mqtt.state).not.toBe('connected');
    expect(device.stderr()).toMatch(/certificate/i);
    expect(await stopCli(device)).toBe(0);
  });

  it('fanout, watch and the controller service reach the TLS broker with --mqtt-ca; another CA is refused', async () => {
    const secured = `mqtts://hq:hq-password-1@localhost:${new URL(tlsUrl).port}`;
    const scriptFile = join(pki.dir, 'x-report.txt');
    writeFileSync(scriptFile, 'PRINT fanned out over TLS\n');
    const fanout = await runCli([
      'fanout',
      scriptFile,
      '--mqtt-url',
      secured,
      '--mqtt-ca',
      ca.certPath,
      '--to',
      'till-tls',
      '--json',
    ]);
    expect(fanout.stderr).toBe('');
    expect(fanout.code).toBe(0);
    expect(JSON.parse(fanout.stdout)).toMatchObject({
      results: [{ deviceId: 'till-tls', status: 'FINISHED', report: 'fanned out over TLS' }],
    });
    const watch = await runCli(['watch', '--once', '--mqtt-url', secured, '--mqtt-ca', ca.certPath]);
    expect(watch.code).toBe(0);
    expect(watch.stdout).toMatch(/^till-tls\s+yes\s/m);
    const refused = await runCli(['watch', '--once', '--mqtt-url', secured, '--mqtt-ca', otherCa.certPath]);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/certificate/i);

    const controller = startCli([
      'controller',
      '--port',
      '0',
      '--host',
      '127.0.0.1',
      '--db',
      ':memory:',
      '--user',
      'boss:boss-password-1',
      '--mqtt-url',
      secured,
      '--mqtt-ca',
      ca.certPath,
    ]);
    const port = await waitForOutput(controller, /controller listening on http:\/\/127\.0\.0\.1:(\d+)/);
    const login = await fetch(`http://127.0.0.1:${port}/api/authenticate`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ userName: 'boss', password: 'boss-password-1' }),
    });
    const { token } = (await login.json()) as { token: string };
    const devices = await fetch(`http://127.0.0.1:${port}/api/devices`, {
      headers: { authorization: `Bearer ${token}` },
    });
    expect(JSON.stringify(await devices.json())).toContain('"till-tls"');
    expect(await stopCli(controller)).toBe(0);
  });

  it('a client trusting another CA refuses the broker; an expired device certificate is refused', async () => {
    expect(
      await mqttRefusal(tlsUrl, { ca: otherCa.cert, username: 'hq', password: 'hq-password-1' }),
    ).toMatch(/SELF_SIGNED|UNABLE_TO_VERIFY|UNABLE_TO_GET_ISSUER/);
    const expired = pki.issue('store-ca', 'reg-9-expired', 'reg-9', { days: -1 });
    const outcome = await mqttRefusal(tlsUrl, { ca: ca.cert, cert: expired.cert, key: expired.key });
    expect(outcome).not.toMatch(/^CONNACK/); // ended after the handshake, before any MQTT packet
    await logged(serve, 'client certificate refused: CERT_HAS_EXPIRED');
    expect(serve.child.exitCode).toBeNull();
  });
});

describe('serve TLS configuration', () => {
  it('--broker-tls-port needs --tls-cert/--tls-key and the embedded broker, --broker-client-ca the TLS port; --mqtt-cert names this device', async () => {
    const missing = startCli(['serve', '--broker-tls-port', '0', '--broker-client-ca', ca.certPath]);
    expect((await missing.exit).code).toBe(2);
    expect(missing.stderr()).toContain('--broker-tls-port: needs --tls-cert and --tls-key');
    const external = startCli([
      'serve',
      '--mqtt-url',
      'mqtt://127.0.0.1:1',
      '--tls-cert',
      server.certPath,
      '--tls-key',
      server.keyPath,
      '--broker-tls-port',
      '0',
    ]);
    expect((await external.exit).code).toBe(2);
    expect(external.stderr()).toContain('--broker-tls-port: only with the embedded broker');
    const noPort = startCli(['serve', '--no-mqtt', '--broker-client-ca', ca.certPath]);
    expect((await noPort.exit).code).toBe(2);
    expect(noPort.stderr()).toContain('--broker-client-ca: needs --broker-tls-port');
    const mismatched = startCli([
      'serve',
      '--no-mqtt',
      '--tls-cert',
      server.certPath,
      '--tls-key',
      ca.keyPath,
    ]);
    expect((await mismatched.exit).code).toBe(2);
    expect(mismatched.stderr()).toContain('--tls-key: cannot be used with --tls-cert');
    const wrongDevice = pki.issue('store-ca', 'till-4', 'till-4');
    const cn = startCli([
      'serve',
      '--device-id',
      'till-5',
      '--mqtt-url',
      'mqtts://127.0.0.1:1',
      '--mqtt-cert',
      wrongDevice.certPath,
      '--mqtt-key',
      ca.keyPath,
    ]);
    expect((await cn.exit).code).toBe(2);
    expect(cn.stderr()).toContain("--mqtt-cert: the certificate's CN is till-4, not this device's id till-5");
    expect(cn.stderr()).toContain('--mqtt-key: cannot be used with --mqtt-cert');
  });
});

describe('serve HTTPS with an expired certificate', () => {
  it('a client with the CA refuses the device: CERT_HAS_EXPIRED', async () => {
    const expired = pki.issue('store-ca', 'server-expired', 'localhost', { server: true, days: -1 });
    const serve = startCli([
      'serve',
      '--no-mqtt',
      '--port',
      '0',
      '--host',
      '127.0.0.1',
      '--tls-cert',
      expired.certPath,
      '--tls-key',
      expired.keyPath,
    ]);
    const port = await waitForOutput(serve, /listening on https:\/\/127\.0\.0\.1:(\d+)/);
    expect(await refusalCode(https(`https://localhost:${port}/health`, ca.cert))).toBe('CERT_HAS_EXPIRED');
    // The same device with a valid certificate is reached with that CA (test/device/tls.test.ts).
    expect(await stopCli(serve)).toBe(0);
  });
});

describe('regbridge controller over HTTPS', () => {
  it('answers HTTPS with the CA; another CA and plain HTTP are refused', async () => {
    const controller = startCli([
      ...CONTROLLER_ON_FREE_PORTS,
      '--user',
      'hq:hq-password-1',
      '--tls-cert',
      server.certPath,
      '--tls-key',
      server.keyPath,
    ]);
    const port = await waitForOutput(controller, /controller listening on https:\/\/127\.0\.0\.1:(\d+)/);
    const base = `https://localhost:${port}`;
    const login = await https(`${base}/api/authenticate`, ca.cert, {
      method: 'POST',
      body: { userName: 'hq', password: 'hq-password-1' },
    });
    expect(login.status).toBe(200);
    const { token } = JSON.parse(login.body) as { token: string };
    const devices = await https(`${base}/api/devices`, ca.cert, { token });
    expect(devices.status).toBe(200);
    expect(await refusalCode(https(`${base}/health`, otherCa.cert))).toBe('UNABLE_TO_VERIFY_LEAF_SIGNATURE');
    await expect(fetch(`http://127.0.0.1:${port}/health`)).rejects.toThrow();
    expect(await stopCli(controller)).toBe(0);
  });
});
