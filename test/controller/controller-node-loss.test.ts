/**
 * The controller rides through the loss of its broker node while a cluster still re-elects
 * (issue 17; docs/topology.md, "What happens when a node dies"). nats-server keeps every QoS 1
 * subscription as a replicated JetStream consumer; for several seconds after a node loss (longer
 * on a loaded machine) it cannot create or delete consumers, so it closes the CONNECT of a
 * clean-session client whose previous session held QoS 1 subscriptions (`unable to delete
 * consumer ... timeout for request type "CD"`) and refuses QoS 1 SUBSCRIBEs (SUBACK 0x80,
 * `... "CC"`). This aedes broker does the same while `electing` is set, deterministically and for
 * as long as the test wants: the controller must reconnect, subscribe and see the job's result
 * all the same (it subscribes at QoS 0, controller/types.ts CONTROLLER_SUBSCRIBE_QOS). And a
 * controller the broker keeps out, or whose QoS 1 packet it never acknowledges, must still stop
 * (mqtt.js waited for ever for the ack).
 */
import net from 'node:net';
import { Aedes } from 'aedes';
import { connectAsync, type MqttClient } from 'mqtt';
import { pino } from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { StoreController, type StoreControllerOptions } from '../../controller/store-controller.ts';
import { type DirectBridge, directBridge, uniqueId } from '../support/bridge-device.ts';
import { until } from '../support/waits.ts';

const silent = pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' });
const NS = 'node-loss/store-1';

describe('a controller whose broker node is lost while the cluster cannot create or delete consumers', () => {
  let aedes: Aedes;
  let server: net.Server;
  let url: string;
  /** Consumer operations fail (nats-server while JetStream re-elects leaders). */
  let electing = false;
  /** Client id -> its QoS 1 filters (nats-server: the durable consumers of its session). */
  const consumers = new Map<string, Set<string>>();
  /** Client ids whose every CONNECT is closed (a broker that stays down for them). */
  const keptOut = new Set<string>();
  /** CONNECTs closed and QoS 1 SUBSCRIBEs refused while electing. */
  const refused = { connects: 0, subscribes: 0 };
  const cleanups: Array<() => Promise<unknown>> = [];

  /** A store controller on the suite's broker, stopped after the test. */
  async function startedController(options: Partial<StoreControllerOptions> = {}): Promise<StoreController> {
    const controller = new StoreController({
      url,
      ns: NS,
      clientId: uniqueId('ctl'),
      logger: silent,
      ...options,
    });
    cleanups.push(() => controller.stop());
    await controller.start();
    return controller;
  }

  beforeAll(async () => {
    aedes = await Aedes.createBroker({
      preConnect: (_client, packet, callback) => {
        if (keptOut.has(packet.clientId)) {
          callback(new Error('kept out'), false);
          return;
        }
        const held = consumers.get(packet.clientId)?.size ?? 0;
        if (packet.clean && held > 0) {
          // A clean session first deletes the previous session's consumers.
          if (electing) {
            refused.connects += 1;
            // An error closes the connection without CONNACK, as nats-server does.
            callback(new Error('unable to delete consumer: timeout'), false);
            return;
          }
          consumers.delete(packet.clientId);
        }
        callback(null, true);
      },
      // A PUBLISH to a `.../held/cancel` topic is never acknowledged (a store that never ends).
      authorizePublish: (_client, packet, callback) => {
        if (!packet.topic.endsWith('/held/cancel')) callback(null);
      },
      authorizeSubscribe: (client, subscription, callback) => {
        if (subscription.qos > 0 && client) {
          if (electing) {
            refused.subscribes += 1;
            callback(null, null);
            return;
          }
          const set = consumers.get(client.id) ?? new Set<string>();
          set.add(subscription.topic);
          consumers.set(client.id, set);
        }
        callback(null, subscription);
      },
    });
    server = net.createServer(aedes.handle);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
    url = `mqtt://127.0.0.1:${(server.address() as net.AddressInfo).port}`;
  });
  afterEach(async () => {
    electing = false;
    keptOut.clear();
    refused.connects = 0;
    refused.subscribes = 0;
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => undefined);
  });
  afterAll(async () => {
    await new Promise<void>((resolve) => aedes.close(() => resolve()));
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  /** The broker end of `clientId`'s connection dies, as when its node is killed. */
  function loseConnection(clientId: string): void {
    const clients = (aedes as unknown as { clients: Record<string, { id: string; conn: net.Socket }> })
      .clients;
    for (const client of Object.values(clients)) if (client.id === clientId) client.conn.destroy();
  }

  it('models nats-server: a clean-session client that held a QoS 1 subscription is kept out', async () => {
    const clientId = uniqueId('plain');
    const first = await connectAsync(url, { clientId, clean: true, reconnectPeriod: 0 });
    await first.subscribeAsync('node-loss/anything', { qos: 1 });
    electing = true;
    loseConnection(clientId);
    await until(() => !first.connected, 'the first connection gone');
    await first.endAsync(true);
    await expect(
      // allowRetries false: a connection closed before CONNACK rejects.
      connectAsync(url, { clientId, clean: true, reconnectPeriod: 0, connectTimeout: 2000 }, false),
    ).rejects.toThrow();
    expect(refused.connects).toBeGreaterThan(0);
  });

  it('stops while the broker keeps it out, with a QoS 1 cancel still unacknowledged', async () => {
    const controller = await startedController({ settleMs: 100 });
    keptOut.add(controller.clientId);
    const offline = new Promise<void>((resolve) =>
      controller.on('connection', (state) => state === 'offline' && resolve()),
    );
    loseConnection(controller.clientId);
    await offline;
    controller.cancel('reg-x', 'r-x'); // queued by mqtt.js until a CONNACK that never comes
    const stopped = controller.stop().then(() => 'stopped');
    const late = new Promise((resolve) => setTimeout(() => resolve('still stopping after 5 s'), 5000));
    expect(await Promise.race([stopped, late])).toBe('stopped');
  });

  it('stops while connected with a QoS 1 cancel the broker never acknowledges', async () => {
    const controller = await startedController();
    controller.cancel('held', 'r-held');
    await until(
      () => Object.keys((controller as unknown as { client: MqttClient }).client.outgoing).length > 0,
      'the cancel sent and not acknowledged',
    );
    const stopped = controller.stop().then(() => 'stopped');
    const late = new Promise((resolve) => setTimeout(() => resolve('still stopping after 5 s'), 5000));
    expect(await Promise.race([stopped, late])).toBe('stopped');
  });

  it('reconnects, reads the result of the job in flight and runs the next job while consumers still fail', async () => {
    const deviceId = uniqueId('reg');
    const d: DirectBridge = directBridge({ url, ns: NS, deviceId, protocolVersion: 4 });
    cleanups.push(() => d.stop());
    await d.bridge.start();
    const controller = await startedController({ settleMs: 100, connectTimeoutMs: 5000 });

    const started = new Promise<void>((resolve) => d.queue.once('started', () => resolve()));
    const job = controller.submit('SLEEP 300\nPRINT through the node loss', {
      to: [deviceId],
      deadlineMs: 8000,
    });
    await started;
    // The node dies: from now on the broker can neither delete nor create consumers. The task
    // ends while the controller is away (it reconnects after 1 s); its retained status remains.
    electing = true;
    const reconnected = new Promise<void>((resolve) =>
      controller.on('connection', (state) => state === 'connected' && resolve()),
    );
    loseConnection(controller.clientId);
    const [result] = await job;
    expect(result).toMatchObject({ deviceId, status: 'FINISHED', report: 'through the node loss' });
    await reconnected;
    expect(controller.connection).toBe('connected');

    // Still electing: the next job's reply and statuses reach the controller too.
    const [next] = await controller.submit('PRINT after the loss', { to: [deviceId], deadlineMs: 5000 });
    expect(next).toMatchObject({ deviceId, status: 'FINISHED', report: 'after the loss' });
  });
});
