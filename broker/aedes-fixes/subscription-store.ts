/**
 * Works around: three faults of aedes 1.2 with its persistences; upstream reports
 * docs/upstream/aedes-persistence-redis-suback.md (1),
 * docs/upstream/aedes-refused-filter-stored-SECURITY.md (2, private: an ACL bypass) and
 * docs/upstream/aedes-queued-twice.md (3).
 * Delete when: aedes stores only the granted filters of a SUBSCRIBE, once per packet, and
 * queues a message once per session (each fixed upstream and the pin moved past it).
 *
 * Stores the subscriptions of persistent sessions (clean=false) correctly
 * (test/broker/broker-cluster.test.ts and test/broker/broker-sessions.test.ts pin all three):
 *
 * 1. A SUBSCRIBE with several filters from a persistent session never got its SUBACK over Redis.
 *    aedes' subscribe handler calls `persistence.addSubscriptions(client, packet.subscriptions)`
 *    once per filter, each time with the whole list. aedes-persistence-redis 12 then announces
 *    the subscriptions to every instance (BroadcastPersistence, a `$SYS/sub/add` message through
 *    the emitter) and resolves when its own announcement comes back; it finds the waiting call
 *    by client id + first topic, so the calls of one packet overwrite each other's waiter and
 *    all but one never resolve: no SUBACK, for ever. (One filter, or a clean session, never
 *    stores anything twice, hence "single filters and clean sessions are fine".)
 * 2. A refused filter of a multi-filter SUBSCRIBE was stored anyway (the whole list is), in
 *    memory and in Redis: the broker then queued messages on that topic for the session and
 *    delivered them when the client came back, without asking the ACL ([MQTT-3.9.3]: a refused
 *    filter gets 0x80 and no subscription). A device could read other devices' scripts.
 *
 * 3. A message matching two subscriptions of one persistent session was queued for it twice
 *    (once per matching subscription), but delivered and acknowledged once: the in-memory store
 *    kept the second copy and sent it again when the session next resumed, Redis kept the
 *    packet's keys for ever (its reference count never reached 0).
 *
 * So the calls of one SUBSCRIBE packet become one, with the filters the client may hold; the
 * writes of one client are serialised, so two SUBSCRIBE/UNSUBSCRIBE packets in flight never wait
 * on the same announcement; and the sessions a message is queued for are listed once each, with
 * the highest QoS of their matching subscriptions ([MQTT-3.3.5-1]).
 */
import type { Client, Subscription } from 'aedes';

interface StoredSubscription {
  clientId: string;
  topic: string;
  qos: number;
}

type Callback<T> = (error: Error | null, result?: T) => void;

interface SubscriptionStore {
  addSubscriptions(client: Client, subs: Subscription[]): Promise<unknown>;
  removeSubscriptions(client: Client, topics: string[]): Promise<unknown>;
  subscriptionsByTopic(
    topic: string,
    callback?: Callback<StoredSubscription[]>,
  ): Promise<StoredSubscription[]> | unknown;
}

/** One entry per client: the matching subscription with the highest QoS. */
export function onePerClient<T extends StoredSubscription>(subs: T[]): T[] {
  const byClient = new Map<string, T>();
  for (const sub of subs) {
    const kept = byClient.get(sub.clientId);
    if (!kept || sub.qos > kept.qos) byClient.set(sub.clientId, sub);
  }
  return byClient.size === subs.length ? subs : [...byClient.values()];
}

/** How long a client's store operation waits for the one before it. */
const CHAIN_WAIT_MS = 5000;

function bounded(previous: Promise<unknown>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, ms);
  });
  return Promise.race([previous.then(() => undefined), timeout]).finally(() => clearTimeout(timer));
}

/** The client may hold a subscription to `filter` (the ACL's answer for it). */
export type MayHold = (client: Client, filter: string) => boolean;

export function guardSubscriptionStore(persistence: unknown, mayHold: MayHold): void {
  const store = persistence as SubscriptionStore;
  const add = store.addSubscriptions.bind(store);
  const remove = store.removeSubscriptions.bind(store);
  /** One store operation per SUBSCRIBE packet: aedes passes the same array for each of its filters. */
  const perPacket = new WeakMap<Subscription[], Promise<unknown>>();
  /** The tail of each client's chain of store operations. */
  const tails = new Map<string, Promise<unknown>>();

  const serialised = <T>(clientId: string, run: () => Promise<T>): Promise<T> => {
    const previous = tails.get(clientId);
    // A store operation that never settles (an announcement lost while Redis was away) must not
    // block the client's later ones for ever: wait for it a bounded time only.
    const result = (previous === undefined ? Promise.resolve() : bounded(previous, CHAIN_WAIT_MS)).then(run);
    const tail = result.catch(() => undefined);
    tails.set(clientId, tail);
    void tail.then(() => {
      if (tails.get(clientId) === tail) tails.delete(clientId);
    });
    return result;
  };

  store.addSubscriptions = (client, subs) => {
    let pending = perPacket.get(subs);
    if (!pending) {
      // Decided now, once per packet: the ACL's answer does not depend on timing.
      const granted = subs.filter((sub) => mayHold(client, sub.topic));
      pending = granted.length === 0 ? Promise.resolve() : serialised(client.id, () => add(client, granted));
      perPacket.set(subs, pending);
    }
    return pending;
  };
  store.removeSubscriptions = (client, topics) => serialised(client.id, () => remove(client, topics));

  const byTopic = store.subscriptionsByTopic.bind(store);
  store.subscriptionsByTopic = (topic, callback) => {
    if (callback) {
      return byTopic(topic, (error, subs) => callback(error, subs && onePerClient(subs)));
    }
    return (byTopic(topic) as Promise<StoredSubscription[]>).then(onePerClient);
  };
}
