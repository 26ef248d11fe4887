/**
 * Works around: aedes 1.2 writes live messages to a resuming persistent session before its
 * CONNACK ([MQTT-3.2.0-1]) and sends a queued message twice (from the queue and live); upstream
 * report docs/upstream/aedes-connack-first.md.
 * Delete when: aedes subscribes a restored session to the emitter only after its CONNACK and
 * queue are written (lib/handlers/connect.js).
 *
 * A resumed persistent session (clean=false) gets its CONNACK first, then its queue, then live
 * messages, each message once. Over Redis, under load, the resumed client was stuck or got a
 * message twice (docs/broker.md, "Persistent sessions across instances";
 * test/broker/broker-resume.test.ts pins it).
 *
 * aedes' CONNECT runs fetchSubs, restoreSubs, storeWill, registerClient, CONNACK, emptyQueue
 * (lib/handlers/connect.js). restoreSubs puts the session's subscriptions back on the emitter
 * before the CONNACK, and lib/write.js writes whenever the client is `connecting`, so a message
 * emitted in that window is written before the CONNACK ([MQTT-3.2.0-1]: the first packet from the
 * server MUST be CONNACK). With aedes-persistence-redis the window spans storeWill's Redis round
 * trips, and a message is always on its way: aedes queues a QoS 1/2 message for the session
 * (enqueueOffline, an RPUSH) before it emits it through Redis pub/sub (emitPacket), so one
 * published while the session was offline reaches the instance live just after restoreSubs. The
 * queue then sends it a second time, with the same packet id. mqtt.js handles incoming packets one
 * at a time and will not answer a PUBLISH before it has a CONNACK, while the CONNACK waits behind
 * that PUBLISH: the client stalls, nothing more arrives, and what was sent stays unacknowledged.
 *
 * So a client's live deliveries wait until aedes has finished its CONNECT (the client's
 * `connected` event, after emptyQueue), and what the queue sent is marked (dedupe.ts) so
 * its live copy is dropped. A held message is acknowledged to the emitter at once: for a
 * persistent session a QoS 1/2 message is in its queue already, and a publisher's PUBACK must not
 * wait for another client's CONNECT.
 */
import { Readable } from 'node:stream';
import type { AedesPublishPacket, Client } from 'aedes';
import { markQueuedSend } from './dedupe.ts';

type Deliver = (packet: AedesPublishPacket, callback: () => void) => void;

interface ClientInternals {
  deliver0: Deliver;
  deliverQoS: Deliver;
  connected: boolean;
  closed: boolean;
  once(event: 'connected', listener: () => void): void;
}

/**
 * How many live messages one client may have waiting for its CONNECT to finish; beyond that they
 * are dropped (QoS 0 may be; a persistent session's QoS 1/2 messages stay in its queue and come on
 * its next resume). A CONNECT ends within aedes' drain time-out, so this is a guard, not a limit a
 * well-behaved client meets.
 */
export const MAX_HELD_DELIVERIES = 1000;

function noop(): void {}

/** Installed in preConnect, after fixDedupe, so it wraps the de-duplicating delivery functions. */
export function holdUntilConnected(client: Client): void {
  const internals = client as unknown as ClientInternals;
  let held: (() => void)[] | undefined = [];
  internals.once('connected', () => {
    const waiting = held ?? [];
    held = undefined;
    for (const deliver of waiting) deliver();
  });
  const hold = (deliver: Deliver): Deliver => {
    return (packet, callback) => {
      if (held === undefined || internals.connected) {
        deliver(packet, callback);
        return;
      }
      if (!internals.closed && held.length < MAX_HELD_DELIVERIES) held.push(() => deliver(packet, noop));
      setImmediate(callback);
    };
  };
  internals.deliver0 = hold(internals.deliver0);
  internals.deliverQoS = hold(internals.deliverQoS);
}

interface QueueStore {
  outgoingStream(client: Client): Readable;
}

/** Marks every message aedes' emptyQueue reads from a session's queue as sent to that client. */
export function markQueueSends(persistence: unknown): void {
  const store = persistence as QueueStore;
  const outgoingStream = store.outgoingStream.bind(store);
  store.outgoingStream = (client) => {
    const source = outgoingStream(client);
    async function* marked(): AsyncGenerator<AedesPublishPacket> {
      for await (const packet of source as AsyncIterable<AedesPublishPacket>) {
        markQueuedSend(client, packet);
        yield packet;
      }
    }
    return Readable.from(marked());
  };
}
