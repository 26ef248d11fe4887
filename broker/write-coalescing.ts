/**
 * The QoS 1 and 2 deliveries aedes writes to one client in one turn of the event loop leave in one
 * socket write, instead of one per MQTT packet (docs/benchmarks.md, "Status latency through the
 * store broker"). QoS 0 deliveries are written at once and flushed by broker/qos0-delivery.ts.
 *
 * aedes 1.2 schedules each delivery (`client.deliverQoS`) as a setImmediate
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
 * Relies on aedes 1.2's `client.deliverQoS` and `client.conn`, like dedupe.ts;
 * installed in preConnect, last, so it wraps the other wrappers.
 */
import type { AedesPublishPacket, Client } from 'aedes';

type Deliver = (packet: AedesPublishPacket, callback: () => void) => void;

interface ClientInternals {
  deliverQoS: Deliver;
  conn: { cork?(): void; uncork?(): void; destroyed?: boolean };
}

export function coalesceDeliveries(client: Client): void {
  const internals = client as unknown as ClientInternals;
  const conn = internals.conn;
  if (typeof conn?.cork !== 'function' || typeof conn.uncork !== 'function') return;
  if (typeof internals.deliverQoS !== 'function') return;
  let corked = false;
  let flush: NodeJS.Immediate | undefined;
  const uncork = (): void => {
    flush = undefined;
    corked = false;
    if (!conn.destroyed) conn.uncork!();
  };
  const deliverQoS = internals.deliverQoS;
  internals.deliverQoS = (packet, callback) => {
    // aedes' deliverQoS hands a QoS 0 message to deliver0, which writes it at once
    // (qos0-delivery.ts): nothing to hold back here.
    if (packet.qos === 0) {
      deliverQoS(packet, callback);
      return;
    }
    if (!corked) {
      corked = true;
      conn.cork!();
    }
    deliverQoS(packet, callback); // queues aedes' write callback (or nothing, for a duplicate)
    if (flush !== undefined) clearImmediate(flush);
    flush = setImmediate(uncork); // behind it
  };
}
