/**
 * Works around two faults of aedes 1.2 in the QoS a message is delivered with (lib/client.js,
 * deliverQoS). Upstream report: docs/upstream/aedes-delivery-qos.md.
 * - [MQTT-3.8.4-6]: the delivered QoS is the minimum of the published and the granted QoS; aedes
 *   downgrades only by the subscription whose filter equals the topic, so a QoS 2 message reaching
 *   `TopicA/+` granted QoS 1 went out at QoS 2.
 * - [MQTT-3.3.5-1]: with overlapping subscriptions the message goes out respecting the maximum QoS
 *   of the matching subscriptions; aedes sends the copy of whichever subscription the emitter
 *   reaches first (the others are duplicates), so `Topic/C` at 0 beside `+/C` at 1 delivered a
 *   QoS 2 message at QoS 0.
 * Delete when: aedes computes a delivery's QoS from all the client's matching subscriptions.
 *
 * Both delivery functions of a client (aedes binds one to each subscription, by granted QoS) take
 * the QoS the client gets, min(published, highest granted QoS among its matching subscriptions),
 * and hand the message to aedes' QoS 0 or QoS 1/2 path; dedupe.ts passes the first copy only,
 * which now carries that QoS. aedes' downgrade by the equal filter would undo a higher QoS granted
 * through a wildcard, so that entry's QoS is raised to the delivered one (it serves only that
 * downgrade and aedes' "same subscription again?" test; the granted QoS is kept here).
 */
import type { AedesPublishPacket, Client } from 'aedes';
import { topicMatches } from '../access-rules.ts';

type Deliver = (packet: AedesPublishPacket, callback: () => void) => void;

interface ClientInternals {
  deliver0: Deliver;
  deliverQoS: Deliver;
  subscriptions: Record<string, { qos: number }>;
}

/** The QoS each raised subscription entry was granted. */
const granted = new WeakMap<object, number>();

function matches(filter: string, topic: string): boolean {
  // [MQTT-4.7.2-1]: a filter starting with a wildcard does not match a `$` topic.
  if (topic.startsWith('$') && (filter.startsWith('+') || filter.startsWith('#'))) return false;
  return topicMatches(filter, topic);
}

/** The highest QoS granted to the client's subscriptions matching `topic` (0 when none). */
function highestGranted(subscriptions: ClientInternals['subscriptions'], topic: string): number {
  let highest = 0;
  for (const [filter, sub] of Object.entries(subscriptions)) {
    const qos = granted.get(sub) ?? sub.qos;
    if (qos > highest && matches(filter, topic)) highest = qos;
  }
  return highest;
}

/** Installed in preConnect, after dedupe.ts and session-resume.ts (it routes between theirs). */
export function fixDeliveryQos(client: Client): void {
  const internals = client as unknown as ClientInternals;
  const deliver0 = internals.deliver0;
  const deliverQoS = internals.deliverQoS;
  const route: Deliver = (packet, callback) => {
    const qos = Math.min(packet.qos, highestGranted(internals.subscriptions, packet.topic));
    if (qos === 0) {
      deliver0(packet, callback);
      return;
    }
    const equal = internals.subscriptions[packet.topic];
    if (equal && equal.qos < qos) {
      if (!granted.has(equal)) granted.set(equal, equal.qos);
      equal.qos = qos;
    }
    packet.qos = qos as AedesPublishPacket['qos'];
    deliverQoS(packet, callback);
  };
  internals.deliver0 = route;
  internals.deliverQoS = route;
}
