/**
 * Issue 26 item 13 (docs/decisions/login-lockout.md): failing as a user from many addresses
 * cannot keep that user out of an address it never used, on the device (`serve`, a real child
 * process over real HTTP from loopback addresses 127.0.0.x); over the name's limit each address
 * gets one guess per window. The controller's twin is in test/controller/controller-login-limits.test.ts.
 */
import { request } from 'node:http';
import { afterEach, expect, it } from 'vitest';
import { SERVE_ON_FREE_PORTS, startCli, stopAll, stopCli, waitForOutput } from '../support/cli-process.ts';

afterEach(stopAll);

function authenticate(port: string, from: string, userName: string, password: string): Promise<number> {
  const payload = JSON.stringify({ userName, password });
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port: Number(port),
        path: '/api/authenticate',
        method: 'POST',
        localAddress: from,
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) },
      },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      },
    );
    req.on('error', reject);
    req.end(payload);
  });
}

it('serve: an attacker failing as pos from many addresses cannot lock pos out of a new address', async () => {
  const password = 'pos-long-random-password';
  const serve = startCli([...SERVE_ON_FREE_PORTS, '--no-mqtt', '--auth-user-max-failures', '3'], {
    REGBRIDGE_USER: `pos:${password}`,
  });
  const port = await waitForOutput(serve, /listening on http:\/\/127\.0\.0\.1:(\d+)/);
  // Three failures from three addresses put the name over its limit.
  for (const from of ['127.0.0.11', '127.0.0.12', '127.0.0.13'])
    expect(await authenticate(port, from, 'pos', 'guess')).toBe(401);
  // Each address that failed is refused now, also with the right password...
  expect(await authenticate(port, '127.0.0.11', 'pos', password)).toBe(429);
  // ...a fresh one gets a single guess...
  expect(await authenticate(port, '127.0.0.14', 'pos', 'guess')).toBe(401);
  expect(await authenticate(port, '127.0.0.14', 'pos', 'guess-again')).toBe(429);
  // ...and pos, at an address it never used, gets in.
  expect(await authenticate(port, '127.0.0.20', 'pos', password)).toBe(200);
  expect(await stopCli(serve)).toBe(0);
});
