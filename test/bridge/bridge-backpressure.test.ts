/**
 * The bridge's flow control (docs/mqtt.md, "Backpressure"): when tasks end faster than the broker
 * acknowledges their statuses, at most `maxStatusesInFlight` status and clear messages wait for a
 * PUBACK; the rest are coalesced per task, and once acknowledgements come back every held task's
 * latest status and every eviction clear still reach the broker. A TCP proxy between the device
 * and the store broker holds the broker's packets (PUBACKs) back, as a stalled broker would.
 */
import net from 'node:net';
import { describe, expect, it } from 'vitest';
import { topics } from '../../bridge/contract/topics.ts';
import { directBridge, uniqueId } from '../support/bridge-device.ts';
import { brokersByName, type RunningBroker } from '../support/brokers.ts';
import { type Received, TestClient } from '../support/mqtt.ts';
import { brokerPerSuite } from '../support/suite-hooks.ts';
import { until } from '../support/waits.ts';

interface AckGate {
  url: string;
  /** Broker-to-device bytes are held back from now on (the device's own sends still flow). */
  hold(): void;
  /** Forwards what was held, and everything after. */
  release(): void;
  close(): Promise<void>;
}

/** A TCP proxy to `target` whose broker-to-device direction can be held. */
async function ackGate(target: URL): Promise<AckGate> {
  let holding = false;
  const held: Array<{ socket: net.Socket; chunk: Buffer }> = [];
  const sockets = new Set<net.Socket>();
  const server = net.createServer((device) => {
    const upstream = net.connect(Number(target.port), target.hostname);
    for (const socket of [device, upstream]) {
      sockets.add(socket);
      socket.on('error', () => undefined);
      socket.on('close', () => {
        sockets.delete(socket);
        device.destroy();
        upstream.destroy();
      });
    }
    device.on('data', (chunk: Buffer) => upstream.write(chunk));
    upstream.on('data', (chunk: Buffer) => {
      if (holding) held.push({ socket: device, chunk });
      else device.write(chunk);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  return {
    url: `mqtt://127.0.0.1:${port}`,
    hold: () => {
      holding = true;
    },
    release: () => {
      holding = false;
      for (const { socket, chunk } of held.splice(0)) if (!socket.destroyed) socket.write(chunk);
    },
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

const json = (m: Received) => m.json as Record<string, unknown> | undefined;

describe('status backpressure: a broker that does not acknowledge', () => {
  const ns = 'flow/store-3';
  const MAX_IN_FLIGHT = 20;
  const RETAIN = 16;
  const TASKS = 2000;
  let broker: RunningBroker;
  const cleanups = brokerPerSuite(brokersByName.embedded, ns, (started) => {
    broker = started;
  });

  it('keeps the bound, coalesces, and delivers every latest status and clear once acknowledged', async () => {
    const gate = await ackGate(new URL(broker.url));
    cleanups.push(() => gate.close());
    const deviceId = uniqueId('flood');
    const device = directBridge(
      { url: gate.url, ...broker.deviceCreds(deviceId), ns, deviceId, maxStatusesInFlight: MAX_IN_FLIGHT },
      { retain: RETAIN, maxQueue: TASKS },
    );
    cleanups.push(() => device.stop());
    const { bridge, queue } = device;
    const live = await TestClient.connect(
      broker.controllerUrl,
      [topics.deviceTaskStatuses(ns, deviceId)],
      broker.controllerCreds,
    );
    cleanups.push(() => live.close());
    await bridge.start();

    // Normal case (docs/mqtt.md): one message per transition, nothing held back.
    const first = queue.submit('PRINT first', { source: 'rest' }).task;
    const firstTopic = topics.taskStatus(ns, deviceId, first.id);
    await live.waitFor((m) => m.topic === firstTopic && json(m)?.status === 'FINISHED', 'first FINISHED');
    expect(live.messages.filter((m) => m.topic === firstTopic)).toHaveLength(3);
    await until(() => bridge.backlog().statuses.now === 0, 'the first task acknowledged');

    gate.hold();
    let last = first;
    for (let i = 0; i < TASKS; i += 1) last = queue.submit(`PRINT ${i}`, { source: 'rest' }).task;
    await queue.waitForEnd(last.id, 20_000);
    expect(queue.get(last.id)?.state).toBe('finished');
    // Every task ran; no acknowledgement came back: the window is full and no more.
    const stalled = bridge.backlog();
    expect(stalled.statuses.now).toBe(MAX_IN_FLIGHT);
    expect(stalled.statuses.peak).toBe(MAX_IN_FLIGHT);
    expect(stalled.unacknowledged).toBeLessThanOrEqual(MAX_IN_FLIGHT);
    // What waits is bounded by the held tasks (and the clears owed for the few published ones).
    expect(stalled.waiting).toBeGreaterThan(0);
    expect(stalled.waiting).toBeLessThanOrEqual(RETAIN + MAX_IN_FLIGHT + 1);

    gate.release();
    await until(
      () => bridge.backlog().waiting === 0 && bridge.backlog().statuses.now === 0,
      'the backlog to drain',
      15_000,
    );
    expect(bridge.backlog().statuses.peak).toBe(MAX_IN_FLIGHT);

    // Every held task's latest status arrived, and so did a clear for every other task published.
    const held = new Set(queue.list().map((task) => task.id));
    expect(held.size).toBe(RETAIN);
    const barrierTopic = `${ns}/replies/${uniqueId('barrier')}`;
    await live.subscribe([barrierTopic]);
    await live.barrier(barrierTopic);
    const lastByTopic = new Map<string, Received>();
    const seqs: number[] = [];
    for (const m of live.messages) {
      if (m.topic === barrierTopic) continue;
      lastByTopic.set(m.topic, m);
      if (m.payload.length > 0) seqs.push(Number(json(m)?.seq));
    }
    for (const id of held) {
      const final = lastByTopic.get(topics.taskStatus(ns, deviceId, id));
      expect(final && json(final)?.status, `task ${id}`).toBe('FINISHED');
    }
    for (const [topic, final] of lastByTopic) {
      const id = Number(topic.split('/').at(-2));
      if (!held.has(id)) expect(final.payload.length, `${topic} cleared`).toBe(0);
    }
    // Fewer messages than transitions (coalesced), and seq still grows by one per message.
    expect(seqs.length).toBeLessThan(3 * TASKS);
    expect(seqs).toEqual(seqs.map((_, i) => i + 1));

    // The broker holds exactly the held tasks' statuses (docs/mqtt.md, eviction clears).
    const fresh = await TestClient.connect(
      broker.controllerUrl,
      [topics.deviceTaskStatuses(ns, deviceId), barrierTopic],
      broker.controllerCreds,
    );
    cleanups.push(() => fresh.close());
    // aedes streams retained messages from its store after the SUBACK, so a barrier alone can
    // overtake them: wait for as many as there should be, then the barrier catches any extra.
    await fresh.waitForCount((m) => m.retain, held.size, 'the retained statuses');
    await fresh.barrier(barrierTopic);
    const retained = fresh.messages.filter((m) => m.retain);
    expect(new Set(retained.map((m) => json(m)?.id))).toEqual(held);
    expect(retained.every((m) => json(m)?.status === 'FINISHED')).toBe(true);
  });
});
