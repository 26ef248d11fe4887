/**
 * A QoS 0 delivery is written the moment aedes hands it to the client, not from a setImmediate
 * callback of its own; the writes of one turn of the event loop still leave in one socket write
 * per client (docs/benchmarks.md, "Status latency through the store broker", fourth pass).
 *
 * aedes 1.2's `client.deliver0` checks the message (MQTT 5 no-local, its de-duplication,
 * `authorizeForward`) and then writes a copy at QoS 0 from a setImmediate callback "to clear
 * stacks". A status is published from its PUBACK's write callback, in the check phase of the
 * event loop, so that immediate ran in the *next* turn, after the poll phase had read every other
 * readable connection: during a 500-register fan-out each status waited for a whole extra batch of
 * the others. Written at once it leaves in the turn it was published in. The stacks stay clear:
 * the callback aedes' emitter waits for is still called from a setImmediate (or on 'drain').
 *
 * Coalescing (what broker/write-coalescing.ts does for QoS 1): the client's socket is corked when a
 * delivery is written, and one flush per broker uncorks every corked socket. The flush is queued
 * when aedes has handled a PUBLISH it read (`publishRead`, in the poll phase, behind that PUBLISH's
 * PUBACK write callback, from which aedes publishes it) and moved behind each later one, so it runs
 * in the same check phase, after the last publish the turn started; a delivery with no flush
 * pending queues one; a socket holding FLUSH_BYTES is flushed at once. The semantics of aedes' deliver0 and lib/write.js are kept: the same checks in
 * the same order, the same copy, 'connection closed' / 'packet received not valid' errors closing
 * the client, and a full socket making the emitter wait for 'drain' (a corked socket counts what it
 * buffers against its high-water mark).
 *
 * Relies on aedes 1.2's `client.deliver0`, `conn`, `duplicates`, `broker`, `connecting`,
 * `connected`, `errored`, `_onError` and `waitForDrain`; installed in preConnect first, so the
 * de-duplication and resume wrappers wrap it. test/broker-write-coalescing.test.ts pins it.
 */
import type { AedesPublishPacket, Client } from 'aedes';
import mqttPacket from 'mqtt-packet';

type Deliver = (packet: AedesPublishPacket, callback: () => void) => void;

interface Conn {
  cork(): void;
  uncork(): void;
  destroyed?: boolean;
  writableLength?: number;
}

/**
 * A corked socket holding this much is flushed at once, not at the end of the turn: a turn of a
 * burst writes hundreds of KiB to a controller, and its first statuses should not wait for the
 * last (nor the socket reach its 16 KiB high-water mark and make the emitter wait for 'drain').
 * About 20 statuses; a few dozen writes per 500-register fan-out instead of one per status.
 */
export const FLUSH_BYTES = 8192;

interface ClientInternals {
  id: string | null;
  deliver0: Deliver;
  conn: Conn;
  duplicates: Record<string, number>;
  broker: {
    authorizeForward(client: Client, packet: AedesPublishPacket): AedesPublishPacket | null | undefined;
  };
  connecting: boolean;
  connected: boolean;
  errored: boolean;
  _onError(error: Error | null): void;
  waitForDrain(callback: (error: Error | null) => void): void;
}

/** One per broker: uncorks the sockets its QoS 0 deliveries corked, once per turn. */
export class DeliveryFlush {
  readonly #corked = new Set<Conn>();
  #pending: NodeJS.Immediate | undefined;

  readonly #flush = (): void => {
    this.#pending = undefined;
    for (const conn of this.#corked) if (!conn.destroyed) conn.uncork();
    this.#corked.clear();
  };

  /** aedes handled a PUBLISH it read: the flush goes behind the write callback it queued. */
  publishRead(): void {
    if (this.#pending !== undefined) clearImmediate(this.#pending);
    this.#pending = setImmediate(this.#flush);
  }

  /** A delivery is about to be written to `conn`: it waits for the flush. */
  hold(conn: Conn): void {
    if (!this.#corked.has(conn)) {
      conn.cork();
      this.#corked.add(conn);
    }
    this.#pending ??= setImmediate(this.#flush);
  }

  /** A delivery was written to `conn`: past FLUSH_BYTES it leaves now. */
  wrote(conn: Conn): void {
    if ((conn.writableLength ?? 0) < FLUSH_BYTES || !this.#corked.delete(conn)) return;
    if (!conn.destroyed) conn.uncork();
  }
}

/** aedes' dedupe (lib/client.js): a message passes once per origin broker and counter. */
function firstDelivery(client: ClientInternals, packet: AedesPublishPacket): boolean {
  const origin = packet.brokerId;
  if (!origin) return true;
  const counter = packet.brokerCounter;
  if ((client.duplicates[origin] ?? 0) >= counter) return false;
  client.duplicates[origin] = counter;
  return true;
}

/** What aedes-packet's copy keeps of a message delivered at QoS 0 (no packet id). */
function qos0Copy(packet: AedesPublishPacket): mqttPacket.IPublishPacket {
  const copy: mqttPacket.IPublishPacket = {
    cmd: 'publish',
    topic: packet.topic,
    payload: packet.payload ?? Buffer.alloc(0),
    qos: 0,
    retain: packet.retain ?? false,
    dup: packet.dup ?? false,
  };
  const properties = (packet as { properties?: mqttPacket.IPublishPacket['properties'] }).properties;
  if (properties !== undefined) copy.properties = properties;
  return copy;
}

/** aedes' lib/write.js: the callback runs from a setImmediate, or on 'drain' when the socket is full. */
function write(client: ClientInternals, packet: mqttPacket.IPublishPacket, done: (e: Error | null) => void) {
  let error: Error | null = null;
  if (client.connecting || client.connected) {
    try {
      if (!mqttPacket.writeToStream(packet, client.conn as never) && !client.errored) {
        client.waitForDrain(done);
        return;
      }
    } catch {
      error = new Error('packet received not valid');
    }
  } else {
    error = new Error('connection closed');
  }
  setImmediate(done, error);
}

/** Replaces aedes' deliver0 of `client` (see above). */
export function writeQoS0AtOnce(client: Client, flush: DeliveryFlush): void {
  const internals = client as unknown as ClientInternals;
  const conn = internals.conn;
  if (typeof conn?.cork !== 'function' || typeof conn.uncork !== 'function') return;
  if (typeof internals.deliver0 !== 'function' || typeof internals.waitForDrain !== 'function') return;
  internals.deliver0 = (packet, callback) => {
    // MQTT 5 no-local (aedes checks it; a 3.1.1 packet has no `nl`)
    const local = packet as { clientId?: string; nl?: boolean };
    const noLocal = local.clientId === internals.id && local.nl;
    const forward = noLocal
      ? undefined
      : firstDelivery(internals, packet) && internals.broker.authorizeForward(client, packet);
    if (!forward) {
      setImmediate(callback);
      return;
    }
    flush.hold(conn);
    write(internals, qos0Copy(forward), (error) => {
      internals._onError(error);
      callback(); // no error: aedes' emitter would throw it
    });
    flush.wrote(conn);
  };
}

/** The parser event after which `flush.publishRead()` is called (see above). */
export function watchPublishes(client: Client, flush: DeliveryFlush): void {
  const parser = (
    client as unknown as { _parser?: { on(e: 'packet', f: (p: { cmd: string }) => void): void } }
  )._parser;
  parser?.on('packet', (packet) => {
    if (packet.cmd === 'publish') flush.publishRead();
  });
}
