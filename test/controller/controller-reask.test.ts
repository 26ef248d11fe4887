/**
 * A controller that reconnects asks again about every result still open (docs/controller.md,
 * "Reconnecting"): it sends the same submission, with the same requestId, to each register
 * whose result it lacks. A register that already has the task republishes its status and
 * answers again without running anything. Here the broker's retained copy of the end status is
 * gone (as on a clustered hub that acknowledged a retained store it never made while a node was
 * lost, docs/topology.md), so only the re-ask can bring the result: it arrives, and the script
 * ran once. Real aedes broker over TCP; the controller reaches it through a link the test cuts.
 */
import net from 'node:net';
import { Aedes } from 'aedes';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { topics } from '../../bridge/contract/topics.ts';
import { StoreController } from '../../controller/store-controller.ts';
import { type DirectBridge, directBridge, uniqueId } from '../support/bridge-device.ts';
import { silent } from '../support/loggers.ts';
import { TestClient } from '../support/mqtt.ts';
import { onceEvent, until } from '../support/waits.ts';
import { startWanLink, type WanLink } from '../support/wan-link.ts';

describe('controller: re-asks the registers of open results after a reconnect', () => {
  const ns = 'reask/store-1';
  let aedes: Aedes;
  let server: net.Server;
  let port: number;
  let link: WanLink;
  let device: DirectBridge;
  let controller: StoreController;
  const deviceId = uniqueId('reg');
  const started: number[] = [];

  beforeAll(async () => {
    aedes = await Aedes.createBroker();
    server = net.createServer(aedes.handle);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
    port = (server.address() as net.AddressInfo).port;
    link = await startWanLink(port);
    device = directBridge({ url: `mqtt://127.0.0.1:${port}`, ns, deviceId });
    device.queue.on('started', (task) => started.push(task.id));
    await device.bridge.start();
    controller = new StoreController({
      url: `mqtt://${link.address}`,
      ns,
      clientId: uniqueId('ctl'),
      logger: silent,
      settleMs: 150,
      // No retained-status recheck before the deadline: only the re-ask can find the result.
      recheckLeadMs: 0,
    });
    await controller.start();
  });

  afterAll(async () => {
    await controller?.stop();
    await device?.stop();
    await link?.close();
    await new Promise<void>((resolve) => aedes.close(() => resolve()));
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  /** The retained messages aedes holds on `topic` (its persistence, read directly). */
  async function retained(topic: string): Promise<number> {
    let count = 0;
    const { persistence } = aedes as unknown as {
      persistence: { createRetainedStream(pattern: string): AsyncIterable<unknown> };
    };
    for await (const _ of persistence.createRetainedStream(topic)) count += 1;
    return count;
  }

  it('gets the result the broker lost once reconnected; the script ran once', async () => {
    const job = controller.submit('SLEEP 300\nPRINT ran once', {
      to: [deviceId],
      deadlineMs: 30_000,
      requestId: 'reask-1',
    });
    await until(() => started.length === 1, 'the task running', 10_000);
    link.cut();
    await until(() => controller.connection !== 'connected', 'the controller disconnected', 10_000);
    await until(
      () => device.queue.list()[0]?.state === 'finished',
      'the task finished at the register',
      10_000,
    );
    const taskId = device.queue.list()[0]?.id ?? 0;
    const statusTopic = topics.taskStatus(ns, deviceId, taskId);
    // The hub loses the retained end status: what a fresh subscription reads has no trace of it.
    const eraser = await TestClient.connect(`mqtt://127.0.0.1:${port}`, []);
    await eraser.client.publishAsync(statusTopic, '', { qos: 1, retain: true });
    await eraser.close();
    expect(await retained(statusTopic)).toBe(0);

    const reasked = onceEvent<[number]>(controller, 'reasked', 'the re-ask after the reconnect', {
      timeoutMs: 20_000,
    });
    link.restore();
    expect((await reasked)[0]).toBe(1);
    const [result] = await job;
    expect(result).toMatchObject({ deviceId, status: 'FINISHED', report: 'ran once', taskId });
    // One task for the requestId, started once; the register republished its status on the re-ask.
    expect(started).toEqual([taskId]);
    expect(device.queue.list().map((t) => t.requestId)).toEqual(['reask-1']);
    expect(await retained(statusTopic)).toBe(1);
  }, 60_000);

  it('asks nothing after a reconnect when no result is open', async () => {
    const [result] = await controller.submit('PRINT quick', { to: [deviceId], deadlineMs: 10_000 });
    expect(result?.status).toBe('FINISHED');
    const reasked = onceEvent<[number]>(controller, 'reasked', 'the reconnect', { timeoutMs: 20_000 });
    link.cut();
    link.restore();
    expect((await reasked)[0]).toBe(0);
    expect(started).toHaveLength(2);
  }, 30_000);
});
