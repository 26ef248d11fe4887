/**
 * The store controller against real brokers (embedded aedes store broker, mosquitto) and real
 * devices (startDevice): discovery from retained states, fan-out to all / a group / an id list
 * with one publish per group or per device, FAILURE, OFFLINE.
 */
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { connect, type MqttClient } from 'mqtt';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ScriptSubmission } from '../../bridge/contract/topics.ts';
import type { RunningDevice } from '../../cli/device.ts';
import type { StoreController } from '../../controller/store-controller.ts';
import { skipSuite } from '../support/binaries.ts';
import { brokersByName, type RunningBroker } from '../support/brokers.ts';
import { newController, startRealDevice, withCreds } from '../support/controller-env.ts';
import { until } from '../support/waits.ts';

const REGISTERS = ['reg1', 'reg2', 'reg3', 'reg4', 'reg5'];
const groupOf = (id: string): string => (Number(id.slice(3)) % 2 === 1 ? 'front' : 'back');

describe.each([brokersByName.embedded, brokersByName.mosquitto])('store controller on $name', (fixture) => {
  if (skipSuite(fixture.binaries, `store controller on ${fixture.name}`)) return;
  const ns = `stores/t${randomUUID().slice(0, 8)}`;
  let broker: RunningBroker;
  const devices = new Map<string, RunningDevice>();
  let controller: StoreController;
  /** Every script publish seen on the broker: [topic, requestId]. */
  const sent: [string, string | undefined][] = [];
  let spy: MqttClient;

  beforeAll(async () => {
    broker = await fixture.start(ns);
    const started = await Promise.all(
      REGISTERS.map((id) => startRealDevice(broker, ns, id, { groups: [groupOf(id)] })),
    );
    for (const [i, device] of started.entries()) devices.set(REGISTERS[i]!, device);
    spy = connect(broker.controllerUrl, {
      ...broker.controllerCreds,
      protocolVersion: 4,
      reconnectPeriod: 0,
    });
    await new Promise<void>((resolve, reject) => {
      spy.once('connect', () => resolve());
      spy.once('error', reject);
    });
    spy.on('message', (topic, payload) => {
      sent.push([topic, (JSON.parse(payload.toString()) as ScriptSubmission).requestId]);
    });
    await spy.subscribeAsync([`${ns}/groups/+/scripts`, `${ns}/devices/+/scripts`], { qos: 1 });
    controller = newController(broker, ns);
    await controller.start();
    await until(
      () => controller.devices().filter((d) => d.online).length === REGISTERS.length,
      'registers online',
    );
  });

  afterAll(async () => {
    await controller?.stop();
    await spy?.endAsync();
    await Promise.allSettled([...devices.values()].map((device) => device.stop()));
    await broker?.stop();
  });

  const publishesOf = (requestId: string): string[] =>
    sent.filter(([, id]) => id === requestId).map(([topic]) => topic.slice(ns.length + 1));

  it('discovers every device from its retained state: bootId, groups, metadata', () => {
    const entries = controller.devices();
    expect(entries.map((e) => e.deviceId)).toEqual(REGISTERS);
    for (const entry of entries) {
      expect(entry).toMatchObject({
        online: true,
        bootId: devices.get(entry.deviceId)!.bridge!.bootId,
        groups: expect.arrayContaining([groupOf(entry.deviceId)]),
        installation: 'cash-register',
      });
      expect(Date.parse(entry.lastSeen)).not.toBeNaN();
    }
  });

  it('fans out to all with ONE publish to the group topic; every device FINISHED with its report', async () => {
    const requestId = randomUUID();
    const progress: number[] = [];
    const results = await controller.submit('PRINT hello from the controller\nX REPORT', {
      to: 'all',
      deadlineMs: 15_000,
      requestId,
      onResult: (_r, p) => progress.push(p.done),
    });
    expect(results.map((r) => [r.deviceId, r.status])).toEqual(REGISTERS.map((id) => [id, 'FINISHED']));
    for (const result of results) {
      if (result.status !== 'FINISHED') throw new Error('unreachable');
      expect(result.report.split('\n').slice(0, 2)).toEqual(['hello from the controller', 'X REPORT']);
      expect(Number.isSafeInteger(result.taskId)).toBe(true);
      expect(result.durationMs).toBeGreaterThanOrEqual(0);
    }
    expect(progress).toEqual([1, 2, 3, 4, 5]);
    await until(() => publishesOf(requestId).length > 0, 'the spy to see the publish');
    expect(publishesOf(requestId)).toEqual(['groups/all/scripts']);
    // The statuses carried the requestId, and the directory holds the ended tasks.
    expect(controller.tasks('reg1')[0]).toMatchObject({ requestId, status: 'FINISHED', phase: 'finished' });
  });

  it('a group target reaches only that group, with one publish', async () => {
    const requestId = randomUUID();
    const results = await controller.submit('PRINT front', {
      to: { group: 'front' },
      deadlineMs: 15_000,
      requestId,
    });
    expect(results.map((r) => [r.deviceId, r.status])).toEqual([
      ['reg1', 'FINISHED'],
      ['reg3', 'FINISHED'],
      ['reg5', 'FINISHED'],
    ]);
    await until(() => publishesOf(requestId).length > 0, 'the spy to see the publish');
    expect(publishesOf(requestId)).toEqual(['groups/front/scripts']);
  });

  it('an id list publishes once per online device; unknown ids are OFFLINE', async () => {
    const requestId = randomUUID();
    const results = await controller.submit('PRINT listed', {
      to: ['reg2', 'nosuch', 'reg4', 'reg2'],
      deadlineMs: 15_000,
      requestId,
    });
    expect(results).toEqual([
      expect.objectContaining({ deviceId: 'reg2', status: 'FINISHED', report: 'listed' }),
      expect.objectContaining({ deviceId: 'reg4', status: 'FINISHED', report: 'listed' }),
      { deviceId: 'nosuch', status: 'OFFLINE' },
    ]);
    await until(() => publishesOf(requestId).length >= 2, 'the spy to see the publishes');
    expect(publishesOf(requestId).sort()).toEqual(['devices/reg2/scripts', 'devices/reg4/scripts']);
  });

  it('a failing script is FAILURE with the error and the task id', async () => {
    const results = await controller.submit('PRINT partial\nFAIL paper jam', {
      to: ['reg3'],
      deadlineMs: 15_000,
    });
    expect(results).toEqual([
      {
        deviceId: 'reg3',
        status: 'FAILURE',
        error: 'paper jam',
        taskId: expect.any(Number),
        durationMs: expect.any(Number),
      },
    ]);
  });

  it('a device whose command executor fails is FAILURE while the others FINISH', async () => {
    const bad = await startRealDevice(broker, ns, 'badcmd', { executor: 'command', command: 'false' });
    devices.set('badcmd', bad);
    try {
      await until(() => controller.device('badcmd')?.online === true, 'badcmd online');
      const results = await controller.submit('PRINT ok', { to: ['badcmd', 'reg1'], deadlineMs: 15_000 });
      expect(results.map((r) => [r.deviceId, r.status])).toEqual([
        ['badcmd', 'FAILURE'],
        ['reg1', 'FINISHED'],
      ]);
    } finally {
      await bad.stop();
      devices.delete('badcmd');
    }
  });

  it('a known device that stopped cleanly is OFFLINE; a new controller still knows it from the retained will', async () => {
    await until(() => controller.device('badcmd')?.online === false, 'badcmd offline');
    const results = await controller.submit('PRINT roll call', { to: 'all', deadlineMs: 15_000 });
    expect(results.map((r) => [r.deviceId, r.status])).toEqual([
      ...REGISTERS.map((id) => [id, 'FINISHED']),
      ['badcmd', 'OFFLINE'],
    ]);

    const fresh = newController(broker, ns);
    try {
      await fresh.start();
      // start() resolves after the retained states arrived: no polling needed here.
      expect(fresh.device('badcmd')).toMatchObject({ online: false, groups: [] });
      expect(
        fresh
          .devices()
          .filter((d) => d.online)
          .map((d) => d.deviceId),
      ).toEqual(REGISTERS);
      // Retained end statuses are replayed too: the view shows reg3's failed task.
      expect(fresh.tasks('reg3').some((t) => t.status === 'FAILURE' && t.error === 'paper jam')).toBe(true);
    } finally {
      await fresh.stop();
    }
  });
  it('a real device that crashes and restarts mid-run (new bootId) is FAILURE at once, not NO_ANSWER', async () => {
    // A real crash: a `regbridge serve` child process killed with SIGKILL mid-task, then started again.
    const mqttUrl = withCreds(broker.url, broker.deviceCreds('phoenix'));
    const args = [
      'bin/regbridge.js',
      'serve',
      '--port',
      '0',
      '--host',
      '127.0.0.1',
      '--device-id',
      'phoenix',
    ];
    const env = { ...process.env, REGBRIDGE_MQTT_URL: mqttUrl, REGBRIDGE_NS: ns, REGBRIDGE_USER: 'admin:pw' };
    const spawnDevice = () => spawn(process.execPath, args, { env, stdio: 'ignore' });
    let child = spawnDevice();
    try {
      await until(() => controller.device('phoenix')?.online === true, 'phoenix online', 20_000);
      const oldBoot = controller.device('phoenix')!.bootId;
      const started = new Promise<void>((resolve) => {
        const onStatus = (view: { deviceId: string; startedAt?: string; status: string }) => {
          if (view.deviceId === 'phoenix' && view.status === 'RUNNING' && view.startedAt) {
            controller.off('status', onStatus);
            resolve();
          }
        };
        controller.on('status', onStatus);
      });
      // A deadline far past the restart: the result must come from the new bootId, not the deadline.
      const pending = controller.submit('SLEEP 20000', { to: ['phoenix'], deadlineMs: 60_000 });
      await started;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGKILL');
      await exited;
      child = spawnDevice();
      const [result] = await pending;
      expect(result).toMatchObject({
        deviceId: 'phoenix',
        status: 'FAILURE',
        error: 'device restarted (new bootId)',
      });
      expect(controller.device('phoenix')!.bootId).not.toBe(oldBoot);
    } finally {
      child.kill('SIGKILL');
    }
    // Two real `serve` starts: on a loaded CI machine (the Node 24 leg runs every suite at once)
    // they took more than vitest's 30 s together.
  }, 90_000);
});
