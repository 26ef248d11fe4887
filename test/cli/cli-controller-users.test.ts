/**
 * `regbridge controller --users FILE` as a real child process: a `hash-password` hash logs in
 * to the REST API and to the embedded broker with the password (never with the hash text), and
 * SIGHUP reloads the file: the process lives on, the changed user's token ends, its new password
 * works on REST and MQTT, its old one on neither (docs/controller.md, "Users and roles").
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import mqtt from 'mqtt';
import { afterAll, afterEach, expect, it } from 'vitest';
import { hashPassword } from '../../src/auth/password-hash.ts';
import { CONTROLLER_ON_FREE_PORTS, startCli, stopAll, waitForOutput } from '../support/cli-process.ts';
import { until } from '../support/waits.ts';

const dir = mkdtempSync(join(tmpdir(), 'regbridge-ctl-users-'));
afterEach(() => stopAll());
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function login(port: number, userName: string, password: string): Promise<Response> {
  return fetch(`http://127.0.0.1:${port}/api/authenticate`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ userName, password }),
  });
}

/** Whether the embedded broker takes these credentials (CONNACK 0). */
async function mqttLogin(port: number, username: string, password: string): Promise<boolean> {
  const client = mqtt.connect(`mqtt://127.0.0.1:${port}`, {
    username,
    password,
    reconnectPeriod: 0,
    connectTimeout: 5000,
  });
  try {
    return await new Promise<boolean>((resolve) => {
      client.once('connect', () => resolve(true));
      client.once('error', () => resolve(false));
    });
  } finally {
    client.end(true);
  }
}

it('hashes log in with the password on REST and MQTT; SIGHUP reloads and ends changed users', async () => {
  const usersFile = join(dir, 'users');
  const [annHash, bobHash, annNewHash] = await Promise.all([
    hashPassword('ann-pw', { ln: 10, r: 8, p: 1 }),
    hashPassword('bob-pw', { ln: 10, r: 8, p: 1 }),
    hashPassword('ann-new', { ln: 10, r: 8, p: 1 }),
  ]);
  writeFileSync(usersFile, `ann:${annHash}:operator\nbob:${bobHash}:viewer\n`);
  const service = startCli([...CONTROLLER_ON_FREE_PORTS, '--users', usersFile]);
  const port = Number(await waitForOutput(service, /listening on http:\/\/127\.0\.0\.1:(\d+)/));
  const brokerPort = Number(
    await waitForOutput(service, /embedded MQTT broker on mqtt:\/\/127\.0\.0\.1:(\d+)/),
  );
  expect(service.stdout()).not.toContain('created user admin');

  expect((await login(port, 'ann', annHash)).status).toBe(401);
  const first = await login(port, 'ann', 'ann-pw');
  expect(first.status).toBe(200);
  const annToken = ((await first.json()) as { token: string }).token;
  const bobToken = ((await (await login(port, 'bob', 'bob-pw')).json()) as { token: string }).token;
  expect(await mqttLogin(brokerPort, 'ann', 'ann-pw')).toBe(true);
  expect(await mqttLogin(brokerPort, 'ann', annHash)).toBe(false);

  writeFileSync(usersFile, `ann:${annNewHash}:operator\nbob:${bobHash}:viewer\n`);
  service.child.kill('SIGHUP');
  const me = (token: string) =>
    fetch(`http://127.0.0.1:${port}/api/me`, { headers: { authorization: `Bearer ${token}` } }).then(
      (r) => r.status,
    );
  await until(async () => (await me(annToken)) === 401, "ann's token ends after SIGHUP");
  expect(await me(bobToken)).toBe(200);
  expect(service.child.exitCode).toBeNull();
  expect((await login(port, 'ann', 'ann-pw')).status).toBe(401);
  expect((await login(port, 'ann', 'ann-new')).status).toBe(200);
  expect(await mqttLogin(brokerPort, 'ann', 'ann-new')).toBe(true);
  expect(await mqttLogin(brokerPort, 'ann', 'ann-pw')).toBe(false);

  writeFileSync(usersFile, 'ann:pw:emperor\n');
  service.child.kill('SIGHUP');
  await until(() => service.stderr().includes('users file not reloaded'), 'the refused reload is logged');
  expect((await login(port, 'bob', 'bob-pw')).status).toBe(200);
});
