/** Passwords and tokens never reach a log line (team brief), whatever the request looks like. */
import { expect, it } from 'vitest';
import { bearer, login, startTestApp, USER } from '../support/http.ts';

it('no log line contains a password or a token, even at trace level', async () => {
  const t = await startTestApp({ authMaxFailures: 2 });
  try {
    const wrongPassword = 'hunter2-WRONG-password';
    const tokens: string[] = [];
    tokens.push(await login(t.app));
    const viaGet = await t.app.inject({ method: 'GET', url: '/api/authenticate', payload: USER });
    tokens.push((viaGet.json() as { token: string }).token);
    const auth = bearer(tokens[0]!);
    await t.app.inject({
      method: 'POST',
      url: '/api/vendor-script',
      headers: auth,
      payload: { vendorScript: 'PRINT x' },
    });
    await t.app.inject({ url: '/api/tasks', headers: bearer(tokens[1]!) });
    await t.app.inject({ url: '/api/tasks', headers: { authorization: `Bearer ${tokens[0]}x` } });
    await t.app.inject({
      method: 'POST',
      url: '/api/authenticate',
      payload: { userName: USER.userName, password: wrongPassword },
    });
    await t.app.inject({
      method: 'POST',
      url: '/api/authenticate',
      payload: { userName: 'nobody', password: wrongPassword },
    });
    await t.app.inject({
      method: 'POST',
      url: '/api/authenticate',
      payload: { userName: USER.userName, password: wrongPassword },
    });
    // Malformed JSON whose parse error would quote the password.
    await t.app.inject({
      method: 'POST',
      url: '/api/authenticate',
      headers: { 'content-type': 'application/json' },
      payload: `{"userName":"alice","password":"${wrongPassword}"`,
    });
    await t.app.inject({
      method: 'POST',
      url: '/api/authenticate',
      payload: { userName: 3, password: wrongPassword },
    });

    expect(t.logs.length).toBeGreaterThan(10);
    expect(t.logs.some((line) => line.includes('"msg":"authenticated"'))).toBe(true);
    expect(t.logs.some((line) => line.includes('"msg":"authentication refused"'))).toBe(true);
    for (const line of t.logs) {
      expect(line).not.toContain(USER.password);
      expect(line).not.toContain(wrongPassword);
      for (const token of tokens) expect(line).not.toContain(token);
    }
  } finally {
    await t.close();
  }
});

it('a password typed into the user name field never reaches a log (issue 10 item 9)', async () => {
  const t = await startTestApp({ authMaxFailures: 2 });
  try {
    const typedIntoUserField = 'Pa55-typed-in-the-wrong-field!';
    for (const method of ['GET', 'POST'] as const) {
      const response = await t.app.inject({
        method,
        url: '/api/authenticate',
        payload: { userName: typedIntoUserField, password: '' },
      });
      expect(response.statusCode).toBe(401);
    }
    // The third from this address is refused by the limiter: that path logs nothing of it either.
    await t.app.inject({
      method: 'POST',
      url: '/api/authenticate',
      payload: { userName: typedIntoUserField, password: 'x' },
    });
    const refusals = t.logs.filter((line) => line.includes('"msg":"authentication refused"'));
    expect(refusals).toHaveLength(3);
    // The same attempted name has the same digest, so an operator can still tell repeats apart.
    const digests = refusals.map((line) => (JSON.parse(line) as { userNameDigest: string }).userNameDigest);
    expect(digests[0]).toMatch(/^[0-9a-f]{16}$/);
    expect(new Set(digests).size).toBe(1);
    expect(JSON.parse(refusals[0]!)).toMatchObject({ knownUser: false });
    for (const line of t.logs) expect(line).not.toContain(typedIntoUserField);
  } finally {
    await t.close();
  }
});
