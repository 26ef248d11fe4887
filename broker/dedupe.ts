/**
 * Works around aedes' overlap de-duplication losing messages (aedes issues #955 and #994, still
 * in 1.2.0). When a message matches two subscriptions of one client (`a/#` and `a/b`), aedes
 * delivers it once by remembering, per client and origin broker, the highest `brokerCounter`
 * delivered, and drops anything not above it. Counters are taken when a publish starts, but
 * messages reach subscribers when their persistence steps finish: a retained publish waits for
 * Redis (or for the in-memory store), so a plain publish made just after it overtakes it and the
 * retained one, e.g. a task status followed by a reply, is then dropped as a "duplicate".
 *
 * The fix keeps aedes' decision point but feeds it the right answer: before each delivery it
 * sets the client's remembered counter so that aedes passes the message unless this exact message
 * (origin broker + counter) was delivered to the client moments ago. The recent keys are bounded:
 * overlapping copies of one message are delivered within the same emit.
 *
 * A duplicate for a persistent session (clean=false) is not handed to aedes at all: aedes would
 * call `persistence.outgoingClearMessageId(client, packet)` with the emitted packet, whose
 * messageId is undefined, and the in-memory persistence then removes the first queued message
 * without one, i.e. another message not yet written; that message's own delivery then fails
 * with `no such packet`, the client is disconnected and the message is lost (plain aedes 1.2
 * does it too, for a persistent session with overlapping QoS 1 subscriptions receiving messages
 * back to back). Skipping it leaves the duplicate's queue entry, sent once more when the session
 * next resumes (QoS 1 is at least once; requestId idempotency absorbs it).
 *
 * A message sent from a resumed session's queue (`markQueuedSend`, broker/session-resume.ts) counts
 * as delivered too: its live copy, still on its way through the emitter when the session resumed,
 * is then the duplicate and is not sent again.
 *
 * It relies on aedes 1.2 internals (`client.deliver0`, `client.deliverQoS`, `client.duplicates`),
 * so it is installed before the client subscribes (preConnect) and test/broker-cluster.test.ts
 * pins the behaviour.
 */
import type { AedesPublishPacket, Client } from 'aedes';

type Deliver = (packet: AedesPublishPacket, callback: () => void) => void;

interface ClientInternals {
  deliver0: Deliver;
  deliverQoS: Deliver;
  duplicates: Record<string, number>;
  clean: boolean;
  broker: { id: string };
}

/**
 * A message's key: its counter alone when this broker published it (a small integer, which costs
 * no allocation), else origin and counter. Every delivery makes one, and under a flood the recent
 * ones outlived a scavenge: the string keys were 4 % of what the device's heap promoted
 * (docs/benchmarks.md, "Heap under floods").
 */
type Key = number | string;

function keyOf(local: string, origin: string, counter: number): Key {
  return origin === local ? counter : `${origin}:${counter}`;
}

const RECENT = 256;
/**
 * Keys of messages sent from the session's queue on resume. aedes-persistence-redis sends at most
 * 1001 per resume (maxSessionDelivery); the in-memory queue has no bound, and the live copies still
 * in flight are those of its newest messages, which a first-in first-out bound keeps.
 */
const QUEUED_SENDS = 2048;

/** Insertion-ordered keys, the oldest dropped beyond `limit`. */
class BoundedKeys {
  readonly #keys = new Set<Key>();
  readonly #limit: number;

  constructor(limit: number) {
    this.#limit = limit;
  }

  has(key: Key): boolean {
    return this.#keys.has(key);
  }

  add(key: Key): void {
    if (this.#keys.has(key)) return;
    this.#keys.add(key);
    if (this.#keys.size > this.#limit) this.#keys.delete(this.#keys.values().next().value as Key);
  }
}

const queuedSends = new WeakMap<Client, BoundedKeys>();

/** Records that `packet` was sent to `client` from its session's queue (not from the emitter). */
export function markQueuedSend(client: Client, packet: { brokerId?: string; brokerCounter?: number }): void {
  if (!packet.brokerId || packet.brokerCounter === undefined) return;
  const local = (client as unknown as ClientInternals).broker.id;
  queuedSends.get(client)?.add(keyOf(local, packet.brokerId, packet.brokerCounter));
}

export function fixDedupe(client: Client): void {
  const internals = client as unknown as ClientInternals;
  if (typeof internals.deliver0 !== 'function' || typeof internals.deliverQoS !== 'function') return;
  const recent = new BoundedKeys(RECENT);
  const fromQueue = new BoundedKeys(QUEUED_SENDS);
  queuedSends.set(client, fromQueue);

  /** Sets aedes' de-duplication state for this packet; returns whether it is a duplicate. */
  const decide = (packet: AedesPublishPacket): boolean => {
    const origin = packet.brokerId;
    if (!origin) return false; // retained deliveries on SUBSCRIBE carry no origin: never de-duplicated
    const key = keyOf(internals.broker.id, origin, packet.brokerCounter);
    const seen = recent.has(key) || fromQueue.has(key);
    recent.add(key);
    // aedes delivers when duplicates[origin] < brokerCounter.
    internals.duplicates[origin] = seen ? packet.brokerCounter : packet.brokerCounter - 1;
    return seen;
  };

  const deliver0 = internals.deliver0;
  const deliverQoS = internals.deliverQoS;
  internals.deliver0 = (packet, callback) => {
    decide(packet);
    deliver0(packet, callback);
  };
  internals.deliverQoS = (packet, callback) => {
    // A QoS 0 message is handed on to deliver0 (the wrapper above), which decides.
    if (packet.qos !== 0 && decide(packet) && internals.clean === false) {
      // A duplicate for a persistent session: see above (`no such packet`).
      setImmediate(callback);
      return;
    }
    deliverQoS(packet, callback);
  };
}
