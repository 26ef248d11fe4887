/**
 * The store broker's aedes instance, assembled: the gatekeeper's hooks (logins, ACL, packet
 * limits) and the fixes for aedes' faults (broker/aedes-fixes/, checked at start by
 * internals-guard.ts). StoreBroker (store-broker.ts) owns it; the listeners feed it connections.
 */
import { Aedes } from 'aedes';
import type { Logger } from '../src/logger.ts';
import { fixDedupe } from './aedes-fixes/dedupe.ts';
import { fixDeliveryQos } from './aedes-fixes/delivery-qos.ts';
import { assertAedesInternals } from './aedes-fixes/internals-guard.ts';
import type { SessionBacklog } from './aedes-fixes/session-backlog.ts';
import { SessionPresent } from './aedes-fixes/session-present.ts';
import { holdUntilConnected, markQueueSends } from './aedes-fixes/session-resume.ts';
import { guardSubscriptionStore } from './aedes-fixes/subscription-store.ts';
import { logBrokerEvents } from './broker-events.ts';
import type { ConnectionAdmission } from './connection-admission.ts';
import type { Gatekeeper } from './gatekeeper.ts';
import type { BrokerLimits } from './limits.ts';
import type { RedisBackend } from './redis-backend.ts';

export async function createStoreAedes(input: {
  limits: Readonly<BrokerLimits>;
  gatekeeper: Gatekeeper;
  /** Counts logins against `maxConnections` (its `authenticate` wraps the gatekeeper's). */
  admission: ConnectionAdmission;
  redis: RedisBackend | undefined;
  /** `--max-session-inflight`, installed with the in-memory persistence only. */
  backlog?: SessionBacklog | undefined;
  logger: Logger;
}): Promise<Aedes> {
  const { limits, gatekeeper, admission, redis, logger } = input;
  const hooks = gatekeeper.hooks();
  const backlog = redis || limits.maxSessionInflight === 0 ? undefined : input.backlog;
  const sessionPresent = new SessionPresent();
  const aedes = await Aedes.createBroker({
    ...(redis && { mq: redis.mq, persistence: redis.persistence }),
    // A connection that has not completed its CONNECT by then is closed (aedes' own timer).
    connectTimeout: limits.connectTimeoutMs,
    concurrency: limits.emitterConcurrency,
    // Contract 6.1: QoS 2 messages awaiting PUBREL per client (aedes' documented cap; beyond it
    // aedes closes the connection, MQTT 3.1.1 having no reason code for it).
    maxInflightInbound: limits.maxAwaitingPubrel,
    ...hooks,
    authenticate: admission.authenticate(hooks.authenticate),
    ...(backlog && { authorizePublish: backlog.authorizePublish(hooks.authorizePublish) }),
    authorizeSubscribe: sessionPresent.authorizeSubscribe(hooks.authorizeSubscribe),
    preConnect: (client, packet, callback) => {
      // Before the client has any subscription; each wraps the one before.
      fixDedupe(client);
      holdUntilConnected(client);
      fixDeliveryQos(client);
      hooks.preConnect(client, packet, callback);
    },
  });
  try {
    assertAedesInternals(aedes);
    const persistence = (aedes as unknown as { persistence: unknown }).persistence;
    guardSubscriptionStore(persistence, (client, filter) => gatekeeper.mayHold(client, filter));
    markQueueSends(persistence);
    sessionPresent.install(aedes, persistence);
    backlog?.install(aedes, persistence);
    logBrokerEvents(aedes, gatekeeper, logger);
    return aedes;
  } catch (error) {
    // The caller never gets this instance to stop: its timers (heartbeat, wills) would keep the
    // process alive after a failed start.
    await new Promise<void>((resolve) => aedes.close(() => resolve()));
    throw error;
  }
}
