/**
 * The store broker's aedes instance, assembled: the gatekeeper's hooks (logins, ACL, packet
 * limits), the per-client wrappers that change how aedes writes and resumes, and the guards on
 * its persistence. StoreBroker (store-broker.ts) owns it; the listeners feed it connections.
 */
import { Aedes, type AedesOptions } from 'aedes';
import type { Logger } from '../src/logger.ts';
import { logBrokerEvents } from './broker-events.ts';
import { fixDedupe } from './dedupe.ts';
import type { Gatekeeper } from './gatekeeper.ts';
import type { BrokerLimits } from './limits.ts';
import { DeliveryFlush, watchPublishes, writeQoS0AtOnce } from './qos0-delivery.ts';
import type { RedisBackend } from './redis-backend.ts';
import { SessionBacklog } from './session-backlog.ts';
import { holdUntilConnected, markQueueSends } from './session-resume.ts';
import { guardSubscriptionStore } from './subscription-store.ts';
import { coalesceDeliveries } from './write-coalescing.ts';

export interface StoreAedes {
  aedes: Aedes;
  /** Unacknowledged messages of persistent sessions (in-memory persistence only). */
  backlog: SessionBacklog | undefined;
}

export async function createStoreAedes(input: {
  limits: Readonly<BrokerLimits>;
  gatekeeper: Gatekeeper;
  redis: RedisBackend | undefined;
  logger: Logger;
}): Promise<StoreAedes> {
  const { limits, gatekeeper, redis, logger } = input;
  const hooks = gatekeeper.hooks();
  const flush = new DeliveryFlush();
  const aedes = await Aedes.createBroker({
    ...(redis && { mq: redis.mq, persistence: redis.persistence }),
    // A connection that has not completed its CONNECT by then is closed (aedes' own timer).
    connectTimeout: limits.connectTimeoutMs,
    concurrency: limits.emitterConcurrency,
    // Contract 6.1: QoS 2 messages awaiting PUBREL per client (aedes' documented cap; beyond it
    // aedes closes the connection, MQTT 3.1.1 having no reason code for it).
    maxInflightInbound: limits.maxAwaitingPubrel,
    ...hooks,
    preConnect: (client, packet, callback) => {
      writeQoS0AtOnce(client, flush); // first: the wrappers below wrap it (qos0-delivery.ts)
      watchPublishes(client, flush);
      fixDedupe(client); // before the client has any subscription (broker/dedupe.ts)
      holdUntilConnected(client); // nothing before CONNACK, queue first (broker/session-resume.ts)
      coalesceDeliveries(client); // one socket write per turn (broker/write-coalescing.ts)
      hooks.preConnect(client, packet, callback);
    },
  });
  try {
    // Persistent sessions: one store per SUBSCRIBE, refused filters left out (subscription-store.ts).
    const persistence = (aedes as unknown as { persistence: unknown }).persistence;
    guardSubscriptionStore(persistence, (client, filter) => gatekeeper.mayHold(client, filter));
    markQueueSends(persistence);
    const backlog = redis ? undefined : holdForFullSessions(aedes, persistence, limits, logger);
    logBrokerEvents(aedes, gatekeeper, logger);
    return { aedes, backlog };
  } catch (error) {
    // The caller never gets this instance to stop: its timers (heartbeat, wills) would keep the
    // process alive after a failed start.
    await new Promise<void>((resolve) => aedes.close(() => resolve()));
    throw error;
  }
}

/** Publishes bound for a full persistent session wait (broker/session-backlog.ts). */
function holdForFullSessions(
  aedes: Aedes,
  persistence: unknown,
  limits: Readonly<BrokerLimits>,
  logger: Logger,
): SessionBacklog {
  const backlog = new SessionBacklog(limits.maxSessionBacklog, limits.sessionBacklogWaitMs, logger);
  backlog.install(persistence);
  aedes.on('clientReady', (client) => backlog.connected(client));
  aedes.on('clientDisconnect', (client) => backlog.disconnected(client));
  const internals = aedes as unknown as { authorizePublish: NonNullable<AedesOptions['authorizePublish']> };
  const authorize = internals.authorizePublish;
  internals.authorizePublish = (client, packet, callback) =>
    authorize.call(aedes, client, packet, (error) => {
      if (error) callback(error);
      else backlog.hold(client, packet, () => callback(null));
    });
  return backlog;
}
