/**
 * Backpressure for persistent sessions (docs/broker.md, "Limits"; docs/decisions/session-backlog.md). aedes 1.2
 * acknowledges a QoS 1 PUBLISH as soon as it has parsed it, and stores a copy for every persistent
 * session (clean=false) it goes to until that subscriber's PUBACK comes back. Nothing bounds that
 * store: a publisher faster than a subscriber (a controller flooding a device with scripts, the
 * device answering each with a reply and three statuses through the same broker) fills the
 * subscriber's session with thousands of messages, all of them held long enough to reach V8's old
 * generation (docs/benchmarks.md, "Heap under floods": 10,820 scripts waiting in one device's
 * session during the overload scenario).
 *
 * This counts, per client id, the QoS 1 messages stored in its session and not yet acknowledged.
 * While a *connected* session holds `limit` or more, a QoS 1 or 2 publish that would be delivered to
 * it (the session has a QoS > 0 subscription matching the topic) is held before aedes authorises
 * and acknowledges it: the publisher's PUBACK waits, aedes reads nothing more from the publisher's
 * connection until then, and TCP carries the backpressure to the publisher, where the messages
 * wait instead (its own in-flight window). Nothing is dropped and nothing is refused. The
 * subscriber's own publishes are never held for its own backlog (its PUBACKs travel on the same
 * connection), and a hold ends after `maxWaitMs` at the latest, whatever the backlog: two
 * persistent clients flooding each other cannot deadlock, they only fall back to the unbounded
 * behaviour of plain aedes. Offline sessions are not counted against publishers (their queue is
 * what a persistent session is for).
 *
 * Only with the in-memory persistence: with Redis (several instances) a session's messages are
 * enqueued by one instance and acknowledged on another, which this process cannot count.
 */
import type { Client } from 'aedes';
import type { Logger } from 'pino';
import { topicMatches } from './access-rules.ts';

interface SessionPersistence {
  outgoingEnqueue(sub: { clientId: string }, packet: unknown): Promise<unknown>;
  outgoingEnqueueCombi(subs: { clientId: string }[], packet: unknown): Promise<unknown>;
  outgoingClearMessageId(client: { id: string }, packet: unknown): Promise<unknown>;
}

interface ClientInternals {
  id: string;
  clean: boolean;
  connected: boolean;
  subscriptions: Record<string, { qos?: number }>;
}

export interface SessionBacklogStats {
  /** Publishes held because a subscriber's session was full. */
  held: number;
  /** Holds that ended at `maxWaitMs` with the session still full. */
  timedOut: number;
  /** Highest number of unacknowledged messages seen in one connected session. */
  peak: number;
}

export class SessionBacklog {
  readonly #limit: number;
  readonly #maxWaitMs: number;
  readonly #logger: Logger;
  /** Unacknowledged messages stored per session (client id). */
  readonly #counts = new Map<string, number>();
  /** Connected persistent sessions holding `limit` or more, by client id. */
  readonly #full = new Map<string, ClientInternals>();
  /** Held publishes waiting for a session to drop below the limit, by its client id. */
  readonly #waiting = new Map<string, Set<() => void>>();
  readonly #connected = new Map<string, ClientInternals>();
  readonly stats: SessionBacklogStats = { held: 0, timedOut: 0, peak: 0 };

  constructor(limit: number, maxWaitMs: number, logger: Logger) {
    this.#limit = limit;
    this.#maxWaitMs = maxWaitMs;
    this.#logger = logger;
  }

  /** Counts the session stores of this in-memory persistence (wraps three of its methods). */
  install(persistence: unknown): void {
    const p = persistence as SessionPersistence;
    const enqueue = p.outgoingEnqueue.bind(p);
    const combi = p.outgoingEnqueueCombi.bind(p);
    const clear = p.outgoingClearMessageId.bind(p);
    p.outgoingEnqueue = (sub, packet) => {
      this.#add(sub.clientId, 1);
      return enqueue(sub, packet);
    };
    p.outgoingEnqueueCombi = (subs, packet) => {
      for (const sub of subs) this.#add(sub.clientId, 1);
      return combi(subs, packet);
    };
    p.outgoingClearMessageId = async (client, packet) => {
      const found = await clear(client, packet);
      if (found) this.#add(client.id, -1);
      return found;
    };
  }

  /** A client finished connecting: a clean session starts empty; a resumed one may be full. */
  connected(client: Client): void {
    const c = client as unknown as ClientInternals;
    if (c.clean) {
      this.#counts.delete(c.id);
      return;
    }
    this.#connected.set(c.id, c);
    this.#update(c.id);
  }

  /** A client left: its session (if kept) no longer holds publishers back. */
  disconnected(client: Client): void {
    const c = client as unknown as ClientInternals;
    if (this.#connected.get(c.id) !== c) return;
    this.#connected.delete(c.id);
    this.#update(c.id);
  }

  /**
   * Calls `proceed` at once, or once no full session other than the publisher's would receive the
   * message (or after `maxWaitMs`).
   */
  hold(publisher: Client | null, packet: { topic: string; qos: number }, proceed: () => void): void {
    if (this.#full.size === 0 || packet.qos === 0) {
      proceed();
      return;
    }
    const target = this.#fullTarget(publisher, packet.topic);
    if (target === undefined) {
      proceed();
      return;
    }
    this.stats.held += 1;
    const started = Date.now();
    const retry = (): void => {
      const next = this.#fullTarget(publisher, packet.topic);
      if (next === undefined) {
        proceed();
        return;
      }
      const left = this.#maxWaitMs - (Date.now() - started);
      if (left <= 0) {
        this.stats.timedOut += 1;
        this.#logger.warn(
          { clientId: next, topic: packet.topic, waitedMs: Date.now() - started },
          'session still full: message passed on without waiting further',
        );
        proceed();
        return;
      }
      this.#wait(next, left, retry);
    };
    this.#wait(target, this.#maxWaitMs, retry);
  }

  #wait(clientId: string, ms: number, wake: () => void): void {
    let set = this.#waiting.get(clientId);
    if (!set) {
      set = new Set();
      this.#waiting.set(clientId, set);
    }
    const waiters = set;
    const done = (): void => {
      clearTimeout(timer);
      waiters.delete(done);
      wake();
    };
    const timer = setTimeout(done, ms);
    waiters.add(done);
  }

  #fullTarget(publisher: Client | null, topic: string): string | undefined {
    for (const [id, client] of this.#full) {
      if (client === (publisher as unknown as ClientInternals | null)) continue;
      for (const [filter, sub] of Object.entries(client.subscriptions)) {
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
    const count = this.#counts.get(clientId) ?? 0;
    const client = this.#connected.get(clientId);
    if (client && count > this.stats.peak) this.stats.peak = count;
    if (client && count >= this.#limit) {
      this.#full.set(clientId, client);
      return;
    }
    if (!this.#full.delete(clientId)) return;
    const waiters = this.#waiting.get(clientId);
    if (!waiters) return;
    this.#waiting.delete(clientId);
    for (const wake of waiters) wake();
  }
}
