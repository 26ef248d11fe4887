/**
 * `regbridge broker` as a child process (README "Command line"): flags and REGBRIDGE_<FLAG>
 * variables, the printed ports, configuration errors (exit 2, no stack), SIGTERM (exit 0).
 */

import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import mqtt, { type MqttClient } from 'mqtt';
import { afterEach, describe, expect, it } from 'vitest';
import { deviceClientId } from '../../bridge/contract/topics.ts';
import { TestPki } from '../support/certs.ts';
import { MqttClients } from '../support/mqtt-clients.ts';
import { publish, RawClient } from '../support/raw-mqtt.ts';
import { until } from '../support/waits.ts';

const BIN = fileURLToPath(new URL('../../bin/regbridge.js', import.meta.url));
const children: ChildProcess[] = [];
const clients = new MqttClients();

interface Run {
  child: ChildProcess;
  stdout: () => string;
  stderr: () => string;
  exit: Promise<number | null>;
}

function run(args: string[], env: Record<string, string> = {}): Run {
  const child = spawn(process.execPath, [BIN, 'broker', ...args], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exit = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, stdout: () => stdout, stderr: () => stderr, exit };
}

/** Waits for the plain `broker listening on ...` lines and returns the ports. */
async function listening(r: Run, timeoutMs = 20_000): Promise<{ port: number; wsPort?: number }> {
  const deadline = Date.now() + timeoutMs;
  // The two lines may arrive in separate chunks: with --ws-port, wait for both.
  const wantsWs = r.child.spawnargs.includes('--ws-port');
  for (;;) {
    const tcp = /^broker listening on mqtt:\/\/[^\s]+:(\d+)$/m.exec(r.stdout());
    const ws = /^broker listening on ws:\/\/[^\s]+:(\d+)$/m.exec(r.stdout());
    if (tcp && (ws || !wantsWs)) {
      return { port: Number(tcp[1]), ...(ws && { wsPort: Number(ws[1]) }) };
    }
    if (r.child.exitCode !== null || Date.now() > deadline) {
      throw new Error(`broker did not start:\n${r.stdout()}\n${r.stderr()}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

function connect(url: string, username: string, password: string): Promise<MqttClient> {
  return clients.connect(url, { username, password });
}

afterEach(async () => {
  await clients.closeAll();
  for (const child of children.splice(0)) if (child.exitCode === null) child.kill('SIGKILL');
});

describe('regbridge broker', () => {
  it('prints its ports, accepts a --user, and exits 0 on SIGTERM', async () => {
    const r = run(['--port', '0', '--host', '127.0.0.1', '--ws-port', '0', '--user', 'c:p:w:controller']);
    const { port, wsPort } = await listening(r);
    expect(wsPort).toBeGreaterThan(0);
    // Human output on stdout only; the JSON log line (stderr, not a terminal) carries the same
    // ports, and no password. The two streams are separate, so their order cannot flip.
    expect(r.stdout().trim().split('\n')).toEqual([
      `broker listening on mqtt://127.0.0.1:${port}`,
      `broker listening on ws://127.0.0.1:${wsPort}`,
    ]);
    await until(() => r.stderr().includes('broker listening'), 'the log line');
    const logLine = r
      .stderr()
      .split('\n')
      .find((line) => line.startsWith('{') && line.includes('broker listening'));
    expect(JSON.parse(logLine!)).toMatchObject({
      port,
      wsPort,
      msg: expect.stringMatching(/^broker listening on mqtt:/),
    });
    expect(r.stdout() + r.stderr()).not.toContain('p:w');
    const client = await connect(`mqtt://127.0.0.1:${port}`, 'c', 'p:w');
    const closed = new Promise<void>((resolve) => client.once('close', () => resolve()));
    r.child.kill('SIGTERM');
    expect(await r.exit).toBe(0);
    await closed;
  });

  it('takes its flags from REGBRIDGE_<FLAG> variables', async () => {
    const r = run([], {
      REGBRIDGE_PORT: '0',
      REGBRIDGE_HOST: '127.0.0.1',
      REGBRIDGE_NS: 'stores/042',
      REGBRIDGE_USER: 'hq:pw:controller,reg-1:pw:device',
      REGBRIDGE_LOG_LEVEL: 'warn',
    });
    const { port, wsPort } = await listening(r);
    expect(wsPort).toBeUndefined();
    const hq = await connect(`mqtt://127.0.0.1:${port}`, 'hq', 'pw');
    const granted = await hq.subscribeAsync('stores/042/#', { qos: 1 });
    expect(granted[0]?.qos).toBe(1);
    // A device user connects with its own client id only (contract 6.1).
    await clients.connect(`mqtt://127.0.0.1:${port}`, {
      username: 'reg-1',
      password: 'pw',
      clientId: deviceClientId('stores/042', 'reg-1'),
    });
    r.child.kill('SIGINT');
    expect(await r.exit).toBe(0);
  });

  it('reports every configuration problem at once, without a stack, exit code 2', async () => {
    const r = run(
      [
        '--port',
        '70000',
        '--user',
        'x:secret',
        '--ns',
        'a//b',
        '--allow-anonymous',
        'maybe',
        '--max-packet-bytes',
        '10',
        '--connect-timeout',
        'soon',
        '--max-connections',
        '0',
        '--max-pending-per-address',
        '0',
        '--max-session-inflight',
        '-1',
        '--tls-cert',
        fileURLToPath(import.meta.url), // no PEM certificate in it
        '--client-ca',
        '/nonexistent/ca.pem',
      ],
      { REGBRIDGE_REDIS_URL: 'http://nope' },
    );
    expect(await r.exit).toBe(2);
    const lines = r.stderr().trim().split('\n');
    expect(lines[0]).toBe('regbridge broker: invalid configuration:');
    for (const flag of [
      '--port',
      '--user',
      '--ns',
      '--allow-anonymous',
      '--max-packet-bytes',
      '--connect-timeout',
      '--max-connections',
      '--max-pending-per-address',
      '--max-session-inflight',
    ]) {
      expect(
        lines.some((line) => line.startsWith(`  - ${flag}: `)),
        flag,
      ).toBe(true);
    }
    // A value from a variable names it and the command that read it (REGBRIDGE_PORT and
    // friends mean different things to different commands).
    expect(lines).toContain(
      '  - --redis-url (from REGBRIDGE_REDIS_URL, read by regbridge broker): expected redis://[user:password@]host:port[/db] or rediss://',
    );
    expect(lines).toContain(
      `  - --tls-cert: ${fileURLToPath(import.meta.url)} holds no PEM CERTIFICATE block`,
    );
    expect(lines).toContain('  - --client-ca: cannot read /nonexistent/ca.pem (ENOENT)');
    expect(r.stderr()).not.toContain('secret');
    expect(r.stderr()).not.toMatch(/\n\s+at /);
  });

  it('applies --max-packet-bytes, --connect-timeout, --max-connections and --max-pending-per-address', async () => {
    const r = run([
      '--port',
      '0',
      '--host',
      '127.0.0.1',
      '--user',
      'hq:pw:controller',
      '--max-packet-bytes',
      '2048',
      '--connect-timeout',
      '300ms',
      '--max-connections',
      '2',
      '--max-pending-per-address',
      '2',
    ]);
    const { port } = await listening(r);
    const silent = await RawClient.open(port);
    await silent.waitClosed(5000); // no CONNECT within 300 ms
    const { client, connack } = await RawClient.connected(port, {
      clientId: 'a',
      username: 'hq',
      password: 'pw',
    });
    expect(connack.returnCode).toBe(0);
    client.send(publish({ topic: 'pos/replies/x', payload: Buffer.alloc(2048) }));
    await client.waitClosed();
    const first = await RawClient.connected(port, { clientId: 'b', username: 'hq', password: 'pw' });
    const second = await RawClient.connected(port, { clientId: 'c', username: 'hq', password: 'pw' });
    const third = await RawClient.connected(port, { clientId: 'd', username: 'hq', password: 'pw' });
    expect(third.connack.returnCode).toBe(3); // server unavailable: two clients logged in
    await third.client.waitClosed();
    // From another address (the connections above may still be closing on the broker's side).
    const idle = [
      await RawClient.open(port, '127.0.0.1', '127.0.0.2'),
      await RawClient.open(port, '127.0.0.1', '127.0.0.2'),
    ];
    const extra = await RawClient.open(port, '127.0.0.1', '127.0.0.2');
    await extra.waitClosed();
    // Closed at once, while the idle ones opened before it still wait for their CONNECT time-out.
    expect([extra.packets, idle[0]!.closed, idle[1]!.closed]).toEqual([[], false, false]);
    await Promise.all([first.client.drop(), second.client.drop(), ...idle.map((c) => c.drop())]);
    r.child.kill('SIGTERM');
    expect(await r.exit).toBe(0);
  });

  it('serves MQTT over TLS with --tls-cert/--tls-key on --tls-port, device certificates with --client-ca', async () => {
    const pki = new TestPki();
    try {
      const ca = pki.ca('ca');
      const server = pki.issue('ca', 'server', 'localhost', { server: true });
      const device = pki.issue('ca', 'reg-7', 'reg-7');
      const r = run([
        '--port',
        '0',
        '--host',
        '127.0.0.1',
        '--user',
        'hq:pw:controller',
        '--tls-cert',
        server.certPath,
        '--tls-key',
        server.keyPath,
        '--tls-port',
        '0',
        '--client-ca',
        ca.certPath,
      ]);
      await listening(r);
      let tlsPort: number | undefined;
      await until(() => {
        tlsPort = Number(/^broker listening on mqtts:\/\/[^\s]+:(\d+)$/m.exec(r.stdout())?.[1] ?? Number.NaN);
        return Number.isInteger(tlsPort);
      }, 'the mqtts line');
      const client = mqtt.connect(`mqtts://127.0.0.1:${tlsPort}`, {
        ca: ca.cert,
        cert: device.cert,
        key: device.key,
        clientId: deviceClientId('pos', 'reg-7'),
        reconnectPeriod: 0,
      });
      clients.add(client);
      await new Promise<void>((resolve, reject) => {
        client.once('connect', () => resolve());
        client.once('error', reject);
      });
      const granted = await client.subscribeAsync('pos/devices/reg-7/scripts', { qos: 1 });
      expect(granted[0]?.qos).toBe(1);
      r.child.kill('SIGTERM');
      expect(await r.exit).toBe(0);
    } finally {
      pki.remove();
    }
  });

  it('refuses to start without users unless anonymous clients are allowed', async () => {
    const r = run(['--port', '0'], { REGBRIDGE_ALLOW_ANONYMOUS: 'false' });
    expect(await r.exit).toBe(2);
    expect(r.stderr()).toMatch(/no users: give --user NAME:PASSWORD:ROLE/);
  });

  it('names the flag when the port is taken', async () => {
    const first = run(['--port', '0', '--host', '127.0.0.1', '--allow-anonymous']);
    const { port } = await listening(first);
    const second = run(['--port', String(port), '--host', '127.0.0.1', '--allow-anonymous']);
    expect(await second.exit).toBe(2);
    expect(second.stderr().trim().split('\n').at(-1)).toBe(
      `regbridge broker: port ${port} is already in use on 127.0.0.1: choose another port with --port (--port 0 picks a free one)`,
    );
    // A failed bind is not a stop (issue 13 item 5).
    expect(second.stderr()).not.toContain('store broker stopped');
    first.child.kill('SIGTERM');
    expect(await first.exit).toBe(0);
  });
});
