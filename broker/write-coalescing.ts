/**
 * The deliveries aedes writes to one client in one turn of the event loop leave in one socket
 * write, instead of one per MQTT packet (docs/benchmarks.md, "Status latency through the store
 * broker").
 *
 * aedes 1.2 schedules each delivery (`client.deliver0` / `client.deliverQoS`) as a setImmediate
 * callback of its own that writes one packet, and mqtt-packet corks the socket only until the
 * next tick, so every packet was a `writev` system call and, with Nagle's algorithm off
 * (listeners.ts), a TCP segment. A store controller receives every register's statuses on one
 * connection: during a 500-register fan-out a quarter of the store broker's CPU profile was in
 * `writev`.
 *
 * When a delivery is scheduled, the client's socket is corked and a flush (uncork) is queued
 * behind aedes' write callback; each further delivery scheduled before the flush runs moves the
 * flush behind its own write callback. The writes run in the order aedes queued them, and the
 * flush right after the last: in the same check phase of the event loop, so no packet waits for
 * another turn. Backpressure is unchanged: a corked socket counts what it buffers against its
 * high-water mark, so aedes' `write()` still sees false and waits for 'drain'.
 *
 * Relies on aedes 1.2's `client.deliver0`, `client.deliverQoS` and `client.conn`, like dedupe.ts;
 * installed in preConnect, last, so it wraps the other wrappers.
 */
import type { AedesPublishPacket, Client } from 'aedes';

type Deliver = (packet: AedesPublishPacket, callback: () => void) => void;

interface ClientInternals {
  deliver0: Deliver;
  deliverQoS: Deliver;
  conn: { cork?(): void; uncork?(): void; destroyed?: boolean };
}

export function coalesceDeliveries(client: Client): void {
  const internals = client as unknown as ClientInternals;
  const conn = internals.conn;
  if (typeof conn?.cork !== 'function' || typeof conn.uncork !== 'function') return;
  if (typeof internals.deliver0 !== 'function' || typeof internals.deliverQoS !== 'function') return;
  let corked = false;
  let flush: NodeJS.Immediate | undefined;
  const uncork = (): void => {
    flush = undefined;
    corked = false;
    if (!conn.destroyed) conn.uncork!();
  };
  const batched = (deliver: Deliver): Deliver => {
    return (packet, callback) => {
      // aedes' deliverQoS hands a QoS 0 message to deliver0, i.e. to this wrapper again: one
      // cork, one flush, whatever the nesting.
      if (!corked) {
        corked = true;
        conn.cork!();
      }
      deliver(packet, callback); // queues aedes' write callback (or nothing, for a duplicate)
      if (flush !== undefined) clearImmediate(flush);
      flush = setImmediate(uncork); // behind it
    };
  };
  internals.deliver0 = batched(internals.deliver0);
  internals.deliverQoS = batched(internals.deliverQoS);
}
