/**
 * What the device subscribes to on a new session (docs/mqtt.md, "Topics"): its script and cancel
 * topics and those of its groups (QoS 1), and its own state topic (QoS 0, see presence-guard.ts).
 * One SUBSCRIBE per filter: aedes-persistence-redis 12 never acknowledges a SUBSCRIBE carrying
 * several filters from a persistent session, and a refusal then names its filter. A refused or
 * failed one is sent again with backoff while the connection lasts (contract/subscribe-retry.ts).
 */
import type { SubscribeRetry } from './contract/subscribe-retry.ts';
import { topics } from './contract/topics.ts';

export interface CommandSubscriptionsRequest {
  ns: string;
  deviceId: string;
  /** The device's groups, `all` included. */
  groups: readonly string[];
  /** MQTT 5 only: Retain As Published keeps the retain flag on live deliveries too. */
  protocolVersion: number | undefined;
  /** The connection these subscriptions belong to is still up. */
  alive: () => boolean;
}

/**
 * Resolves once every subscription is acknowledged (or the connection it belongs to is gone),
 * with the filters not granted: none means the broker's session now holds them all.
 */
export function subscribeCommands(
  retry: SubscribeRetry,
  request: CommandSubscriptionsRequest,
): Promise<string[]> {
  const { ns, deviceId, groups, alive } = request;
  const ownState = retry.subscribe({ filters: [topics.state(ns, deviceId)], qos: 0, alive });
  const filters = [
    topics.deviceScripts(ns, deviceId),
    ...groups.map((g) => topics.groupScripts(ns, g)),
    topics.deviceCancel(ns, deviceId),
    ...groups.map((g) => topics.groupCancel(ns, g)),
  ];
  // So a retained submission is refused even when the device was already subscribed (docs/mqtt.md).
  const rap = request.protocolVersion === 5;
  return Promise.all([retry.subscribe({ filters, qos: 1, rap, alive }), ownState]).then((missing) =>
    missing.flat(),
  );
}
