/**
 * Failed logins are limited per address and per user name; a success for one user name never
 * resets the count of another, nor the address's (docs/security.md, "Limits"). Issue 10 item 3:
 * on the old code a caller knowing one valid login interleaved it and guessed without limit.
 */
import { afterEach, beforeEach, expect, it } from 'vitest';
import { startTestApp, type TestApp, USER } from '../support/http.ts';

const BOB = { userName: 'bob', password: 'bob-knows-his-own-password' };
let t: TestApp;
let nowMs = 1_700_000_000_000;
const clock = { now: () => nowMs, advance: (ms: number) => (nowMs += ms) };

beforeEach(() => {
  nowMs = 1_700_000_000_000;
});
afterEach(async () => {
  await t?.close();
});

const users = [`${USER.userName}:${USER.password}`, `${BOB.userName}:${BOB.password}`];

function attempt(userName: string, password: string, remoteAddress = '10.0.0.1') {
  return t.app.inject({
    method: 'POST',
    url: '/api/authenticate',
    remoteAddress,
    payload: { userName, password },
  });
}

it('a valid login interleaved between guesses does not reset the address count', async () => {
  t = await startTestApp({ users, authMaxFailures: 3, authUserMaxFailures: 100 }, { now: clock.now });
  const statuses: number[] = [];
  for (let i = 0; i < 10; i += 1) {
    statuses.push((await attempt(BOB.userName, BOB.password)).statusCode);
    statuses.push((await attempt(USER.userName, `guess-${i}`)).statusCode);
  }
  // bob, guess, bob, guess, bob, guess (3 failures), then everything from this address is 429.
  expect(statuses.slice(0, 6)).toEqual([200, 401, 200, 401, 200, 401]);
  expect(new Set(statuses.slice(6))).toEqual(new Set([429]));
  const refused = await attempt(BOB.userName, BOB.password);
  expect(refused.json()).toMatchObject({ code: 'TOO_MANY_ATTEMPTS' });
  expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
});

it('over the user name limit, each address gets one guess at that name per window; the user still gets in', async () => {
  t = await startTestApp(
    { users, authMaxFailures: 100, authUserMaxFailures: 4, authWindow: '60s' },
    { now: clock.now },
  );
  // Under the name's limit an address may fail several times (its own limit is 100 here).
  expect((await attempt(USER.userName, 'guess-a', '10.0.1.0')).statusCode).toBe(401);
  expect((await attempt(USER.userName, 'guess-b', '10.0.1.0')).statusCode).toBe(401);
  for (let i = 1; i < 3; i += 1) {
    expect((await attempt(USER.userName, `guess-${i}`, `10.0.1.${i}`)).statusCode).toBe(401);
  }
  // Over it: an address that failed as alice is refused, even with the right password.
  const refused = await attempt(USER.userName, USER.password, '10.0.1.1');
  expect(refused.statusCode).toBe(429);
  expect(refused.headers['retry-after']).toBe('60');
  expect(refused.json()).toEqual({
    statusCode: 429,
    error: 'Too Many Requests',
    code: 'TOO_MANY_ATTEMPTS',
    message: 'Too many failed authentications for this user name; try again in 60 s',
  });
  // A fresh address gets one guess: a wrong one is counted, and that address is refused next.
  expect((await attempt(USER.userName, 'guess-9', '10.0.2.9')).statusCode).toBe(401);
  expect((await attempt(USER.userName, 'guess-10', '10.0.2.9')).statusCode).toBe(429);
  // The user, at an address that has not failed as alice, gets in: no lock-out.
  expect((await attempt(USER.userName, USER.password, '10.0.2.1')).statusCode).toBe(200);
  // Another user name is not affected, from any address.
  expect((await attempt(BOB.userName, BOB.password, '10.0.1.0')).statusCode).toBe(200);
  clock.advance(60_000);
  expect((await attempt(USER.userName, USER.password, '10.0.1.1')).statusCode).toBe(200);
});

it('a success clears only the failures of the user name that logged in', async () => {
  t = await startTestApp({ users, authMaxFailures: 100, authUserMaxFailures: 3 }, { now: clock.now });
  await attempt(USER.userName, 'wrong', '10.0.0.1');
  await attempt(USER.userName, 'wrong', '10.0.0.2');
  await attempt(BOB.userName, 'wrong', '10.0.0.3');
  await attempt(BOB.userName, 'wrong', '10.0.0.3');
  expect((await attempt(USER.userName, USER.password, '10.0.0.1')).statusCode).toBe(200);
  // alice starts again from zero; bob's two failures stand.
  await attempt(USER.userName, 'wrong', '10.0.0.1');
  await attempt(USER.userName, 'wrong', '10.0.0.1');
  expect((await attempt(USER.userName, USER.password, '10.0.0.1')).statusCode).toBe(200);
  // bob's third failure puts his name over its limit: 10.0.0.3 and 10.0.0.4 failed as bob.
  expect((await attempt(BOB.userName, 'wrong', '10.0.0.4')).statusCode).toBe(401);
  expect((await attempt(BOB.userName, BOB.password, '10.0.0.3')).statusCode).toBe(429);
  expect((await attempt(BOB.userName, BOB.password, '10.0.0.5')).statusCode).toBe(200);
});
