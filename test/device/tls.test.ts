/**
 * TLS for the device (docs/security.md, "Deploying with TLS"): `serve --tls-cert --tls-key`
 * answers HTTPS, `run --ca` (DeviceClient's `ca`) trusts a private CA, `--mqtt-ca` lets the
 * device's bridge reach an mqtts:// broker signed by one; a client with the wrong CA, or none, is
 * refused. The CAs and certificates are made by the test with openssl.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { chmodSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningDevice, startDevice } from '../../cli/device.ts';
import { runScript } from '../../cli/run-command.ts';
import { parseServeConfig } from '../../cli/serve-config.ts';
import { directBridge } from '../support/bridge-device.ts';
import { silent } from '../support/loggers.ts';
import { freePort, waitForPort } from '../support/ports.ts';

const dir = mkdtempSync(join(tmpdir(), 'regbridge-tls-'));
const file = (name: string): string => join(dir, name);
const stops: Array<() => unknown> = [];

function openssl(...args: string[]): void {
  execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
}

/** A CA (`<name>-ca.pem`, `<name>-ca.key`) and a server certificate for localhost and 127.0.0.1 signed by it. */
function makeCa(name: string): void {
  openssl(
    'req',
    '-x509',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-days',
    '2',
    '-subj',
    `/CN=${name} test CA`,
    '-keyout',
    `${name}-ca.key`,
    '-out',
    `${name}-ca.pem`,
  );
}

function makeServerCert(ca: string, name: string): void {
  openssl(
    'req',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-subj',
    '/CN=localhost',
    '-keyout',
    `${name}.key`,
    '-out',
    `${name}.csr`,
  );
  writeFileSync(file(`${name}.ext`), 'subjectAltName=DNS:localhost,IP:127.0.0.1\n');
  openssl(
    'x509',
    '-req',
    '-in',
    `${name}.csr`,
    '-CA',
    `${ca}-ca.pem`,
    '-CAkey',
    `${ca}-ca.key`,
    '-CAcreateserial',
    '-days',
    '2',
    '-extfile',
    `${name}.ext`,
    '-out',
    `${name}.pem`,
  );
}

beforeAll(() => {
  makeCa('store');
  makeCa('other');
  makeServerCert('store', 'server');
  writeFileSync(file('script.txt'), 'PRINT over https');
  // mosquitto started as root reads its files as the user `mosquitto`; these are test keys.
  chmodSync(dir, 0o755);
  for (const name of readdirSync(dir)) chmodSync(file(name), 0o644);
});
afterAll(async () => {
  for (const stop of stops.reverse()) await stop();
  rmSync(dir, { recursive: true, force: true });
});

function io() {
  const out: string[] = [];
  const err: string[] = [];
  return {
    out,
    err,
    io: { readStdin: async () => '', out: (t: string) => out.push(t), err: (t: string) => err.push(t) },
  };
}

describe('HTTPS: serve --tls-cert --tls-key, run --ca', () => {
  let device: RunningDevice;
  beforeAll(async () => {
    device = await startDevice(
      parseServeConfig({
        port: 0,
        host: '127.0.0.1',
        mqtt: false,
        users: ['alice:alice-password-1'],
        tlsCert: file('server.pem'),
        tlsKey: file('server.key'),
        logLevel: 'silent',
      }),
      { logger: silent },
    );
    stops.push(() => device.stop());
  });

  const run = (ca: string | undefined) => {
    const captured = io();
    return runScript(
      {
        file: file('script.txt'),
        url: `https://localhost:${device.httpPort}`,
        user: { name: 'alice', password: 'alice-password-1' },
        timeout: 10_000,
        async: false,
        logLevel: 'silent',
        ...(ca && { ca }),
      },
      captured.io,
    ).then((code) => ({ code, out: captured.out.join(''), err: captured.err.join('') }));
  };

  it('runs a script over HTTPS with the store CA', async () => {
    expect(await run(file('store-ca.pem'))).toEqual({ code: 0, out: 'over https\n', err: '' });
  });

  it('refuses the device with another CA, or with none', async () => {
    for (const ca of [file('other-ca.pem'), undefined]) {
      const result = await run(ca);
      expect(result.code).toBe(2);
      expect(result.err).toMatch(/certificate/i);
    }
  });

  it('does not answer plain HTTP on the HTTPS port', async () => {
    await expect(fetch(`http://127.0.0.1:${device.httpPort}/health`)).rejects.toThrow();
  });
});

it('serve refuses a certificate without key, and files it cannot read, naming the flags', async () => {
  const child = spawn(
    process.execPath,
    [
      'bin/regbridge.js',
      'serve',
      '--no-mqtt',
      '--tls-cert',
      file('missing.pem'),
      '--mqtt-ca',
      file('script.txt'),
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
  expect(code).toBe(2);
  expect(stderr).toContain('--tls-cert: needs --tls-key too');
  expect(stderr).toMatch(/--tls-cert.*cannot read .*missing\.pem \(ENOENT\)/);
  expect(stderr).toMatch(/--mqtt-ca.*script\.txt holds no PEM CERTIFICATE block/);
});

describe('--mqtt-ca: the bridge on an mqtts:// broker signed by a private CA', () => {
  let port: number;
  beforeAll(async () => {
    port = await freePort();
    writeFileSync(
      file('mosquitto.conf'),
      [
        `listener ${port} 127.0.0.1`,
        'allow_anonymous true',
        `cafile ${file('store-ca.pem')}`,
        `certfile ${file('server.pem')}`,
        `keyfile ${file('server.key')}`,
        '',
      ].join('\n'),
    );
    const mosquitto: ChildProcess = spawn('mosquitto', ['-c', file('mosquitto.conf')], { stdio: 'ignore' });
    stops.push(() => {
      mosquitto.kill('SIGKILL');
    });
    await waitForPort(port);
  });

  it('connects with the store CA', async () => {
    const device = await startDevice(
      parseServeConfig({
        port: 0,
        host: '127.0.0.1',
        auth: 'off',
        deviceId: 'tls-till',
        mqttUrl: `mqtts://localhost:${port}`,
        mqttCa: file('store-ca.pem'),
        logLevel: 'silent',
      }),
      { logger: silent },
    );
    stops.push(() => device.stop());
    expect(device.bridge!.health()).toMatchObject({ state: 'connected', url: `mqtts://localhost:${port}` });
  });

  it('is refused with another CA: never connected, the certificate error logged', async () => {
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _encoding, done) {
        lines.push(chunk.toString());
        done();
      },
    });
    const direct = directBridge({
      url: `mqtts://localhost:${port}`,
      ns: 'pos',
      deviceId: 'tls-wrong',
      ca: readFileSync(file('other-ca.pem')),
      startTimeoutMs: 1500,
      protocolVersion: 'auto',
      logger: pino({ level: 'warn' }, sink),
    });
    stops.push(() => direct.stop());
    await direct.bridge.start();
    expect(direct.bridge.health().state).not.toBe('connected');
    expect(lines.join('')).toMatch(/certificate/i);
  });
});
