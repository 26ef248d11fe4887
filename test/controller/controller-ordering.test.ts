/**
 * The controller's rules where devices misbehave or messages come out of order, against real
 * brokers, with fake devices (raw mqtt clients) publishing exactly what each test needs:
 * NO_ANSWER, refusal, restart mid-run (new bootId), offline mid-run, and statuses that arrive
 * out of order never moving a task backwards.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { StoreController } from '../../controller/store-controller.ts';
import type { FanoutResult, TaskView } from '../../controller/types.ts';
import { skipSuite } from '../support/binaries.ts';
import { brokersByName, type RunningBroker } from '../support/brokers.ts';
import { FakeDevice, newController } from '../support/controller-env.ts';
import { until } from '../support/waits.ts';

describe.each([brokersByName.embedded, brokersByName.mosquitto])('controller rules on $name', (fixture) => {
  if (skipSuite(fixture.binaries, `controller rules on ${fixture.name}`)) return;
  const ns = `t${randomUUID().slice(0, 8)}`;
  let broker: RunningBroker;
  let controller: StoreController;
  const fakes: FakeDevice[] = [];

  beforeAll(async () => {
    broker = await fixture.start(ns);
    controller = newController(broker, ns);
    await controller.start();
  });

  afterEach(async () => {
    // Leave no online fake behind for the next test's view of the store.
    for (const fake of fakes.splice(0)) {
      await fake.publishOffline();
      await fake.stop();
    }
  });

  afterAll(async () => {
    await controller?.stop();
    await broker?.stop();
  });

  async function fake(deviceId: string): Promise<FakeDevice> {
    const device = new FakeDevice(broker, ns, deviceId);
    fakes.push(device);
    await device.start();
    await until(() => controller.device(deviceId)?.bootId === device.bootId, `${deviceId} in the directory`);
    return device;
  }

  it('a device that never answers is NO_ANSWER at the deadline', async () => {
    const ghost = await fake('ghost');
    const results = await controller.submit('PRINT hello', { to: ['ghost'], deadlineMs: 800 });
    expect(results).toEqual([{ deviceId: 'ghost', status: 'NO_ANSWER', detail: 'no reply' }]);
    // It did get the script with its requestId, and nothing naming the controller (contract 3.1, 6.1).
    const got = await ghost.waitForScript();
    expect(Object.keys(got).sort()).toEqual(['requestId', 'script']);
    expect(got.script).toBe('PRINT hello');
  });

  it('a refusal on the reply topic is FAILURE with the device error and no task id', async () => {
    const picky = await fake('picky');
    const pending = controller.submit('PRINT x', { to: ['picky'], deadlineMs: 10_000 });
    await picky.reply(await picky.waitForScript(), { error: 'QUEUE_FULL: too many queued tasks' });
    expect(await pending).toEqual([
      {
        deviceId: 'picky',
        status: 'FAILURE',
        error: 'QUEUE_FULL: too many queued tasks',
        refused: true,
        durationMs: expect.any(Number),
      },
    ]);
  });

  it('a device restarted mid-run (new bootId) is FAILURE at once; the old boot cannot revive the task', async () => {
    const phoenix = await fake('phoenix');
    const pending = controller.submit('SLEEP 5000', { to: ['phoenix'], deadlineMs: 20_000 });
    const script = await phoenix.waitForScript();
    await phoenix.reply(script, { id: 41, status: 'RUNNING' });
    const now = new Date().toISOString();
    await phoenix.status({ id: 41, status: 'RUNNING', requestId: script.requestId, startedAt: now });
    await until(() => controller.tasks('phoenix')[0]?.phase === 'running', 'task 41 running');
    const oldBoot = phoenix.bootId;
    await phoenix.restart();
    expect(await pending).toEqual([
      {
        deviceId: 'phoenix',
        status: 'FAILURE',
        error: 'device restarted (new bootId)',
        taskId: 41,
        durationMs: expect.any(Number),
      },
    ]);
    // The view marks the task as belonging to a previous boot, and the queue no longer counts it.
    expect(controller.tasks('phoenix')[0]).toMatchObject({ id: 41, bootId: oldBoot, previousBoot: true });
    expect(controller.queue('phoenix')).toEqual({ queued: 0, running: 0 });
  });

  it('a late last will of the previous boot does not mark the restarted device offline', async () => {
    const lazarus = await fake('lazarus');
    const firstBoot = lazarus.bootId;
    await lazarus.restart();
    await until(() => controller.device('lazarus')?.bootId !== firstBoot, 'new boot seen');
    // The broker delivers the crashed boot's will after the new boot's online state.
    const newBoot = lazarus.bootId;
    lazarus.bootId = firstBoot;
    await lazarus.publishOffline();
    lazarus.bootId = newBoot;
    await lazarus.status({ id: 1, status: 'RUNNING' }); // a marker published after the will
    await until(() => controller.tasks('lazarus').length === 1, 'marker status');
    expect(controller.device('lazarus')).toMatchObject({ online: true, bootId: newBoot });
  });

  it('a device that goes offline mid-run is waited for until the deadline: NO_ANSWER naming it', async () => {
    const flaky = await fake('flaky');
    const pending = controller.submit('PRINT x', { to: ['flaky'], deadlineMs: 1000 });
    const script = await flaky.waitForScript();
    await flaky.reply(script, { id: 7, status: 'RUNNING' });
    await flaky.status({ id: 7, status: 'RUNNING', requestId: script.requestId });
    await flaky.publishOffline();
    expect(await pending).toEqual([
      {
        deviceId: 'flaky',
        status: 'NO_ANSWER',
        taskId: 7,
        detail: 'task 7 still queued; device went offline',
      },
    ]);
  });

  it('a device that goes offline and comes back (same boot) still delivers its result', async () => {
    const blip = await fake('blip');
    const pending = controller.submit('PRINT x', { to: ['blip'], deadlineMs: 10_000 });
    const script = await blip.waitForScript();
    await blip.status({ id: 3, status: 'RUNNING', requestId: script.requestId });
    await blip.publishOffline();
    await until(() => controller.device('blip')?.online === false, 'blip offline');
    await blip.publishOnline();
    await blip.status({
      id: 3,
      status: 'FINISHED',
      requestId: script.requestId,
      report: 'x',
      finishedAt: new Date().toISOString(),
    });
    expect(await pending).toMatchObject([{ deviceId: 'blip', status: 'FINISHED', report: 'x', taskId: 3 }]);
  });

  it('statuses out of order never move a task backwards', async () => {
    const shuffle = await fake('shuffle');
    const seen: TaskView[] = [];
    const onStatus = (view: TaskView): void => {
      if (view.deviceId === 'shuffle') seen.push(view);
    };
    controller.on('status', onStatus);
    try {
      const pending = controller.submit('PRINT x', { to: ['shuffle'], deadlineMs: 10_000 });
      const script = await shuffle.waitForScript();
      const requestId = script.requestId;
      const startedAt = new Date().toISOString();
      // seq 2 (started) overtakes seq 1 (queued): seq 1 must be ignored.
      await shuffle.status({ id: 9, seq: 2, status: 'RUNNING', requestId, startedAt });
      await shuffle.status({ id: 9, seq: 1, status: 'RUNNING', requestId });
      // A marker on another task: once it is seen, seq 1 was processed before it (one publisher, in order).
      await shuffle.status({ id: 10, seq: 3, status: 'RUNNING' });
      await until(() => seen.some((v) => v.id === 10), 'marker');
      expect(controller.tasks('shuffle').find((t) => t.id === 9)).toMatchObject({ seq: 2, phase: 'running' });
      expect(seen.filter((v) => v.id === 9).map((v) => v.seq)).toEqual([2]);

      await shuffle.status({ id: 9, seq: 5, status: 'FINISHED', requestId, startedAt, report: 'done' });
      const results: FanoutResult[] = await pending;
      expect(results).toMatchObject([{ deviceId: 'shuffle', status: 'FINISHED', report: 'done', taskId: 9 }]);

      // A stale RUNNING (seq 4) and a duplicate of seq 5 arrive after the end: ignored.
      await shuffle.status({ id: 9, seq: 4, status: 'RUNNING', requestId, startedAt });
      await shuffle.status({ id: 9, seq: 5, status: 'RUNNING', requestId, startedAt });
      await shuffle.status({ id: 11, seq: 6, status: 'RUNNING' });
      await until(() => seen.some((v) => v.id === 11), 'second marker');
      expect(controller.tasks('shuffle').find((t) => t.id === 9)).toMatchObject({
        seq: 5,
        status: 'FINISHED',
        report: 'done',
      });
      expect(seen.filter((v) => v.id === 9).map((v) => v.seq)).toEqual([2, 5]);
    } finally {
      controller.off('status', onStatus);
    }
  });

  it('a result is taken from the status message even when no reply arrives first', async () => {
    const quiet = await fake('quiet');
    const pending = controller.submit('PRINT x', { to: { group: 'all' }, deadlineMs: 10_000 });
    const script = await quiet.waitForScript();
    await quiet.status({
      id: 5,
      status: 'FAILURE',
      requestId: script.requestId,
      error: 'EXPIRED: notAfter passed',
    });
    const results = await pending;
    expect(results.find((r) => r.deviceId === 'quiet')).toMatchObject({
      status: 'FAILURE',
      error: 'EXPIRED: notAfter passed',
      taskId: 5,
    });
    // The earlier fakes are known and offline now: OFFLINE, nothing waited for.
    expect(results.filter((r) => r.deviceId !== 'quiet').every((r) => r.status === 'OFFLINE')).toBe(true);
  });
});
