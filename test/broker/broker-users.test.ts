/**
 * Users files with scrypt hashes (`regbridge hash-password`) and their reload on SIGHUP without
 * dropping clients whose entry did not change (docs/broker.md, "Users file"): hashing in process,
 * then `regbridge hash-password` and `regbridge broker` as real child processes.
 */

import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { deviceClientId } from '../../bridge/contract/topics.ts';
import { parseUserSpec, UserDirectory, UserSpecError } from '../../broker/users.ts';
import { hashPassword, parsePasswordHash } from '../../src/auth/password-hash.ts';
import { RawClient } from '../support/raw-mqtt.ts';
import { until } from '../support/waits.ts';

const BIN = fileURLToPath(new URL('../../bin/regbridge.js', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'regbridge-users-'));
const children: ChildProcess[] = [];
const opened: RawClient[] = [];

afterEach(async () => {
  await Promise.all(opened.splice(0).map((c) => c.drop()));
  for (const child of children.splice(0)) if (child.exitCode === null) child.kill('SIGKILL');
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function spawnCli(args: string[], input?: string) {
  const child = spawn(process.execPath, [BIN, ...args], { stdio: ['pipe', 'pipe', 'pipe'] });
  children.push(child);
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  if (input !== undefined) child.stdin?.end(input);
  const exit = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, stdout: () => stdout, stderr: () => stderr, exit };
}

async function login(port: number, username: string, password: string) {
  const result = await RawClient.connected(port, {
    // A device user connects with its own client id only (contract 6.1).
    clientId: username.startsWith('reg-') ? deviceClientId('pos', username) : `${username}-${Math.random()}`,
    username,
    password,
  });
  opened.push(result.client);
  return result;
}

describe('scrypt password hashes', () => {
  it('a users entry may hold a hash instead of the password; only the password matches it', async () => {
    const hash = await hashPassword('pa:ss wörd');
    expect(hash).toMatch(/^\$scrypt\$ln=14,r=8,p=1\$[A-Za-z0-9+/]+\$[A-Za-z0-9+/]+$/);
    expect(parsePasswordHash(hash)?.hash.length).toBe(32);
    const users = new UserDirectory([
      parseUserSpec(`reg-1:${hash}:device`),
      parseUserSpec('hq:plain:controller'),
    ]);
    expect((await users.verify('reg-1', Buffer.from('pa:ss wörd')))?.name).toBe('reg-1');
    expect(await users.verify('reg-1', Buffer.from('pa:ss word'))).toBeUndefined();
    expect(await users.verify('reg-1', Buffer.from(hash))).toBeUndefined(); // the hash is no password
    expect(await users.verify('reg-1', undefined)).toBeUndefined();
    expect((await users.verify('hq', Buffer.from('plain')))?.name).toBe('hq');
    expect(await users.verify('nobody', Buffer.from('x'))).toBeUndefined();
  });

  it('a malformed hash is a configuration error that does not echo it', () => {
    const bad = '$scrypt$ln=40,r=8,p=1$c2FsdHNhbHRzYWx0c2FsdA$aGFzaGhhc2hoYXNoaGFzaGhhc2hoYXNoaGFzaGhhc2g';
    expect(() => parseUserSpec(`reg-1:${bad}:device`)).toThrow(UserSpecError);
    expect(() => parseUserSpec(`reg-1:${bad}:device`)).toThrow(/reg-1: the password hash is malformed/);
    try {
      parseUserSpec(`reg-1:${bad}:device`);
    } catch (error) {
      expect((error as Error).message).not.toContain('c2FsdHNhbHRzYWx0c2FsdA');
    }
  });
});

describe('regbridge hash-password and SIGHUP (child processes)', () => {
  it('prints a hash that a broker users file accepts; SIGHUP reloads users and drops only changed entries', async () => {
    const hashed = spawnCli(['hash-password'], 's3cret:pw\n');
    expect(await hashed.exit).toBe(0);
    const hash = hashed.stdout().trim();
    expect(hash).toMatch(/^\$scrypt\$/);
    expect(hashed.stdout() + hashed.stderr()).not.toContain('s3cret');

    const file = join(dir, 'users.txt');
    writeFileSync(
      file,
      [`reg-1:${hash}:device`, 'reg-2:old-pw:device', 'hq:hq-pw:controller', ''].join('\n'),
    );
    const broker = spawnCli([
      'broker',
      '--port',
      '0',
      '--host',
      '127.0.0.1',
      '--users',
      file,
      '--log-level',
      'info',
    ]);
    let port = 0;
    await until(
      () => {
        port = Number(/^broker listening on mqtt:\/\/[^\s]+:(\d+)$/m.exec(broker.stdout())?.[1] ?? 0);
        return port > 0 || broker.child.exitCode !== null;
      },
      'the broker to listen',
      20_000,
    );
    expect(port, broker.stderr()).toBeGreaterThan(0);

    const reg1 = await login(port, 'reg-1', 's3cret:pw');
    expect(reg1.connack.returnCode).toBe(0);
    const reg2 = await login(port, 'reg-2', 'old-pw');
    expect(reg2.connack.returnCode).toBe(0);
    const hq = await login(port, 'hq', 'hq-pw');
    expect(hq.connack.returnCode).toBe(0);

    // reg-2's password changes, hq goes, reg-3 comes; reg-1's line is the same.
    writeFileSync(file, [`reg-1:${hash}:device`, 'reg-2:new-pw:device', 'reg-3:pw3:device', ''].join('\n'));
    broker.child.kill('SIGHUP');
    await Promise.all([reg2.client.waitClosed(), hq.client.waitClosed()]);
    await until(() => broker.stderr().includes('users reloaded'), 'the reload log line');
    await reg1.client.settle(); // still connected
    expect(reg1.client.closed).toBe(false);
    expect((await login(port, 'reg-2', 'old-pw')).connack.returnCode).toBe(4);
    expect((await login(port, 'reg-2', 'new-pw')).connack.returnCode).toBe(0);
    expect((await login(port, 'reg-3', 'pw3')).connack.returnCode).toBe(0);
    expect((await login(port, 'hq', 'hq-pw')).connack.returnCode).toBe(4);

    // A broken file changes nothing: logged, the users stay as they are.
    writeFileSync(file, 'reg-1:only-two-fields\n');
    broker.child.kill('SIGHUP');
    await until(() => broker.stderr().includes('users file not reloaded'), 'the refusal log line');
    expect((await login(port, 'reg-3', 'pw3')).connack.returnCode).toBe(0);
    await reg1.client.settle();
    expect(broker.stderr()).not.toMatch(/s3cret|new-pw|pw3|hq-pw/);

    broker.child.kill('SIGTERM');
    expect(await broker.exit).toBe(0);
  }, 90_000); // three child processes on a loaded machine
});
