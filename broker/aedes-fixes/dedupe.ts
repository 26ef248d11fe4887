/**
 * Works around: aedes' overlap de-duplication loses messages (upstream aedes #955 and #994, open
 * in 1.2.0; our findings for them: docs/upstream/aedes-dedupe-overtaken.md).
 * Delete when: aedes de-duplicates by message (origin broker + counter), not by the highest
 * counter delivered, and skips the queue clear for a duplicate of a persistent session.
 *
 * When a message matches two subscriptions of one client (`a/#` and `a/b`), aedes
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
 * A message sent from a resumed session's queue (`markQueuedSend`, session-resume.ts) counts
 * as delivered too: its live copy, still on its way through the emitter when the session resumed,
 * is then the duplicate and is not sent again.
 *
 * It wraps `client.deliver0`, `client.deliverQoS` and sets `client.duplicates` (checked at start by
 * internals-guard.ts), installed before the client subscribes (preConnect);
 * test/broker/broker-cluster.test.ts and test/broker/broker-sessions.test.ts pin the behaviour.
 */
import type { AedesPublishPacket, Client } from 'aedes';

type Deliver = (packet: AedesPublishPacket, callback: () => void) => void;

interface ClientInternals {
  deliver0: Deliver;
  deliverQoS: Deliver;
  duplicates: Record<string, number>;
  clean: boolean;
}

const RECENT = 256;
/**
 * Keys of messages sent from the session's queue on resume. aedes-persistence-redis sends at most
 * 1001 per resume (maxSessionDelivery); the in-memory queue has no bound, and the live copies still
 * in flight are those of its newest messages, which a first-in first-out bound keeps.
 */
const QUEUED_SENDS = 2048;

/**
 * Messages (origin broker + counter), the oldest dropped beyond `limit` per origin. Origins are
 * the brokers of a cluster, a handful; at most MAX_ORIGINS are kept, the first seen dropped first.
 */
const MAX_ORIGINS = 64;

class BoundedKeys {
  readonly #byOrigin = new Map<string, Set<number>>();
  readonly #limit: number;

  constructor(limit: number) {
    this.#limit = limit;
  }

  has(origin: string, counter: number): boolean {
    return this.#byOrigin.get(origin)?.has(counter) ?? false;
  }

  add(origin: string, counter: number): void {
    let counters = this.#byOrigin.get(origin);
    if (counters === undefined) {
      if (this.#byOrigin.size >= MAX_ORIGINS) this.#byOrigin.delete(this.#byOrigin.keys().next().value!);
      counters = new Set();
      this.#byOrigin.set(origin, counters);
    } else if (counters.has(counter)) return;
    counters.add(counter);
    if (counters.size > this.#limit) counters.delete(counters.values().next().value!);
  }
}

const queuedSends = new WeakMap<Client, BoundedKeys>();

/** Records that `packet` was sent to `client` from its session's queue (not from the emitter). */
export function markQueuedSend(client: Client, packet: { brokerId?: string; brokerCounter?: number }): void {
  if (!packet.brokerId || packet.brokerCounter === undefined) return;
  queuedSends.get(client)?.add(packet.brokerId, packet.brokerCounter);
}

export function fixDedupe(client: Client): void {
  const internals = client as unknown as ClientInternals;
  const recent = new BoundedKeys(RECENT);
  const fromQueue = new BoundedKeys(QUEUED_SENDS);
  queuedSends.set(client, fromQueue);

  /** Sets aedes' de-duplication state for this packet; returns whether it is a duplicate. */
  const decide = (packet: AedesPublishPacket): boolean => {
    const origin = packet.brokerId;
    if (!origin) return false; // retained deliveries on SUBSCRIBE carry no origin: never de-duplicated
    const counter = packet.brokerCounter;
    const seen = recent.has(origin, counter) || fromQueue.has(origin, counter);
    recent.add(origin, counter);
    // aedes delivers when duplicates[origin] < brokerCounter.
    internals.duplicates[origin] = seen ? counter : counter - 1;
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
