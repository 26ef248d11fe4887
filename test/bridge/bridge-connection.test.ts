/**
 * The device bridge's connection options and edges, each against one real broker: start-up
 * (refused login, no broker yet, WebSocket), MQTT 5 response topic on mosquitto, the bounded
 * requestId memory, and docs/asyncapi.yaml kept in step with the payload schemas.
 */
import { readFile } from 'node:fs/promises';
import { type Logger, pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import {
  deviceCancelSchema,
  groupCancelSchema,
  offlineStateSchema,
  onlineStateSchema,
  replyAcceptedSchema,
  replyRefusedSchema,
  scriptSubmissionSchema,
  statusMessageSchema,
  topics,
} from '../../bridge/contract/topics.ts';
import { type BrokerUser, StoreBroker } from '../../broker/store-broker.ts';
import { skipWithout } from '../support/binaries.ts';
import { directBridge, uniqueId } from '../support/bridge-device.ts';
import { brokersByName } from '../support/brokers.ts';
import { silent } from '../support/loggers.ts';
import { type Received, TestClient } from '../support/mqtt.ts';
import { freePort } from '../support/ports.ts';
import { cleanupsAfterEach } from '../support/suite-hooks.ts';
import { until } from '../support/waits.ts';

const json = (m: Received) => m.json as Record<string, unknown> | undefined;
const cleanups = cleanupsAfterEach();

function later<T extends { stop(): Promise<unknown> }>(thing: T): T {
  cleanups.push(() => thing.stop());
  return thing;
}

function storeBroker(port: number, users: BrokerUser[], extra: { wsPort?: number } = {}): StoreBroker {
  // Anonymous clients (the test subscribers) are controllers; devices need their user.
  return later(
    new StoreBroker({
      port,
      host: '127.0.0.1',
      ns: 'boot',
      users,
      allowAnonymous: true,
      logger: silent,
      ...extra,
    }),
  );
}

async function subscriber(url: string, filters: string[], protocolVersion: 4 | 5 = 4): Promise<TestClient> {
  const client = await TestClient.connect(url, filters, { protocolVersion });
  cleanups.push(() => client.close());
  return client;
}

describe('starting the bridge', () => {
  it('rejects a refused login with a clear error, and no password reaches the log', async () => {
    const broker = storeBroker(0, [{ name: 'till-1', password: 'right-password', role: 'device' }]);
    await broker.start();
    const lines: string[] = [];
    const logger: Logger = pino({ level: 'debug' }, { write: (line: string) => lines.push(line) });
    const url = `mqtt://till-1:wrong-secret-123@127.0.0.1:${broker.port}`;
    const { bridge, queue } = later(directBridge({ url, ns: 'boot', deviceId: 'till-1', logger }));
    const error = (await bridge.start().catch((e: Error) => e)) as Error;
    expect(error).toBeInstanceOf(Error);
    expect(error.message).toMatch(/refused the connection: .*(Bad username or password|Not authorized)/);
    expect(error.message).not.toContain('wrong-secret-123');
    expect(bridge.health()).toEqual({
      state: 'offline',
      url: `mqtt://127.0.0.1:${broker.port}`,
      pending: 0,
      offlineMs: expect.any(Number),
    });
    expect(lines.join('')).not.toContain('wrong-secret-123');
    expect(queue.listenerCount('queued')).toBe(0);
  });

  it('starts without a broker, keeps trying, and connects once the broker is up', async () => {
    const port = await freePort();
    // Created (not started) first, so that it stops after the bridge.
    const broker = storeBroker(port, [{ name: 'late', password: 'late-password', role: 'device' }]);
    const url = `mqtt://127.0.0.1:${port}`;
    const device = later(
      directBridge({
        url,
        username: 'late',
        password: 'late-password',
        ns: 'boot',
        deviceId: 'late',
        startTimeoutMs: 200,
        reconnectPeriodMs: 200,
      }),
    );
    await device.bridge.start();
    expect(['connecting', 'reconnecting']).toContain(device.bridge.health().state);
    // A task run before any broker was reachable is published once one is.
    const early = device.queue.submit('PRINT early', { source: 'rest' }).task;
    await device.queue.waitForEnd(early.id, 5000);
    await broker.start();
    await until(() => device.bridge.health().state === 'connected', 'the bridge to connect');
    const live = await subscriber(url, [topics.taskStatus('boot', 'late', early.id)]);
    const status = await live.waitFor((m) => m.retain, 'retained status of the early task');
    // Transitions while disconnected were not queued: the first message is the current status.
    expect(json(status)).toMatchObject({ id: early.id, status: 'FINISHED', report: 'early', seq: 1 });
  });

  it('connects over WebSocket (ws://) as well', async () => {
    const broker = storeBroker(0, [{ name: 'ws-till', password: 'ws-password', role: 'device' }], {
      wsPort: 0,
    });
    await broker.start();
    const live = await subscriber(`mqtt://127.0.0.1:${broker.port}`, [topics.state('boot', 'ws-till')]);
    const url = `ws://ws-till:ws-password@127.0.0.1:${broker.wsPort}`;
    const { bridge } = later(directBridge({ url, ns: 'boot', deviceId: 'ws-till' }));
    await bridge.start();
    expect(bridge.health()).toMatchObject({ state: 'connected', url: `ws://127.0.0.1:${broker.wsPort}/` });
    await live.waitFor((m) => json(m)?.online === true, 'online state over WebSocket');
  });
});

describe('on one broker', () => {
  it.skipIf(skipWithout(['mosquitto'], 'MQTT 5 on mosquitto'))(
    'MQTT 5 (mosquitto): ignores the response topic, answers on its own reply topic (contract 3.1)',
    async () => {
      const broker = later(await brokersByName.mosquitto.start('v5'));
      const deviceId = uniqueId('v5');
      const own = topics.deviceReply('v5', deviceId, 'v5-1');
      const live = await subscriber(broker.url, ['v5/replies/me', own], 5);
      const { bridge } = later(directBridge({ url: broker.url, protocolVersion: 5, ns: 'v5', deviceId }));
      await bridge.start();
      await live.publish(
        topics.deviceScripts('v5', deviceId),
        JSON.stringify({ script: 'PRINT v5', requestId: 'v5-1' }),
        {
          properties: { responseTopic: 'v5/replies/me', correlationData: Buffer.from('corr-42') },
        },
      );
      const answer = await live.waitFor((m) => m.topic === own, 'the reply');
      expect(json(answer)).toEqual({
        requestId: 'v5-1',
        deviceId,
        id: expect.any(Number),
        status: 'RUNNING',
      });
      expect(answer.packet.properties?.correlationData).toBeUndefined();
      expect(live.messages.filter((m) => m.topic === 'v5/replies/me')).toEqual([]);
    },
  );

  it('remembers the requestIds of the last N submissions only (FIFO)', async () => {
    const broker = later(await brokersByName.embedded.start('mem'));
    const deviceId = uniqueId('memory');
    const reply = `mem/devices/${deviceId}/replies/+`;
    const controller = await TestClient.connect(broker.controllerUrl, [reply], broker.controllerCreds);
    cleanups.push(() => controller.close());
    const device = later(
      directBridge(
        { url: broker.url, ...broker.deviceCreds(deviceId), ns: 'mem', deviceId },
        { retain: 16, maxQueue: 16, requestIdMemory: 2 },
      ),
    );
    await device.bridge.start();
    const send = async (requestId: string, count: number) => {
      const body = { script: `PRINT ${requestId}`, requestId };
      await controller.publish(topics.deviceScripts('mem', deviceId), JSON.stringify(body));
      const replies = await controller.waitForCount(
        (m) => m.topic.includes('/replies/'),
        count,
        `reply ${count}`,
      );
      return json(replies[count - 1]!)?.id as number;
    };
    const first = await send('m-1', 1);
    await send('m-2', 2);
    const third = await send('m-3', 3);
    expect(await send('m-3', 4)).toBe(third); // still remembered
    expect(await send('m-1', 5)).not.toBe(first); // forgotten: a new task
    expect(device.queue.list()).toHaveLength(4);
  });
});

describe('docs/asyncapi.yaml', () => {
  it('names every topic of docs/mqtt.md, docs/api.md, with examples that satisfy the payload schemas', async () => {
    const doc = parse(await readFile(new URL('../../docs/asyncapi.yaml', import.meta.url), 'utf8')) as {
      channels: Record<string, unknown>;
      components: { messages: Record<string, { examples?: Array<{ payload: unknown }> }> };
    };
    expect(Object.keys(doc.channels).sort()).toEqual(
      [
        '{ns}/devices/{deviceId}/state',
        '{ns}/devices/{deviceId}/tasks/{taskId}/status',
        '{ns}/devices/{deviceId}/scripts',
        '{ns}/groups/{group}/scripts',
        '{ns}/devices/{deviceId}/cancel',
        '{ns}/groups/{group}/cancel',
        '{ns}/devices/{deviceId}/replies/{requestId}',
      ].sort(),
    );
    const schemas = {
      OnlineState: onlineStateSchema.strict(),
      OfflineState: offlineStateSchema.strict(),
      TaskStatus: statusMessageSchema.strict(),
      ScriptSubmission: scriptSubmissionSchema.strict(),
      DeviceCancel: deviceCancelSchema.strict(),
      GroupCancel: groupCancelSchema.strict(),
      ReplyAccepted: replyAcceptedSchema.strict(),
      ReplyRefused: replyRefusedSchema.strict(),
    };
    for (const [name, schema] of Object.entries(schemas)) {
      const examples = doc.components.messages[name]?.examples ?? [];
      expect(examples.length, name).toBeGreaterThan(0);
      for (const example of examples) expect(schema.safeParse(example.payload).success, name).toBe(true);
    }
  });
});
