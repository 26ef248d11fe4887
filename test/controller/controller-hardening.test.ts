/**
 * The controller service's answers and files (issue 26 item 14): every HTTP answer carries the
 * Content-Security-Policy, nosniff and no-referrer headers (the dashboard under that policy is
 * driven in Chromium by test/dashboard/dashboard-browser.test.ts), and the history file with its -wal and
 * -shm is readable by its owner only, also one created readable by an older version.
 */
import { randomUUID } from 'node:crypto';
import { chmodSync, closeSync, existsSync, openSync, statSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningControllerService } from '../../cli/controller-service.ts';
import { brokersByName, type RunningBroker } from '../support/brokers.ts';
import { api, login, startService } from '../support/controller-service.ts';

const ns = `stores/hard${randomUUID().slice(0, 6)}`;
let broker: RunningBroker;
let dir: string;

beforeAll(async () => {
  broker = await brokersByName.embedded.start(ns);
  dir = await mkdtemp(join(tmpdir(), 'regbridge-hardening-'));
});

afterAll(async () => {
  await broker?.stop();
  await rm(dir, { recursive: true, force: true });
});

const HEADERS = {
  'content-security-policy': "default-src 'self'; frame-ancestors 'none'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
};

const modeOf = (file: string): number => statSync(file).mode & 0o777;

describe('controller service hardening', () => {
  let service: RunningControllerService;
  const db = () => join(dir, 'history.db');

  afterAll(async () => {
    await service?.stop();
  });

  it('creates the history file and its -wal and -shm 0600', async () => {
    service = await startService(broker, ns, { db: db() });
    const token = await login(service.app);
    // A write, so the WAL and its index exist.
    await api(service.app, token, 'POST', '/api/authenticate', { userName: 'admin', password: 'wrong' });
    expect(existsSync(`${db()}-wal`)).toBe(true);
    for (const file of [db(), `${db()}-wal`, `${db()}-shm`]) expect(modeOf(file), file).toBe(0o600);
  });

  it('sends the security headers on every answer over real HTTP, the policy but on /docs', async () => {
    const base = `http://127.0.0.1:${service.httpPort}`;
    for (const path of ['/', '/dashboard.js', '/api/devices', '/health', '/metrics', '/no-such-route']) {
      const response = await fetch(`${base}${path}`);
      for (const [name, value] of Object.entries(HEADERS))
        expect(response.headers.get(name), `${path} ${name}`).toBe(value);
    }
    const docs = await fetch(`${base}/docs/`);
    expect(docs.headers.get('x-content-type-options')).toBe('nosniff');
    expect(docs.headers.get('content-security-policy')).toBeNull();
  });

  it('narrows a history file left readable by others to 0600', async () => {
    await service.stop();
    const file = join(dir, 'old.db');
    closeSync(openSync(file, 'w', 0o644));
    chmodSync(file, 0o644);
    service = await startService(broker, ns, { db: file });
    expect(modeOf(file)).toBe(0o600);
  });
});
