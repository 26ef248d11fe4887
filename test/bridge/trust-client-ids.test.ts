/**
 * Contract 6.1 against an attacker's register (issue 26 item 2): the device user `evil` tries to
 * take another register's client id and a controller's, on a real store broker, before either
 * ever connected and again after a broker restart (when the broker remembers no session). Every
 * try is refused with CONNACK 5 (not authorized), and the owners connect afterwards.
 */
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { deviceClientId } from '../../bridge/contract/topics.ts';
import { StoreBroker } from '../../broker/store-broker.ts';
import { silent } from '../support/loggers.ts';
import { RawClient } from '../support/raw-mqtt.ts';

const NS = 'stores/trust-ids';
const USERS = {
  reg1: { username: 'reg1', password: 'reg1-pw' },
  evil: { username: 'evil', password: 'evil-pw' },
  hq: { username: 'hq', password: 'hq-pw' },
} as const;
/** The client id of a head office bridge: configured, so an attacker may well know it. */
const HQ_ID = 'hq-bridge-042';

let broker: StoreBroker | undefined;
const opened: RawClient[] = [];

function start(port: number): Promise<StoreBroker> {
  const b = new StoreBroker({
    port,
    host: '127.0.0.1',
    ns: NS,
    users: [
      { name: 'reg1', password: 'reg1-pw', role: 'device' },
      { name: 'evil', password: 'evil-pw', role: 'device' },
      { name: 'hq', password: 'hq-pw', role: 'controller' },
    ],
    logger: silent,
  });
  return b.start().then(() => b);
}

async function connack(who: keyof typeof USERS, clientId: string, clean = true): Promise<number | undefined> {
  const { client, connack } = await RawClient.connected(broker!.port, { clientId, clean, ...USERS[who] });
  opened.push(client);
  return connack.returnCode;
}

afterEach(async () => {
  await Promise.all(opened.splice(0).map((client) => client.drop()));
});
afterAll(() => broker?.stop());

describe('client ids belong to users (contract 6.1)', () => {
  it("a device user holds its own client id only: another register's and a controller's are refused, before and after a restart", async () => {
    broker = await start(0);
    const port = broker.port;
    const reg1Id = deviceClientId(NS, 'reg1');
    const tries = async (): Promise<(number | undefined)[]> => [
      await connack('evil', reg1Id, false),
      await connack('evil', reg1Id, true),
      await connack('evil', HQ_ID, false),
      await connack('evil', `evil-${Date.now()}`),
      await connack('evil', ''),
      // Controllers may not take a register's id either.
      await connack('hq', reg1Id),
    ];
    // Before reg1 or the bridge ever connected: nothing to remember, the id alone decides.
    expect(await tries()).toEqual([5, 5, 5, 5, 5, 5]);
    expect(await connack('evil', deviceClientId(NS, 'evil'))).toBe(0);
    expect(await connack('reg1', reg1Id, false)).toBe(0);
    expect(await connack('hq', HQ_ID, false)).toBe(0);
    await Promise.all(opened.splice(0).map((client) => client.drop()));

    // A restart forgets every session and owner it kept in memory; the rule does not change.
    await broker.stop();
    broker = await start(port);
    expect(await tries()).toEqual([5, 5, 5, 5, 5, 5]);
    expect(await connack('reg1', reg1Id, false)).toBe(0);
    expect(await connack('hq', HQ_ID, false)).toBe(0);
  });
});
