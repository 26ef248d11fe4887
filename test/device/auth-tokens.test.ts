/**
 * Bearer tokens, credentials and the failed-attempt limiter (docs/api.md), as units and
 * through the app with an injected clock, so expiry and windows need no sleeping.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { parseServeConfig } from '../../cli/serve-config.ts';
import { AttemptLimiter } from '../../src/auth/attempt-limiter.ts';
import { AuthService } from '../../src/auth/auth-service.ts';
import { Credentials } from '../../src/auth/credentials.ts';
import { hashPassword } from '../../src/auth/password-hash.ts';
import { isTokenShaped, TokenStore } from '../../src/auth/token-store.ts';
import { bearer, login, startTestApp, type TestApp, USER } from '../support/http.ts';

class Clock {
  ms = 1_800_000_000_000;
  readonly now = (): number => this.ms;
  advance(ms: number): void {
    this.ms += ms;
  }
}

describe('Credentials', () => {
  const credentials = new Credentials([
    { name: 'alice', password: 'pa:ss wörd' },
    { name: 'bob', password: 'x' },
  ]);

  it('accepts the right password only', async () => {
    expect(await credentials.verify('alice', 'pa:ss wörd')).toBe(true);
    expect(await credentials.verify('alice', 'pa:ss word')).toBe(false);
    expect(await credentials.verify('alice', '')).toBe(false);
    expect(await credentials.verify('bob', 'pa:ss wörd')).toBe(false);
  });

  it('refuses an unknown user whatever the password', async () => {
    expect(await credentials.verify('carol', 'x')).toBe(false);
    expect(await credentials.verify('', '')).toBe(false);
  });
});

describe('TokenStore', () => {
  it('issues opaque tokens that expire after the ttl', () => {
    const clock = new Clock();
    const store = new TokenStore({ ttlSeconds: 60, now: clock.now });
    const issued = store.issue('alice');
    expect(issued).toEqual({
      token: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/),
      tokenType: 'Bearer',
      expiresIn: 60,
    });
    expect(store.verify(issued.token)).toBe('alice');
    clock.advance(59_999);
    expect(store.verify(issued.token)).toBe('alice');
    clock.advance(1);
    expect(store.verify(issued.token)).toBeUndefined();
    expect(store.size).toBe(0);
  });

  it('prunes expired tokens when issuing', () => {
    const clock = new Clock();
    const store = new TokenStore({ ttlSeconds: 10, now: clock.now });
    for (let i = 0; i < 5; i += 1) store.issue('alice');
    clock.advance(10_000);
    store.issue('alice');
    expect(store.size).toBe(1);
  });

  it('keeps at most maxTokens live tokens, dropping the oldest', () => {
    const store = new TokenStore({ ttlSeconds: 3600, maxTokens: 3 });
    const tokens = Array.from({ length: 5 }, () => store.issue('alice').token);
    expect(store.size).toBe(3);
    expect(tokens.map((token) => store.verify(token))).toEqual([
      undefined,
      undefined,
      'alice',
      'alice',
      'alice',
    ]);
  });

  it('refuses malformed and unknown tokens', () => {
    const store = new TokenStore({ ttlSeconds: 60 });
    store.issue('alice');
    expect(store.verify('')).toBeUndefined();
    expect(store.verify('x'.repeat(43))).toBeUndefined();
    expect(store.verify('not a token')).toBeUndefined();
  });
});

describe('token shape and the Authorization header', () => {
  const base = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJ0123_-x';

  it('isTokenShaped says what ^[A-Za-z0-9_-]{43}$ says', () => {
    const pattern = /^[A-Za-z0-9_-]{43}$/;
    const samples = [base, base.slice(1), `${base}y`, '', ' '.repeat(43)];
    // Every character from U+0000 to U+00FF, and a few beyond, at each end and in the middle.
    for (let c = 0; c < 0x180; c += 1) {
      const ch = String.fromCharCode(c);
      samples.push(ch + base.slice(1), base.slice(0, 21) + ch + base.slice(22), base.slice(0, 42) + ch);
    }
    for (const sample of samples)
      expect(isTokenShaped(sample), JSON.stringify(sample)).toBe(pattern.test(sample));
  });

  it('a bearer header is read as /^Bearer +(\\S+) *$/i reads it, fast path or not', async () => {
    const auth = new AuthService({
      users: [{ name: 'u', password: 'p' }],
      enabled: true,
      tokenTtlSeconds: 60,
      maxFailures: 5,
      userMaxFailures: 5,
      windowMs: 60_000,
    });
    const { token } = await auth.authenticate('127.0.0.1', 'u', 'p');
    for (const header of [`Bearer ${token}`, `bearer ${token}`, `BEARER  ${token}`, `Bearer ${token}  `]) {
      expect(auth.check(header), header).toBe('u');
    }
    const refusals = [
      `Bearer${token}`,
      ` Bearer ${token}`,
      `Bearer ${token}\t`,
      `Bearer ${token.slice(1)}x`,
      `Basic ${token}`,
      `Bearer ${token} x`,
    ];
    for (const header of refusals) expect(() => auth.check(header), header).toThrow(/bearer|Bearer|token/);
  });
});

describe('AttemptLimiter', () => {
  it('locks an address out after maxFailures within the window, until the oldest leaves it', () => {
    const clock = new Clock();
    const limiter = new AttemptLimiter({ maxFailures: 3, windowMs: 60_000, now: clock.now });
    limiter.recordFailure('a');
    clock.advance(10_000);
    limiter.recordFailure('a');
    expect(limiter.retryAfterSeconds('a')).toBe(0);
    limiter.recordFailure('a');
    expect(limiter.retryAfterSeconds('a')).toBe(50);
    expect(limiter.retryAfterSeconds('b')).toBe(0);
    clock.advance(49_500);
    expect(limiter.retryAfterSeconds('a')).toBe(1);
    clock.advance(500);
    expect(limiter.retryAfterSeconds('a')).toBe(0);
  });

  it('a success clears the address', () => {
    const limiter = new AttemptLimiter({ maxFailures: 2, windowMs: 60_000 });
    limiter.recordFailure('a');
    limiter.recordSuccess('a');
    limiter.recordFailure('a');
    expect(limiter.retryAfterSeconds('a')).toBe(0);
  });

  it('remembers at most maxAddresses, forgetting the least recently failing', () => {
    const limiter = new AttemptLimiter({ maxFailures: 1, windowMs: 60_000, maxAddresses: 3 });
    for (const address of ['a', 'b', 'c', 'd']) limiter.recordFailure(address);
    expect(limiter.trackedAddresses).toBe(3);
    expect(limiter.retryAfterSeconds('a')).toBe(0);
    expect(limiter.retryAfterSeconds('d')).toBeGreaterThan(0);
  });

  it('keeps at most maxFailures timestamps per address', () => {
    const clock = new Clock();
    const limiter = new AttemptLimiter({ maxFailures: 2, windowMs: 60_000, now: clock.now });
    for (let i = 0; i < 100; i += 1) {
      limiter.recordFailure('a');
      clock.advance(100);
    }
    // The lock-out is measured from the older of the last two failures.
    expect(limiter.retryAfterSeconds('a')).toBe(60);
  });

  it('forgets addresses whose failures all expired', () => {
    const clock = new Clock();
    const limiter = new AttemptLimiter({ maxFailures: 5, windowMs: 1000, now: clock.now });
    limiter.recordFailure('a');
    limiter.recordFailure('b');
    clock.advance(1000);
    expect(limiter.retryAfterSeconds('a')).toBe(0);
    expect(limiter.trackedAddresses).toBe(1);
  });

  it('start() arms one sweep timer that forgets expired addresses; stop() clears it', () => {
    vi.useFakeTimers();
    try {
      const limiter = new AttemptLimiter({ maxFailures: 1, windowMs: 1000 });
      limiter.start();
      limiter.start();
      expect(vi.getTimerCount()).toBe(1);
      limiter.recordFailure('a');
      expect(limiter.trackedAddresses).toBe(1);
      vi.advanceTimersByTime(2000);
      expect(limiter.trackedAddresses).toBe(0);
      limiter.recordFailure('b');
      limiter.stop();
      expect(vi.getTimerCount()).toBe(0);
      expect(limiter.trackedAddresses).toBe(0);
    } finally {
      vi.useRealTimers();
    }
  });
});

describe('through the app', () => {
  let t: TestApp;
  const clock = new Clock();

  afterEach(async () => {
    await t.close();
  });

  it('an expired token answers UNAUTHORIZED; a fresh one works', async () => {
    t = await startTestApp({ tokenTtl: 60 }, { now: clock.now });
    const token = await login(t.app);
    expect((await t.app.inject({ url: '/api/tasks', headers: bearer(token) })).statusCode).toBe(200);
    clock.advance(60_000);
    const expired = await t.app.inject({ url: '/api/tasks', headers: bearer(token) });
    expect(expired.statusCode).toBe(401);
    expect(expired.headers['www-authenticate']).toBe('Bearer');
    expect(expired.json()).toEqual({
      statusCode: 401,
      error: 'Unauthorized',
      code: 'UNAUTHORIZED',
      message: 'Unknown or expired bearer token: authenticate again',
    });
    expect((await t.app.inject({ url: '/api/tasks', headers: bearer(await login(t.app)) })).statusCode).toBe(
      200,
    );
  });

  it('TOO_MANY_ATTEMPTS with Retry-After after authMaxFailures, per address, until the window frees', async () => {
    t = await startTestApp({ authMaxFailures: 3, authWindow: '60s' }, { now: clock.now });
    const attempt = (password: string, remoteAddress = '10.0.0.1') =>
      t.app.inject({
        method: 'POST',
        url: '/api/authenticate',
        remoteAddress,
        payload: { userName: USER.userName, password },
      });
    for (let i = 0; i < 3; i += 1) expect((await attempt('wrong')).statusCode).toBe(401);
    // Locked out: even the right password is refused, without being checked.
    const refused = await attempt(USER.password);
    expect(refused.statusCode).toBe(429);
    expect(refused.headers['retry-after']).toBe('60');
    expect(refused.json()).toEqual({
      statusCode: 429,
      error: 'Too Many Requests',
      code: 'TOO_MANY_ATTEMPTS',
      message: 'Too many failed authentications from this address; try again in 60 s',
    });
    // Another address is not affected.
    expect((await attempt(USER.password, '10.0.0.2')).statusCode).toBe(200);
    clock.advance(45_000);
    expect((await attempt(USER.password)).headers['retry-after']).toBe('15');
    clock.advance(15_000);
    expect((await attempt(USER.password)).statusCode).toBe(200);
  });

  it('invalid bodies are not counted as failed authentications', async () => {
    t = await startTestApp({ authMaxFailures: 1 }, { now: clock.now });
    for (let i = 0; i < 3; i += 1) {
      const response = await t.app.inject({
        method: 'POST',
        url: '/api/authenticate',
        payload: { userName: 'x' },
      });
      expect(response.statusCode).toBe(400);
    }
    expect((await t.app.inject({ method: 'POST', url: '/api/authenticate', payload: USER })).statusCode).toBe(
      200,
    );
  });

  it('no users configured: everyone is refused, with a warning at build', async () => {
    t = await startTestApp({ users: [] });
    const response = await t.app.inject({ method: 'POST', url: '/api/authenticate', payload: USER });
    expect(response.statusCode).toBe(401);
    expect(t.logs.some((line) => line.includes('"level":40') && line.includes('no user configured'))).toBe(
      true,
    );
  });

  it('a --user value in hash-password format is a hash on REST too: the password logs in, the hash text does not', async () => {
    const hash = await hashPassword('the-password', { ln: 10, r: 8, p: 1 });
    t = await startTestApp({ users: [`admin:${hash}`] });
    const ok = await t.app.inject({
      method: 'POST',
      url: '/api/authenticate',
      payload: { userName: 'admin', password: 'the-password' },
    });
    expect(ok.statusCode).toBe(200);
    const literal = await t.app.inject({
      method: 'POST',
      url: '/api/authenticate',
      payload: { userName: 'admin', password: hash },
    });
    expect(literal.statusCode).toBe(401);
  });

  it('a malformed hash is refused at start, never taken as a literal password', () => {
    expect(() => parseServeConfig({ deviceId: 'd', users: ['admin:$scrypt$ln=14$nope'] })).toThrow(
      'user admin: the password hash is malformed',
    );
  });
});
