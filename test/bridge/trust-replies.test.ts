/**
 * Contract 3.1 against an attacker's register (issue 26 item 1): a device user `evil` on the
 * real store broker publishes refusal replies naming other registers, on every topic it might
 * try (the v1.1 reply topic of the controller, the victims' reply topics, its own), while the
 * job (controller service) and a fan-out (StoreController, what `regbridge fanout` runs) wait
 * for real registers. Their results and the abort rule must not move; the forgeries are dropped
 * and counted, and no script a register receives names a controller's client id.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { topics } from '../../bridge/contract/topics.ts';
import type { RunningControllerService } from '../../cli/controller-service.ts';
import type { RunningDevice } from '../../cli/device.ts';
import { requestIdFor } from '../../controller/job-types.ts';
import type { StoreController } from '../../controller/store-controller.ts';
import { brokersByName, type RunningBroker } from '../support/brokers.ts';
import { FakeDevice, newController, startRealDevice } from '../support/controller-env.ts';
import { api, ended, login, startService, waitForJob } from '../support/controller-service.ts';
import { type Received, TestClient } from '../support/mqtt.ts';
import { until } from '../support/waits.ts';

const ns = `stores/trust${randomUUID().slice(0, 6)}`;
const VICTIMS = ['reg1', 'reg2'];
// Long enough that every forgery reaches the controller before the receipts are printed.
const SCRIPT = 'SLEEP 400\nPRINT receipt';
let broker: RunningBroker;
const registers: RunningDevice[] = [];
let evil: FakeDevice;
let watcher: TestClient;

beforeAll(async () => {
  broker = await brokersByName.embedded.start(ns);
  for (const id of VICTIMS) registers.push(await startRealDevice(broker, ns, id, { groups: ['front'] }));
  evil = new FakeDevice(broker, ns, 'evil');
  await evil.start(['all', 'front']);
  // Sees whatever the broker lets through on any reply topic, old or new.
  watcher = await TestClient.connect(
    broker.controllerUrl,
    [`${ns}/replies/#`, topics.allReplies(ns)],
    broker.controllerCreds,
  );
});

afterAll(async () => {
  await watcher?.close();
  await evil?.stop();
  await Promise.allSettled(registers.map((d) => d.stop()));
  await broker?.stop();
});

const refusal = (requestId: string, deviceId: string) => ({
  requestId,
  deviceId,
  error: 'QUEUE_FULL: forged by evil',
});

/**
 * Everything `evil` can try for one victim's requestId: the v1.1 reply topic of the controller
 * (`clientId` as if it had learnt it), the victim's reply topic, and its own reply topic naming
 * the victim.
 */
async function forge(clientId: string, victim: string, requestId: string): Promise<void> {
  await evil.publish(`${ns}/replies/${clientId}/${requestId}`, refusal(requestId, victim), false);
  await evil.publish(topics.deviceReply(ns, victim, requestId), refusal(requestId, victim), false);
  await evil.publish(topics.deviceReply(ns, 'evil', requestId), refusal(requestId, victim), false);
}

/** The broker dropped every forgery outside evil's own subtree. */
function expectOnlyOwnSubtree(): void {
  const forged = (m: Received) => m.payload.toString().includes('forged by evil');
  expect(watcher.messages.filter(forged).every((m) => m.topic.startsWith(`${ns}/devices/evil/`))).toBe(true);
}

describe('forged replies against the controller service (contract 3.1)', () => {
  let service: RunningControllerService;
  let token: string;

  beforeAll(async () => {
    service = await startService(broker, ns);
    await until(() => service.controller.devices().filter((d) => d.online).length === 3, 'registers online');
    token = await login(service.app);
  });
  afterAll(() => service?.stop());

  it("an attacker's refusals naming other registers decide no result and trigger no abort", async () => {
    const created = await api(service.app, token, 'POST', '/api/jobs', {
      script: SCRIPT,
      target: { devices: [...VICTIMS, 'evil'] },
      abort: { failureRatio: 0.3, minEnded: 1 },
    });
    expect(created.statusCode).toBe(201);
    const jobId = created.body.jobId as string;
    const got = await evil.waitForScript();
    // No controller client id ever reaches a register.
    expect(Object.keys(got).sort()).toEqual(['notAfter', 'requestId', 'script']);
    expect(JSON.stringify(got)).not.toContain(service.controller.clientId);
    for (const victim of VICTIMS) {
      const requestId = requestIdFor(jobId, victim);
      await forge(service.controller.clientId, victim, requestId);
      // Its own name on the victim's requestId: that submission was not sent to evil.
      await evil.publish(topics.deviceReply(ns, 'evil', requestId), refusal(requestId, 'evil'), false);
    }
    // evil answers honestly for itself, so the job can complete.
    await evil.reply(got, { id: 7, status: 'RUNNING' });
    await evil.status({ id: 7, status: 'FINISHED', report: 'receipt', requestId: got.requestId! });

    const job = await waitForJob(service, token, jobId, ended, 'job end');
    expect(job.status).toBe('COMPLETED');
    expect(job.results.map((r) => [r.deviceId, r.status, r.report])).toEqual([
      ['reg1', 'FINISHED', 'receipt'],
      ['reg2', 'FINISHED', 'receipt'],
      ['evil', 'FINISHED', 'receipt'],
    ]);
    expect(service.controller.droppedReplies).toMatchObject({ forged: 2, not_sent: 2 });
    const metrics = await api(service.app, undefined, 'GET', '/metrics');
    expect(metrics.body).toContain('regbridge_controller_replies_dropped_total{reason="forged"} 2');
    expect(metrics.body).toContain('regbridge_controller_replies_dropped_total{reason="not_sent"} 2');
    expectOnlyOwnSubtree();
  });
});

describe('forged replies against a fan-out (what `regbridge fanout` runs)', () => {
  let controller: StoreController;

  beforeAll(async () => {
    controller = newController(broker, ns);
    await controller.start();
    await until(() => controller.devices().filter((d) => d.online).length === 3, 'registers online');
  });
  afterAll(() => controller?.stop());

  it("an attacker in the group cannot fail the other registers' results", async () => {
    const requestId = `fan-${randomUUID()}`;
    const before = evil.scripts.length;
    const pending = controller.submit(SCRIPT, { to: { group: 'front' }, requestId, deadlineMs: 10_000 });
    const got = await evil.waitForScript(before + 1);
    expect(Object.keys(got).sort()).toEqual(['requestId', 'script']);
    expect(JSON.stringify(got)).not.toContain(controller.clientId);
    // One group send: the requestId is shared, so only the topic tells the registers apart.
    for (const victim of VICTIMS) await forge(controller.clientId, victim, requestId);
    await evil.reply(got, { error: 'QUEUE_FULL: evil refuses its own' });

    const results = await pending;
    const byId = new Map(results.map((r) => [r.deviceId, r]));
    expect(byId.get('reg1')).toMatchObject({ status: 'FINISHED', report: 'receipt' });
    expect(byId.get('reg2')).toMatchObject({ status: 'FINISHED', report: 'receipt' });
    // A register may still speak for itself.
    expect(byId.get('evil')).toMatchObject({ status: 'FAILURE', error: 'QUEUE_FULL: evil refuses its own' });
    // Sent to the group: evil's reply naming itself is its own; those naming others are forged.
    expect(controller.droppedReplies.forged).toBe(2);
    expectOnlyOwnSubtree();
  });
});
