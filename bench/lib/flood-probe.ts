/**
 * What a flooded device holds in its queues, read every sample (overload scenario,
 * BENCH_FLOOD_DETAIL=1; docs/decisions/heap-growth.md). Every figure is a count of
 * packets or bytes waiting somewhere between the flooder and the task queue and back:
 * - the embedded aedes: its emitter's queue (messages past its `concurrency`), each client's
 *   socket write buffer and pending drains, and the packets of each persistent session awaiting
 *   their PUBACK (counted by wrapping the memory persistence's outgoing calls);
 * - the bridge's mqtt.js client: QoS 1 messages awaiting PUBACK (`outgoing`), its offline queue,
 *   its store queue and socket write buffer; the bridge's deferred replies and owed statuses;
 * - the task queue.
 * Reads private fields of aedes and mqtt.js: a benchmark probe, never used by the device.
 */
import { Aedes } from 'aedes';
import type { RunningDevice } from '../../cli/device.ts';

type Counts = Record<string, number>;

interface AedesLike {
  mq: { _messageQueue?: unknown[]; current?: number };
  clients: Record<
    string,
    {
      id: string;
      conn: NodeJS.WritableStream & { writableLength?: number; readableLength?: number };
      _pendingDrains?: unknown[];
      _parsingBatch?: number;
    }
  >;
  persistence: Record<string, (...args: unknown[]) => unknown>;
}

let captured: AedesLike | undefined;
/** Persistent-session packets enqueued and not yet cleared, by client id. */
const sessionOutgoing = new Map<string, number>();

/** Call before the device starts: remembers the aedes instance it creates. */
export function captureAedes(): void {
  const original = Aedes.createBroker.bind(Aedes);
  (Aedes as unknown as { createBroker: typeof Aedes.createBroker }).createBroker = async (opts) => {
    const broker = await original(opts);
    captured = broker as unknown as AedesLike;
    wrapPersistence(captured.persistence);
    return broker;
  };
}

function wrapPersistence(p: AedesLike['persistence']): void {
  const bump = (id: string, by: number): void => {
    sessionOutgoing.set(id, (sessionOutgoing.get(id) ?? 0) + by);
  };
  const enqueue = p.outgoingEnqueue!.bind(p);
  p.outgoingEnqueue = (sub: unknown, packet: unknown) => {
    bump((sub as { clientId: string }).clientId, 1);
    return enqueue(sub, packet);
  };
  const combi = p.outgoingEnqueueCombi!.bind(p);
  p.outgoingEnqueueCombi = (subs: unknown, packet: unknown) => {
    for (const sub of subs as { clientId: string }[]) bump(sub.clientId, 1);
    return combi(subs, packet);
  };
  const clear = p.outgoingClearMessageId!.bind(p);
  p.outgoingClearMessageId = (client: unknown, packet: unknown) => {
    const result = clear(client, packet) as Promise<unknown>;
    return result.then((found) => {
      if (found) bump((client as { id: string }).id, -1);
      return found;
    });
  };
}

export function probe(device: RunningDevice): Counts {
  const counts: Counts = {};
  const a = captured;
  if (a) {
    counts.aedesEmitterQueue = a.mq._messageQueue?.length ?? 0;
    counts.aedesEmitterCurrent = a.mq.current ?? 0;
    for (const client of Object.values(a.clients)) {
      const name = client.id?.startsWith('regbridge_') ? 'bridge' : client.id;
      counts[`aedes.${name}.writeBytes`] = client.conn.writableLength ?? 0;
      counts[`aedes.${name}.readBytes`] = client.conn.readableLength ?? 0;
      counts[`aedes.${name}.pendingDrains`] = client._pendingDrains?.length ?? 0;
      counts[`aedes.${name}.parsingBatch`] = client._parsingBatch ?? 0;
      counts[`aedes.${name}.sessionOutgoing`] = sessionOutgoing.get(client.id) ?? 0;
    }
  }
  const bridge = device.bridge as unknown as
    | {
        client?: {
          outgoing: object;
          queue: unknown[];
          _storeProcessingQueue: unknown[];
          stream: { writableLength: number; readableLength: number };
        };
        parts: {
          link: { heldReplies: unknown[] };
          statuses: { pending: number; unacknowledged: { now: number } };
        };
      }
    | undefined;
  if (bridge?.client) {
    const c = bridge.client;
    let outgoing = 0;
    for (const _ in c.outgoing) outgoing += 1;
    counts['mqttjs.outgoing'] = outgoing;
    counts['mqttjs.queue'] = c.queue.length;
    counts['mqttjs.storeQueue'] = c._storeProcessingQueue.length;
    counts['mqttjs.writeBytes'] = c.stream.writableLength;
    counts['mqttjs.readBytes'] = c.stream.readableLength;
    counts['bridge.deferredReplies'] = bridge.parts.link.heldReplies.length;
    counts['bridge.statusesOwed'] = bridge.parts.statuses.pending;
    counts['bridge.statusesInFlight'] = bridge.parts.statuses.unacknowledged.now;
  }
  counts['queue.queued'] = device.queue.queuedCount;
  return counts;
}

/** Keeps the highest value of every count since the last reset. */
export class PeakCounts {
  private peaks: Counts = {};

  note(counts: Counts): void {
    for (const [key, value] of Object.entries(counts)) {
      if (value > (this.peaks[key] ?? -Infinity)) this.peaks[key] = value;
    }
  }

  take(): Counts {
    const peaks = this.peaks;
    this.peaks = {};
    return peaks;
  }
}
