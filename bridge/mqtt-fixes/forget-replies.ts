/**
 * Works around: mqtt.js 5 resends every unacknowledged QoS 1 message after a reconnect and cannot
 * withdraw one, so a reply a broker refused by closing the connection cut the device off for good.
 * Upstream: docs/upstream/mqtt-js-withdraw.md.
 * Delete when: mqtt.js can withdraw an unacknowledged publish, or no broker can refuse a reply.
 * Touches the client's `outgoing` table; assertMqttInternals() checks it is there.
 */
import type { MqttClient } from 'mqtt';

export class MqttInternalsError extends Error {
  override readonly name = 'MqttInternalsError';
  readonly member: string;

  constructor(member: string) {
    super(
      `the device cannot use this mqtt.js: client.${member} is missing (used by bridge/mqtt-fixes/forget-replies.ts); ` +
        'mqtt is not the version in package-lock.json',
    );
    this.member = member;
  }
}

/** Every member forgetReplies() touches: throws MqttInternalsError naming the first missing. */
export function assertMqttInternals(client: MqttClient): void {
  const c = client as unknown as Record<string, Record<string, unknown> | undefined>;
  if (typeof c.outgoing !== 'object' || c.outgoing === null) throw new MqttInternalsError('outgoing');
  if (typeof c.outgoingStore?.del !== 'function') throw new MqttInternalsError('outgoingStore.del');
  if (typeof c.messageIdProvider?.deallocate !== 'function')
    throw new MqttInternalsError('messageIdProvider.deallocate');
}

/** Forgets the unacknowledged messages whose completion callback `isReply` recognises. */
export function forgetReplies(
  client: MqttClient,
  isReply: (callback: unknown) => boolean,
  forgotten: (messageId: number) => void,
): void {
  for (const [key, entry] of Object.entries(client.outgoing)) {
    if (!isReply(entry.cb)) continue;
    const messageId = Number(key);
    delete client.outgoing[messageId];
    client.outgoingStore.del({ messageId }, () => undefined);
    client.messageIdProvider.deallocate(messageId);
    forgotten(messageId);
  }
}
