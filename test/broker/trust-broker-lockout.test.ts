/**
 * Issue 26 item 13 on the store broker (docs/decisions/login-lockout.md): failing as a device
 * user from many addresses cannot keep that register off the broker, neither at the address it
 * logged in from nor at a fresh one, while guesses spread over addresses stay bounded to one per
 * address per window past the name's limit. A real broker on a socket (StoreBroker, and
 * `regbridge broker` as a child process); peers on other loopback addresses (127.0.0.x as the
 * local address) stand for other machines.
 */
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import { StoreBroker } from '../../broker/store-broker.ts';
import { startCli, stopAll, stopCli, waitForOutput } from '../support/cli-process.ts';
import { brokerLogger } from '../support/loggers.ts';
import { RawClient } from '../support/raw-mqtt.ts';

const MAX = 3;
let broker: StoreBroker;
const opened: RawClient[] = [];

beforeAll(async () => {
  broker = new StoreBroker({
    port: 0,
    host: '127.0.0.1',
    ns: 'pos',
    users: [
      { name: 'till-1', password: 'till-1-long-random-password', role: 'device' },
      { name: 'till-2', password: 'till-2-long-random-password', role: 'device' },
    ],
    logger: brokerLogger,
    limits: { loginMaxFailures: MAX, loginWindowMs: 60_000 },
  });
  await broker.start();
});
afterEach(async () => {
  await Promise.all(opened.splice(0).map((client) => client.drop()));
});
afterAll(() => broker?.stop());
afterEach(stopAll);

/** The CONNACK return code of one login from `from` (a loopback address) to `port`, with the register's own client id. */
async function login(
  from: string,
  username: string,
  password: string,
  port = broker.port,
): Promise<number | undefined> {
  const clientId = `regbridge_pos_${username}`;
  const { client, connack } = await RawClient.connected(port, { clientId, username, password }, from);
  opened.push(client);
  return connack.returnCode;
}

it('an attacker failing as till-1 from many addresses cannot keep till-1 off the broker', async () => {
  const password = 'till-1-long-random-password';
  // till-1 logs in from its own address, then goes away.
  expect(await login('127.0.4.1', 'till-1', password)).toBe(0);
  await Promise.all(opened.splice(0).map((client) => client.drop()));
  // The attacker fails as till-1 from more addresses than the name's limit, twice each.
  const attackers = ['127.0.4.11', '127.0.4.12', '127.0.4.13', '127.0.4.14', '127.0.4.15'];
  const codes: (number | undefined)[] = [];
  for (const from of attackers) codes.push(await login(from, 'till-1', 'guess'));
  for (const from of attackers) codes.push(await login(from, 'till-1', 'guess-again'));
  // Before the limit every guess is checked (4); past it, each address had its one guess per
  // window (the first round) and its second is refused unchecked (3), right password included.
  expect(codes).toEqual([4, 4, 4, 4, 4, 3, 3, 3, 3, 3]);
  expect(await login('127.0.4.11', 'till-1', password)).toBe(3);
  // till-1 gets in from its own address, where it logged in before...
  expect(await login('127.0.4.1', 'till-1', password)).toBe(0);
  // ...and from an address it never used (a new network, a restarted router).
  expect(await login('127.0.4.2', 'till-1', password)).toBe(0);
});

it('distributed guessing past the limit: one guess per fresh address, the register at home unaffected', async () => {
  const password = 'till-2-long-random-password';
  expect(await login('127.0.5.1', 'till-2', password)).toBe(0);
  for (let i = 0; i < MAX; i++) expect(await login(`127.0.5.${10 + i}`, 'till-2', 'guess')).toBe(4);
  // Over the name's limit: a fresh address is heard once (its guess checked: 4), then refused (3).
  for (const from of ['127.0.5.20', '127.0.5.21']) {
    expect(await login(from, 'till-2', 'guess')).toBe(4);
    expect(await login(from, 'till-2', 'guess')).toBe(3);
    expect(await login(from, 'till-2', password)).toBe(3);
  }
  // The address till-2 logged in from is never refused by the name's limit, even after failing there.
  expect(await login('127.0.5.1', 'till-2', 'typo')).toBe(4);
  expect(await login('127.0.5.1', 'till-2', password)).toBe(0);
});

it('regbridge broker (a child process): failing as till-1 elsewhere cannot keep till-1 off it', async () => {
  const password = 'till-1-long-random-password';
  const cli = startCli(['broker', '--port', '0', '--host', '127.0.0.1', '--auth-max-failures', '2'], {
    REGBRIDGE_USER: `till-1:${password}:device`,
  });
  const port = Number(await waitForOutput(cli, /listening on mqtt:\/\/127\.0\.0\.1:(\d+)/));
  expect(await login('127.0.6.1', 'till-1', password, port)).toBe(0);
  await Promise.all(opened.splice(0).map((client) => client.drop()));
  for (const from of ['127.0.6.11', '127.0.6.12', '127.0.6.13'])
    expect(await login(from, 'till-1', 'guess', port)).toBe(4);
  expect(await login('127.0.6.11', 'till-1', 'guess', port)).toBe(3);
  expect(await login('127.0.6.1', 'till-1', password, port)).toBe(0);
  await Promise.all(opened.splice(0).map((client) => client.drop()));
  expect(await login('127.0.6.2', 'till-1', password, port)).toBe(0);
  await Promise.all(opened.splice(0).map((client) => client.drop()));
  expect(await stopCli(cli)).toBe(0);
});
