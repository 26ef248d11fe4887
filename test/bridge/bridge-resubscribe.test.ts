/**
 * A connection lost while the device was still subscribing (docs/mqtt.md, "Connection,
 * reconnection"): the broker keeps the persistent session with the subscriptions granted so far
 * and says "session present" at the next CONNACK, yet the rest are missing. nats-server's MQTT
 * gateway, busy creating thousands of sessions' JetStream consumers, did this to 22 registers of
 * 5,000 (docs/decisions/resubscribe-until-granted.md): online, and deaf to every group script. The
 * device subscribes again after such a reconnect. A real aedes broker in the test process cuts the
 * first connection when the group's script SUBSCRIBE arrives, after the device's own was granted.
 */
import net from 'node:net';
import { Aedes, type Client, type ConnackPacket } from 'aedes';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { topics } from '../../bridge/contract/topics.ts';
import { directBridge, uniqueId } from '../support/bridge-device.ts';
import { TestClient } from '../support/mqtt.ts';
import { cleanupsAfterEach } from '../support/suite-hooks.ts';
import { until } from '../support/waits.ts';

describe('a device whose subscribing was cut short', () => {
  const ns = 'resub';
  let aedes: Aedes;
  let server: net.Server;
  let url: string;
  /** Client ids whose first group-script SUBSCRIBE ends their connection. */
  const cutOnGroup = new Set<string>();
  const connacks: Array<{ clientId: string; sessionPresent: boolean }> = [];
  const groupSubscribes: string[] = [];
  const cleanups = cleanupsAfterEach();

  beforeAll(async () => {
    aedes = await Aedes.createBroker({
      authorizeSubscribe: (client: Client | null, sub, callback) => {
        if (client && sub.topic === topics.groupScripts(ns, 'all')) {
          groupSubscribes.push(client.id);
          if (cutOnGroup.delete(client.id)) {
            // The connection dies before this SUBACK; the session keeps what was granted.
            client.conn.destroy();
            callback(null, null);
            return;
          }
        }
        callback(null, sub);
      },
    });
    aedes.on('connackSent', (packet: ConnackPacket, client: Client) =>
      connacks.push({ clientId: client.id, sessionPresent: packet.sessionPresent === true }),
    );
    server = net.createServer(aedes.handle);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
    url = `mqtt://127.0.0.1:${(server.address() as net.AddressInfo).port}`;
  });
  afterAll(async () => {
    await new Promise<void>((resolve) => aedes.close(() => resolve()));
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  it('subscribes again on the resumed session and runs the group script', async () => {
    const deviceId = uniqueId('cut');
    const clientId = `regbridge_${ns}_${deviceId}`;
    cutOnGroup.add(clientId);
    const device = directBridge({ url, ns, deviceId, reconnectPeriodMs: 100 });
    const controller = await TestClient.connect(url, [topics.deviceReply(ns, deviceId, 'cut-1')]);
    cleanups.push(async () => {
      await controller.close();
      await device.stop();
    });
    await device.bridge.start();
    // The second connection resumed a session holding the device's own subscriptions only.
    await until(() => connacks.filter((c) => c.clientId === clientId).length >= 2, 'a reconnect');
    expect(connacks.filter((c) => c.clientId === clientId).map((c) => c.sessionPresent)).toEqual([
      false,
      true,
    ]);
    await until(
      () => groupSubscribes.filter((id) => id === clientId).length >= 2,
      'the group script subscription again',
    );
    await until(() => device.bridge.health().state === 'connected', 'connected');
    await controller.publish(
      topics.groupScripts(ns, 'all'),
      JSON.stringify({ script: 'PRINT group', requestId: 'cut-1' }),
    );
    const reply = await controller.waitFor((m) => m.topic.endsWith('/replies/cut-1'), 'the reply');
    expect((reply.json as { error?: string; requestId?: string }).error).toBeUndefined();
    expect(device.queue.list().map((t) => t.requestId)).toEqual(['cut-1']);
  });
});
