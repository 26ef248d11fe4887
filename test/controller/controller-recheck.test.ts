/**
 * The controller's recheck before NO_ANSWER (docs/controller.md): a broker that drops a status
 * on its way to the controller (as mosquitto does beyond `max_queued_messages`) no longer costs
 * the result, because the status is retained and the controller reads the missing devices'
 * status topics again shortly before the deadline. An aedes broker whose `authorizeForward`
 * drops the first FINISHED status of each task to the controllers stands for the lossy broker.
 */
import net from 'node:net';
import { Aedes } from 'aedes';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { StoreController } from '../../controller/store-controller.ts';
import { type DirectBridge, directBridge, uniqueId } from '../support/bridge-device.ts';
import { silent } from '../support/loggers.ts';

describe('controller: an end status the broker dropped', () => {
  const ns = 'recheck/store-5';
  let aedes: Aedes;
  let server: net.Server;
  let url: string;
  /** Status topics whose FINISHED message was dropped on its way to a controller. */
  const dropped: string[] = [];
  const cleanups: Array<() => Promise<unknown>> = [];
  /** Off: the broker keeps no status retained, as a hub behind `bridge_outgoing_retain false`. */
  let retainStatuses = true;

  beforeAll(async () => {
    aedes = await Aedes.createBroker({
      authorizePublish: (_client, packet, callback) => {
        if (!retainStatuses && packet.topic.endsWith('/status')) packet.retain = false;
        callback(null);
      },
      authorizeForward: (client, packet) => {
        const toController = client?.id.startsWith('ctl-') ?? false;
        const finished =
          packet.topic.endsWith('/status') && packet.payload.toString().includes('"status":"FINISHED"');
        if (
          toController &&
          finished &&
          !packet.retain &&
          !dropped.includes(`${client?.id} ${packet.topic}`)
        ) {
          dropped.push(`${client?.id} ${packet.topic}`);
          return null;
        }
        return packet;
      },
    });
    server = net.createServer(aedes.handle);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
    url = `mqtt://127.0.0.1:${(server.address() as net.AddressInfo).port}`;
  });
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => undefined);
  });
  afterAll(async () => {
    await new Promise<void>((resolve) => aedes.close(() => resolve()));
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  const deviceIds = new WeakMap<DirectBridge, string>();
  const deviceIdOf = (device: DirectBridge): string => deviceIds.get(device) ?? '';

  async function setup(
    recheckLeadMs: number,
  ): Promise<{ controller: StoreController; device: DirectBridge }> {
    const deviceId = uniqueId('reg');
    const device = directBridge({ url, ns, deviceId });
    deviceIds.set(device, deviceId);
    cleanups.push(() => device.stop());
    await device.bridge.start();
    const controller = new StoreController({
      url,
      ns,
      clientId: uniqueId('ctl'),
      logger: silent,
      settleMs: 150,
      recheckLeadMs,
    });
    cleanups.push(() => controller.stop());
    await controller.start();
    expect(controller.device(deviceId)?.online).toBe(true);
    return { controller, device };
  }

  it('without the recheck the drop costs the result: NO_ANSWER, task still running', async () => {
    const { controller, device } = await setup(0);
    const deviceId = deviceIdOf(device);
    const [result] = await controller.submit('PRINT lost', { to: [deviceId], deadlineMs: 1000 });
    const [task] = device.queue.list();
    expect(task?.state).toBe('finished');
    expect(result).toEqual({
      deviceId,
      status: 'NO_ANSWER',
      taskId: task?.id,
      detail: `task ${task?.id} still running`,
    });
    expect(dropped.filter((d) => d.startsWith(controller.clientId))).toHaveLength(1);
  });

  it('with the recheck the retained status is read again before the deadline: FINISHED', async () => {
    const { controller, device } = await setup(1000);
    const deviceId = deviceIdOf(device);
    const results = await controller.submit('PRINT found again', { to: [deviceId], deadlineMs: 2000 });
    const [task] = device.queue.list();
    expect(results).toEqual([
      {
        deviceId,
        status: 'FINISHED',
        report: 'found again',
        taskId: task?.id,
        durationMs: results[0]?.status === 'FINISHED' ? results[0].durationMs : -1,
      },
    ]);
    // The live FINISHED really was dropped: the result came from the retained message.
    expect(dropped.filter((d) => d.startsWith(controller.clientId))).toHaveLength(1);
  });

  it('with no status retained, the recheck asks the register again: FINISHED, run once', async () => {
    retainStatuses = false;
    try {
      const { controller, device } = await setup(1000);
      const deviceId = deviceIdOf(device);
      const results = await controller.submit('PRINT asked again', { to: [deviceId], deadlineMs: 2000 });
      expect(results.map((r) => [r.status, r.status === 'FINISHED' ? r.report : JSON.stringify(r)])).toEqual([
        ['FINISHED', 'asked again'],
      ]);
      expect(device.queue.list().map((task) => task.state)).toEqual(['finished']);
      expect(dropped.filter((d) => d.startsWith(controller.clientId))).toHaveLength(1);
    } finally {
      retainStatuses = true;
    }
  });
});
