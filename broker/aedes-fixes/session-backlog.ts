/**
 * Works around: aedes 1.2 acknowledges a QoS 1/2 PUBLISH as soon as it reads it and stores a copy
 * for every persistent session (clean=false) it goes to until that subscriber acknowledges it;
 * nothing bounds that store, and MQTT 3.1.1 has no flow control (docs/decisions/session-backlog.md).
 * Delete when: aedes bounds a session's unacknowledged messages by holding back its publishers.
 *
 * `--max-session-inflight`: counts, per client id, the QoS 1/2 messages stored for its session and
 * not yet acknowledged (wrapping three persistence methods). While a *connected* persistent session
 * holds `limit` or more, a QoS 1/2 publish it would receive (a QoS > 0 subscription matches) waits
 * in `authorizePublish`, before aedes acknowledges it: the publisher's PUBACK is withheld and aedes
 * reads nothing more from its connection, so TCP pushes back on it. Nothing is dropped or refused;
 * the wait ends when the session drops below `limit` or disconnects, not on a timer.
 * No deadlock: a publisher whose own session is at the limit is never held (its PUBACKs must flow
 * for it to drain), so every held publisher waits on a session whose connection is being read.
 * Offline sessions are not counted against publishers (queueing is what they are for).
 * In-memory persistence only: with Redis another instance acknowledges what this one queued.
 */
import type { Aedes, AedesOptions, Client } from 'aedes';
import { topicMatches } from '../access-rules.ts';

type AuthorizePublish = NonNullable<AedesOptions['authorizePublish']>;

interface SessionStore {
  outgoingEnqueue(sub: { clientId: string }, packet: unknown): Promise<unknown>;
  outgoingEnqueueCombi(subs: { clientId: string }[], packet: unknown): Promise<unknown>;
  outgoingClearMessageId(client: { id: string }, packet: unknown): Promise<unknown>;
}

type Session = Client & { subscriptions: Record<string, { qos?: number }> };

export class SessionBacklog {
  readonly #limit: number;
  /** Unacknowledged messages stored per client id. */
  readonly #counts = new Map<string, number>();
  /** Connected persistent sessions, and those of them at the limit. */
  readonly #connected = new Map<string, Session>();
  readonly #full = new Map<string, Session>();
  /** Held publishes, by the client id of the full session they wait for. */
  readonly #waiting = new Map<string, (() => void)[]>();
  /** Publishes held so far (StoreBroker.stats). */
  held = 0;

  constructor(limit: number) {
    this.#limit = limit;
  }

  /** Counts the session stores of `aedes`' persistence and tracks who is connected. */
  install(aedes: Aedes, persistence: unknown): void {
    const p = persistence as SessionStore;
    const [enqueue, combi, clear] = [p.outgoingEnqueue, p.outgoingEnqueueCombi, p.outgoingClearMessageId];
    p.outgoingEnqueue = (sub, packet) => {
      this.#add(sub.clientId, 1);
      return enqueue.call(p, sub, packet);
    };
    p.outgoingEnqueueCombi = (subs, packet) => {
      for (const sub of subs) this.#add(sub.clientId, 1);
      return combi.call(p, subs, packet);
    };
    p.outgoingClearMessageId = async (client, packet) => {
      const found = await clear.call(p, client, packet);
      if (found) this.#add(client.id, -1);
      return found;
    };
    aedes.on('clientReady', (client) => {
      if (client.clean) this.#counts.delete(client.id);
      else this.#connected.set(client.id, client as Session);
      this.#update(client.id);
    });
    aedes.on('clientDisconnect', (client) => {
      if (this.#connected.get(client.id) !== client) return; // taken over: the new one counts
      this.#connected.delete(client.id);
      this.#update(client.id);
    });
  }

  /** `authorizePublish` that asks `next`, then holds an allowed publish bound for a full session. */
  authorizePublish(next: AuthorizePublish): AuthorizePublish {
    return (client, packet, callback) =>
      next(client, packet, (error) => {
        if (error) callback(error);
        else this.#hold(client, packet, () => callback(null));
      });
  }

  #hold(publisher: Client | null, packet: { topic: string; qos: number }, proceed: () => void): void {
    let counted = false;
    const retry = (): void => {
      const target = packet.qos === 0 ? undefined : this.#fullTarget(publisher, packet.topic);
      if (target === undefined) {
        proceed();
        return;
      }
      if (!counted) this.held += 1;
      counted = true;
      const waiters = this.#waiting.get(target);
      if (waiters) waiters.push(retry);
      else this.#waiting.set(target, [retry]);
    };
    retry();
  }

  /** A full session, other than a full publisher's, with a QoS > 0 subscription matching `topic`. */
  #fullTarget(publisher: Client | null, topic: string): string | undefined {
    if (publisher && this.#full.get(publisher.id) === publisher) return undefined;
    for (const [id, session] of this.#full) {
      for (const [filter, sub] of Object.entries(session.subscriptions)) {
        if ((sub.qos ?? 0) > 0 && topicMatches(filter, topic)) return id;
      }
    }
    return undefined;
  }

  #add(clientId: string, by: number): void {
    const count = (this.#counts.get(clientId) ?? 0) + by;
    if (count <= 0) this.#counts.delete(clientId);
    else this.#counts.set(clientId, count);
    this.#update(clientId);
  }

  #update(clientId: string): void {
    const session = this.#connected.get(clientId);
    if (session && (this.#counts.get(clientId) ?? 0) >= this.#limit) {
      this.#full.set(clientId, session);
      return;
    }
    if (!this.#full.delete(clientId)) return;
    const waiters = this.#waiting.get(clientId) ?? [];
    this.#waiting.delete(clientId);
    for (const retry of waiters) retry();
  }
}
