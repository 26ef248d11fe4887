/**
 * Controller logins (issue 26 items 6 and 13), over real HTTP from several loopback addresses
 * (127.0.0.x) against a real broker: authenticate reads at most --auth-body-limit, failures are
 * limited per address and per user name with the device's flags and defaults, failing on purpose
 * from other addresses cannot lock a user out of an address it has logged in from, and refused
 * user names reach the log and the audit trail only as a digest, one row per name and address
 * per minute.
 */
import { randomUUID } from 'node:crypto';
import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { controllerFlags } from '../../cli/controller-config.ts';
import type { RunningControllerService } from '../../cli/controller-service.ts';
import { serveFlags } from '../../cli/serve-config.ts';
import { DEFAULT_AUTH_MAX_FAILURES } from '../../src/auth/auth-service.ts';
import { brokersByName, type RunningBroker } from '../support/brokers.ts';
import { ADMIN, api, login, startService } from '../support/controller-service.ts';
import { memoryLogger } from '../support/loggers.ts';

const ns = `stores/logins${randomUUID().slice(0, 6)}`;
let broker: RunningBroker;
let service: RunningControllerService;
const { logger, lines } = memoryLogger('info');
/** --auth-user-max-failures here: under the per-address default, so both limits show. */
const USER_LIMIT = 4;

beforeAll(async () => {
  broker = await brokersByName.embedded.start(ns);
  service = await startService(broker, ns, { logger, settings: { authUserMaxFailures: USER_LIMIT } });
});

afterAll(async () => {
  await service?.stop();
  await broker?.stop();
});

interface Reply {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: { code?: string; token?: string };
}

/** POST /api/authenticate over real HTTP from `from` (a loopback address). */
function authenticate(from: string, body: string | object): Promise<Reply> {
  const payload = typeof body === 'string' ? body : JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port: service.httpPort,
        path: '/api/authenticate',
        method: 'POST',
        localAddress: from,
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          text += chunk;
        });
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body: JSON.parse(text) }),
        );
      },
    );
    // The service may answer 413 before the body is read; the socket then closes under us.
    req.on('error', reject);
    req.end(payload);
  });
}

describe('controller logins', () => {
  it('share the device flags and defaults (one declaration)', () => {
    for (const name of ['authMaxFailures', 'authUserMaxFailures', 'authWindow', 'authBodyLimit'] as const)
      expect(controllerFlags[name], name).toBe(serveFlags[name]);
  });

  it('limit failures per address with the device default: the next is 429 with Retry-After', async () => {
    for (let i = 0; i < DEFAULT_AUTH_MAX_FAILURES; i++) {
      const answer = await authenticate('127.0.0.70', { userName: `nobody${i}`, password: 'nope' });
      expect(answer.status).toBe(401);
    }
    const locked = await authenticate('127.0.0.70', { userName: ADMIN.name, password: ADMIN.password });
    expect(locked.status).toBe(429);
    expect(Number(locked.headers['retry-after'])).toBeGreaterThan(0);
  });

  it('authenticate reads at most 4 KiB: a larger body is 413 BODY_TOO_LARGE and audited nowhere', async () => {
    const before = (await api(service.app, await login(service.app), 'GET', '/api/audit?limit=1000')).body
      .entries.length;
    const big = await authenticate('127.0.0.50', { userName: 'x'.repeat(5000), password: 'p' });
    expect(big.status).toBe(413);
    expect(big.body.code).toBe('BODY_TOO_LARGE');
    const after = (await api(service.app, await login(service.app), 'GET', '/api/audit?limit=1000')).body
      .entries;
    // Only the second login of this test was added.
    expect(after.length - before).toBe(1);
    expect(JSON.stringify(after)).not.toContain('xxxxxxxx');
  });

  it('refused user names are logged and audited as a digest, one row per name and address per minute', async () => {
    const secret = `Sup3r-secret-${randomUUID()}`;
    for (let i = 0; i < USER_LIMIT + 3; i++) {
      const answer = await authenticate('127.0.0.60', { userName: secret, password: 'nope' });
      expect(answer.status).toBe(i < USER_LIMIT ? 401 : 429);
    }
    const entries = (await api(service.app, await login(service.app), 'GET', '/api/audit?limit=1000')).body
      .entries as Array<{ user: string; address: string; action: string; detail: string }>;
    const rows = entries.filter((e) => e.action === 'login_failed' && e.address === '127.0.0.60');
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({
      user: expect.stringMatching(/^digest:[0-9a-f]{16}$/),
      detail: 'INVALID_CREDENTIALS (no such user)',
    });
    expect(JSON.stringify(entries)).not.toContain(secret);
    const refused = lines.filter((line) => line.msg === 'authentication refused');
    expect(refused.length).toBeGreaterThanOrEqual(USER_LIMIT + 3);
    expect(refused.at(-1)).toMatchObject({ userNameDigest: rows[0]!.user.slice('digest:'.length) });
    expect(JSON.stringify(lines)).not.toContain(secret);
  });

  it('failures from other addresses cannot lock admin out of an address it logged in from', async () => {
    const desk = '127.0.0.2';
    expect((await authenticate(desk, { userName: ADMIN.name, password: ADMIN.password })).status).toBe(200);
    // An attacker fails as admin from many addresses, under each address's own limit.
    for (let i = 0; i < USER_LIMIT; i++) {
      const answer = await authenticate(`127.0.0.${10 + i}`, { userName: ADMIN.name, password: 'guess' });
      expect(answer.status).toBe(401);
    }
    // The user name is over its limit now: an address that failed as admin is refused, even
    // with the right password.
    const failed = await authenticate('127.0.0.10', { userName: ADMIN.name, password: ADMIN.password });
    expect(failed.status).toBe(429);
    expect(failed.body.code).toBe('TOO_MANY_ATTEMPTS');
    expect(Number(failed.headers['retry-after'])).toBeGreaterThan(0);
    // A typo at the desk is a failure, counted against the desk's address...
    expect((await authenticate(desk, { userName: ADMIN.name, password: 'typo' })).status).toBe(401);
    // ...yet, unlike any other address that failed as admin, the desk still gets in.
    const atDesk = await authenticate(desk, { userName: ADMIN.name, password: ADMIN.password });
    expect(atDesk.status).toBe(200);
    expect(atDesk.body.token).toMatch(/^[A-Za-z0-9_-]{43}$/);
  });

  it('failures from many addresses cannot lock admin out of an address it never used: one guess per address', async () => {
    // The desk's login above cleared admin's count; the attacker fails it over the limit again.
    for (let i = 0; i < USER_LIMIT; i++) {
      const answer = await authenticate(`127.0.0.${50 + i}`, { userName: ADMIN.name, password: 'guess' });
      expect(answer.status).toBe(401);
    }
    // A fresh address gets one attempt at the name; the next from it is refused.
    const guess = await authenticate('127.0.0.40', { userName: ADMIN.name, password: 'guess' });
    expect(guess.status).toBe(401);
    const again = await authenticate('127.0.0.40', { userName: ADMIN.name, password: ADMIN.password });
    expect(again.status).toBe(429);
    expect(again.body.code).toBe('TOO_MANY_ATTEMPTS');
    // The real admin at a new desk, never used before and after a restart alike, gets in.
    const newDesk = await authenticate('127.0.0.41', { userName: ADMIN.name, password: ADMIN.password });
    expect(newDesk.status).toBe(200);
    expect(newDesk.body.token).toMatch(/^[A-Za-z0-9_-]{43}$/);
  });
});
