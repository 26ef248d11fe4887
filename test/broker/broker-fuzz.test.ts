/**
 * MQTT payload fuzz through the store broker to a real device (REST app, queue, simulator,
 * bridge): generated payloads, valid and invalid, on the device's and the group's script topics,
 * some published retained. No crash, and tasks are created exactly for the valid, non-retained
 * payloads: task ids grow by one per task, so a marker submission before and after the run tells
 * how many were created. A seeded generator (the seed is in the test name) makes a failure
 * repeatable: REGBRIDGE_FUZZ_SEED=<seed> npx vitest run test/broker/broker-fuzz.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestDevice, type TestDevice } from '../support/bridge-device.ts';
import { brokersByName, type RunningBroker } from '../support/brokers.ts';
import { jsonOf, TestClient } from '../support/mqtt.ts';

const NS = 'fuzz';
const DEVICE = 'fuzz-reg';
const MAX_SCRIPT_BYTES = 4096;
const RUNS = 600;
const SEED = Number(process.env.REGBRIDGE_FUZZ_SEED ?? Date.now() % 1_000_000);

/** mulberry32: a small seeded PRNG, enough to make a run repeatable. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

interface Case {
  payload: Buffer;
  retain: boolean;
  group: boolean;
  /** Creates a task (valid and not retained). */
  creates: boolean;
  kind: string;
}

function generator(seed: number) {
  const random = prng(seed);
  const int = (n: number): number => Math.floor(random() * n);
  const pick = <T>(items: readonly T[]): T => items[int(items.length)] as T;
  const text = (length: number): string => {
    const alphabet = 'abcXYZ019 _-äöü€漢字😀\t';
    return Array.from({ length }, () => alphabet[int(alphabet.length)]).join('');
  };
  const script = (): string =>
    Array.from({ length: 1 + int(4) }, () => `PRINT ${text(1 + int(30))}`).join(pick(['\n', '\r\n']));
  let requestIds = 0;
  const valid = (): Record<string, unknown> => ({
    script: script(),
    ...(random() < 0.5 && { requestId: `fz-${seed}-${++requestIds}` }),
    // A notAfter in the past still creates a task (it ends FAILURE, EXPIRED).
    ...(random() < 0.3 && { notAfter: random() < 0.5 ? Date.now() + 3_600_000 : 1 }),
    // A v1.1 replyTo, whatever it holds, is ignored (contract 3.1).
    ...(random() < 0.2 && { replyTo: pick([`${NS}/replies/+`, '', '$SYS/x', 5]) }),
  });
  const json = (value: unknown): Buffer => Buffer.from(JSON.stringify(value));
  const invalid: [string, () => Buffer][] = [
    // Not JSON: a first byte that no JSON text starts with.
    ['bytes', () => Buffer.concat([Buffer.from([0x80 + int(0x7f)]), Buffer.from(text(int(40)))])],
    [
      'truncated',
      () => {
        const whole = json(valid());
        return whole.subarray(0, 1 + int(whole.length - 1));
      },
    ],
    ['not an object', () => json(pick([42, 'PRINT x', null, true, ['PRINT x'], []]))],
    ['no script', () => json({ requestId: `x-${int(1e9)}`, text: 'PRINT x' })],
    ['script not a string', () => json({ script: pick([1, null, ['PRINT x'], { line: 'PRINT x' }, false]) })],
    ['blank script', () => json({ script: pick(['', ' ', '\n\t ', '\r\n']) })],
    ['script too large', () => json({ script: `PRINT ${'x'.repeat(MAX_SCRIPT_BYTES + int(2000))}` })],
    ['bad requestId', () => json({ ...valid(), requestId: pick([7, '', 'r'.repeat(201), null]) })],
    ['bad notAfter', () => json({ ...valid(), notAfter: pick([-1, 1.5, 'soon', null]) })],
    [
      'invalid UTF-8',
      () =>
        Buffer.concat([Buffer.from('{"script":"PRINT '), Buffer.from([0xc3, 0x28, 0xff]), Buffer.from('"}')]),
    ],
  ];
  return (): Case => {
    const group = random() < 0.3;
    if (random() < 0.45) {
      const retain = random() < 0.15; // a retained script is refused by the store broker itself
      return { payload: json(valid()), retain, group, creates: !retain, kind: retain ? 'retained' : 'valid' };
    }
    const [kind, make] = pick(invalid);
    return { payload: make(), retain: false, group, creates: false, kind };
  };
}

describe(`MQTT payload fuzz through the store broker (seed ${SEED})`, () => {
  let broker: RunningBroker;
  let device: TestDevice;
  let controller: TestClient;

  beforeAll(async () => {
    broker = await brokersByName.embedded.start(NS);
    device = await startTestDevice(broker, {
      ns: NS,
      deviceId: DEVICE,
      maxScriptBytes: MAX_SCRIPT_BYTES,
      maxQueue: RUNS * 2,
    });
    controller = await TestClient.connect(
      broker.controllerUrl,
      [`${NS}/devices/${DEVICE}/replies/#`],
      broker.controllerCreds,
    );
  }, 60_000);
  afterAll(async () => {
    await controller?.close();
    await device?.stop();
    await broker?.stop();
  });

  /** A valid script with a requestId: resolves with the id of the task it created. */
  async function marker(name: string): Promise<number> {
    const topic = `${NS}/devices/${DEVICE}/replies/${name}-${SEED}`;
    const reply = controller.waitFor((m) => m.topic === topic, `reply to ${name}`, 60_000);
    await controller.publish(
      `${NS}/devices/${DEVICE}/scripts`,
      JSON.stringify({ script: 'PRINT marker', requestId: `${name}-${SEED}` }),
    );
    return jsonOf<{ id: number }>(await reply).id;
  }

  it(`${RUNS} generated payloads: no crash, a task for each valid one and none for the others`, async () => {
    const next = generator(SEED);
    const cases = Array.from({ length: RUNS }, next);
    const first = await marker('first');
    for (const c of cases) {
      const topic = c.group ? `${NS}/groups/all/scripts` : `${NS}/devices/${DEVICE}/scripts`;
      await controller.client.publishAsync(topic, c.payload, { qos: 1, retain: c.retain });
    }
    const last = await marker('last');
    const kinds = new Map<string, number>();
    for (const c of cases) kinds.set(c.kind, (kinds.get(c.kind) ?? 0) + 1);
    const expected = cases.filter((c) => c.creates).length;
    expect(
      last - first - 1,
      `tasks created; cases by kind: ${JSON.stringify(Object.fromEntries(kinds))}`,
    ).toBe(expected);
    // Still serving: the REST side of the device and the broker both answer.
    const response = await fetch(`${device.baseUrl}/health`);
    expect(response.status).toBe(200);
    expect(kinds.size).toBeGreaterThan(8); // the run covered most kinds
  }, 120_000);
});
