/**
 * Works around: aedes 1.2 answers Session Present 0 to a client that resumes (CleanSession 0) a
 * stored session holding no subscriptions; it decides by whether subscriptions are stored
 * (lib/handlers/connect.js, restoreSubs), where [MQTT-3.2.2-2] asks whether session state is
 * stored. Upstream report: docs/upstream/aedes-session-present.md.
 * Delete when: aedes sets Session Present from the stored session, not from its subscriptions.
 *
 * Sessions this instance accepted with CleanSession 0 are remembered by client id (a CleanSession
 * 1 connection discards the session and forgets it). When aedes asks the persistence for the
 * subscriptions of such a session and there are none, the answer is one marker subscription:
 * aedes restores it, so it answers 1, and `authorizeSubscribe` refuses the marker without a word,
 * so nothing is subscribed. Per instance: with --redis-url, a session without subscriptions
 * resumed on another instance (or after a restart) still gets 0.
 */
import type { Aedes, AedesOptions, Subscription } from 'aedes';

/** A valid filter no client may hold ($SYS is refused to every role). */
const MARKER_TOPIC = '$SYS/regbridge/session-present';

interface ClientStore {
  subscriptionsByClient(client: { id: string }): Promise<Subscription[]>;
}

export class SessionPresent {
  /** Client ids of the persistent sessions this instance holds. */
  readonly #sessions = new Set<string>();
  readonly #markers = new WeakSet<object>();

  /** Tracks sessions through aedes' documented `clientReady` event. */
  install(aedes: Aedes, persistence: unknown): void {
    aedes.on('clientReady', (client) => {
      if (client.clean) this.#sessions.delete(client.id);
      else this.#sessions.add(client.id);
    });
    const store = persistence as ClientStore;
    const byClient = store.subscriptionsByClient.bind(store);
    store.subscriptionsByClient = async (client) => {
      const subs = await byClient(client);
      if (subs.length > 0 || !this.#sessions.has(client.id)) return subs;
      const marker = { topic: MARKER_TOPIC, qos: 0 } as Subscription;
      this.#markers.add(marker);
      return [marker];
    };
  }

  /** `authorizeSubscribe` that refuses the marker silently and asks `next` about the rest. */
  authorizeSubscribe(
    next: NonNullable<AedesOptions['authorizeSubscribe']>,
  ): NonNullable<AedesOptions['authorizeSubscribe']> {
    return (client, subscription, callback) => {
      if (this.#markers.has(subscription)) callback(null, null);
      else next(client, subscription, callback);
    };
  }
}
