/**
 * Store broker lifecycle (start/stop, ports, users) and its pure parts: user specs, users files,
 * topic filter containment. Real sockets, free ports.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { IClientOptions, MqttClient } from 'mqtt';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { deviceClientId } from '../../bridge/contract/topics.ts';
import {
  AccessRules,
  BrokerListenError,
  filterWithin,
  loadUsersFile,
  parseUserSpec,
  StoreBroker,
  type StoreBrokerOptions,
  topicMatches,
  UserSpecError,
} from '../../broker/store-broker.ts';
import { silent } from '../support/loggers.ts';
import { MqttClients } from '../support/mqtt-clients.ts';

const CTL = { username: 'ctl', password: 'secret' };
const brokers: StoreBroker[] = [];
const clients = new MqttClients();

function broker(options: Partial<StoreBrokerOptions> = {}): StoreBroker {
  const b = new StoreBroker({
    port: 0,
    host: '127.0.0.1',
    ns: 'pos',
    users: [{ name: CTL.username, password: CTL.password, role: 'controller' }],
    logger: silent,
    ...options,
  });
  brokers.push(b);
  return b;
}

function connect(url: string, options: IClientOptions = CTL): Promise<MqttClient> {
  return clients.connect(url, options);
}

function rejection(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => {
      throw new Error('expected a rejection');
    },
    (error: unknown) => error,
  );
}

afterEach(async () => {
  await clients.closeAll();
  await Promise.all(brokers.splice(0).map((b) => b.stop()));
});

describe('store broker lifecycle', () => {
  it('stop() closes every client (TCP, WebSocket, and sockets that never sent CONNECT)', async () => {
    const b = broker({ wsPort: 0 });
    await b.start();
    const tcp = await connect(`mqtt://127.0.0.1:${b.port}`);
    const ws = await connect(`ws://127.0.0.1:${b.wsPort}`);
    const raw = net.connect(b.port, '127.0.0.1');
    await new Promise((resolve) => raw.once('connect', resolve));
    const closes = [tcp, ws].map((c) => new Promise<void>((resolve) => c.once('close', () => resolve())));
    const rawClosed = new Promise<void>((resolve) => raw.once('close', () => resolve()));
    expect(b.stats.clients).toBe(2);
    await b.stop();
    await Promise.all([...closes, rawClosed]);
    // The port is free again at once: a new broker takes it.
    const again = broker({ port: b.port });
    await again.start();
    expect(again.port).toBe(b.port);
  });

  it('names the port and the flag to change when a port is taken', async () => {
    const first = broker({ wsPort: 0 });
    await first.start();
    const error = await rejection(broker({ port: first.port }).start());
    expect(error).toBeInstanceOf(BrokerListenError);
    expect((error as Error).message).toBe(
      `port ${first.port} is already in use on 127.0.0.1: choose another port with --port (--port 0 picks a free one)`,
    );
    const flagged = await rejection(broker({ port: first.port, portFlag: '--broker-port' }).start());
    expect((flagged as Error).message).toMatch(/choose another port with --broker-port/);
    // A WebSocket port conflict names its own flag, and the TCP port taken meanwhile is released.
    const probe = broker();
    await probe.start();
    const freePort = probe.port;
    await probe.stop();
    const wsClash = broker({ port: freePort, wsPort: first.wsPort! });
    const wsError = await rejection(wsClash.start());
    expect((wsError as BrokerListenError).port).toBe(first.wsPort);
    expect((wsError as Error).message).toMatch(/with --ws-port/);
    await expect(wsClash.start()).rejects.toThrow(/cannot start: it is stopped/);
    const reuse = broker({ port: freePort });
    await reuse.start();
    expect(reuse.port).toBe(freePort);
  });

  it('refuses a second start, and stop() is idempotent and fine before start', async () => {
    const never = broker();
    await never.stop();
    const b = broker();
    await b.start();
    await expect(b.start()).rejects.toThrow(/cannot start: it is started/);
    await Promise.all([b.stop(), b.stop()]);
  });

  it('stop() during start() waits for it and leaves nothing listening', async () => {
    const probe = broker();
    await probe.start();
    const port = probe.port;
    await probe.stop();
    const b = broker({ port, wsPort: 0 });
    const starting = b.start();
    await b.stop();
    await starting;
    const again = broker({ port });
    await again.start();
    expect(again.port).toBe(port);
  });

  it('accepts users added at run time and refuses a duplicate name', async () => {
    const b = broker();
    await b.start();
    b.addUser({ name: 'reg-9', password: 'late', role: 'device' });
    const device = await connect(`mqtt://127.0.0.1:${b.port}`, {
      username: 'reg-9',
      password: 'late',
      clientId: deviceClientId('pos', 'reg-9'),
    });
    expect(device.connected).toBe(true);
    expect(() => b.addUser({ name: 'reg-9', password: 'other', role: 'observer' })).toThrow(
      /reg-9 given twice/,
    );
  });

  it('refuses to start with invalid users, before taking a port', async () => {
    const dup = broker({
      users: [
        { name: 'x', password: 'a', role: 'controller' },
        { name: 'x', password: 'b', role: 'observer' },
      ],
    });
    await expect(dup.start()).rejects.toThrow(UserSpecError);
    const badDevice = broker({ users: [{ name: 'reg 1', password: 'a', role: 'device' }] });
    await expect(badDevice.start()).rejects.toThrow(/device id/);
    expect(badDevice.wsPort).toBeUndefined();
    expect(() => badDevice.port).toThrow(/not started/);
  });
});

describe('user specs and users files', () => {
  const dir = mkdtempSync(join(tmpdir(), 'regbridge-users-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('splits NAME:PASSWORD:ROLE on the first and the last colon', () => {
    expect(parseUserSpec('hq:pa:ss:word:controller')).toEqual({
      name: 'hq',
      password: 'pa:ss:word',
      role: 'controller',
    });
    expect(parseUserSpec('reg-1:x:device')).toEqual({ name: 'reg-1', password: 'x', role: 'device' });
  });

  it('refuses bad specs without echoing the password', () => {
    for (const [spec, message] of [
      ['hq:secret', /expected NAME:PASSWORD:ROLE/],
      [':secret:controller', /expected NAME:PASSWORD:ROLE/],
      ['hq::controller', /password is empty/],
      ['hq:secret:admin', /role "admin"/],
      ['reg/1:secret:device', /must match/],
    ] as const) {
      const error = (() => {
        try {
          parseUserSpec(spec);
        } catch (e) {
          return e as Error;
        }
        throw new Error(`accepted ${spec}`);
      })();
      expect(error.message).toMatch(message);
      expect(error.message).not.toContain('secret');
    }
  });

  it('reads NAME:PASSWORD:ROLE lines, skipping comments and blank lines', () => {
    const path = join(dir, 'users.txt');
    writeFileSync(path, '# store 042\r\nhq:a:b:controller\n\n  reg-1:pw:device  \nwatch:pw:observer\n');
    expect(loadUsersFile(path)).toEqual([
      { name: 'hq', password: 'a:b', role: 'controller' },
      { name: 'reg-1', password: 'pw', role: 'device' },
      { name: 'watch', password: 'pw', role: 'observer' },
    ]);
    writeFileSync(path, 'hq:a:controller\nreg-1:secret:cashier\n');
    expect(() => loadUsersFile(path)).toThrow(
      `${path}:2: user reg-1: role "cashier" is not one of device, controller, observer`,
    );
    writeFileSync(path, 'hq:a:controller\nhq:b:observer\n');
    expect(() => loadUsersFile(path)).toThrow(/hq appears twice/);
  });

  it('reads a JSON array of users', () => {
    const path = join(dir, 'users.json');
    writeFileSync(path, JSON.stringify([{ name: 'reg-2', password: 'p', role: 'device' }]));
    expect(loadUsersFile(path)).toEqual([{ name: 'reg-2', password: 'p', role: 'device' }]);
    writeFileSync(path, JSON.stringify([{ name: 'reg-2', password: 'secret' }]));
    expect(() => loadUsersFile(path)).toThrow(`${path}[0]: user reg-2: role undefined is not one of`);
    expect(() => loadUsersFile(join(dir, 'missing'))).toThrow(/cannot read users file .*missing \(ENOENT\)/);
  });
});

describe('topic filters', () => {
  it('matches topic names like MQTT does', () => {
    expect(topicMatches('a/+/c', 'a/b/c')).toBe(true);
    expect(topicMatches('a/#', 'a')).toBe(true);
    expect(topicMatches('a/#', 'a/b/c')).toBe(true);
    expect(topicMatches('a/+', 'a/b/c')).toBe(false);
    expect(topicMatches('a/b', 'a/b/c')).toBe(false);
  });

  it('answers publish checks per role and name with its cached rules', () => {
    const rules = new AccessRules('s/1');
    const status = { topic: 's/1/devices/d1/tasks/7/status', retain: true, payloadLength: 10 };
    // Twice each, so the second answer comes from the compiled rules cached for (role, name).
    for (let round = 0; round < 2; round += 1) {
      expect(rules.canPublish('device', 'd1', status)).toEqual({ allowed: true });
      expect(rules.canPublish('device', 'd2', status)).toEqual({
        allowed: false,
        reason: 'role device may not publish to this topic',
      });
      expect(rules.canPublish('controller', 'd1', status)).toEqual({
        allowed: false,
        reason: 'role controller may only clear this topic (zero-byte retained message)',
      });
      expect(rules.canPublish('controller', 'd1', { ...status, payloadLength: 0 })).toEqual({
        allowed: true,
      });
      expect(
        rules.canPublish('device', 'd1', {
          topic: 's/1/devices/d1/replies/r',
          retain: true,
          payloadLength: 2,
        }),
      ).toEqual({
        allowed: false,
        reason: 'messages on this topic must not be retained',
      });
      // Contract 3.1: no device publishes under <ns>/replies/ or another register's replies.
      for (const topic of ['s/1/replies/x/1', 's/1/devices/d2/replies/r'])
        expect(rules.canPublish('device', 'd1', { topic, retain: false, payloadLength: 2 })).toEqual({
          allowed: false,
          reason: 'role device may not publish to this topic',
        });
      expect(rules.canPublish('observer', 'o', { ...status, retain: false })).toEqual({
        allowed: false,
        reason: 'role observer may not publish to this topic',
      });
    }
  });

  it('knows when one filter lies within another', () => {
    expect(filterWithin('s/1/devices/+/state', 's/1/#')).toBe(true);
    expect(filterWithin('s/1/#', 's/1/#')).toBe(true);
    expect(filterWithin('s/1', 's/1/#')).toBe(true);
    expect(filterWithin('s/groups/all/scripts', 's/groups/+/scripts')).toBe(true);
    expect(filterWithin('s/groups/+/scripts', 's/groups/+/scripts')).toBe(true);
    expect(filterWithin('s/groups/#', 's/groups/+/scripts')).toBe(false);
    expect(filterWithin('s/devices/+/state', 's/devices/d1/#')).toBe(false);
    expect(filterWithin('#', 's/#')).toBe(false);
    expect(filterWithin('+/1/#', 's/1/#')).toBe(false);
    expect(filterWithin('s', 's/groups/+/scripts')).toBe(false);
  });
});
