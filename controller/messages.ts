/**
 * Decodes what the controller receives into one typed message: a device state, a task status
 * (or its clearing), or a reply to one of its submissions. Pure, so malformed and foreign
 * messages are unit-tested; nothing here throws on bad input (docs/mqtt.md payloads are
 * checked with the shared zod schemas of bridge/contract/topics.ts).
 */
import {
  type DeviceState,
  decodePayload,
  parseTopic,
  type Reply,
  replySchema,
  type StatusMessage,
  stateSchema,
  statusMessageSchema,
} from '../bridge/contract/topics.ts';

export type ControllerMessage =
  | { kind: 'state'; deviceId: string; state: DeviceState | null }
  | { kind: 'status'; message: StatusMessage }
  | { kind: 'statusCleared'; deviceId: string; taskId: number }
  | { kind: 'reply'; deviceId: string; requestId: string; reply: Reply }
  | { kind: 'badReply'; deviceId: string; error: string }
  | { kind: 'invalid'; error: string };

/** undefined: a topic outside the contract (ignored silently). */
export function decodeControllerMessage(
  ns: string,
  topic: string,
  payload: Buffer,
): ControllerMessage | undefined {
  const parsed = parseTopic(ns, topic);
  if (parsed?.kind === 'reply') {
    // Contract 3.1: a reply speaks only for the register whose subtree it was published under
    // (the store broker binds that subtree to the device user), so both ids must agree.
    const { deviceId, requestId } = parsed;
    const decoded = decodePayload(replySchema, payload);
    if (!decoded.ok) return { kind: 'badReply', deviceId, error: decoded.error };
    if (decoded.value.deviceId !== deviceId)
      return { kind: 'badReply', deviceId, error: 'reply deviceId differs from its topic' };
    if (decoded.value.requestId !== undefined && decoded.value.requestId !== requestId)
      return { kind: 'badReply', deviceId, error: 'reply requestId differs from its topic' };
    return { kind: 'reply', deviceId, requestId, reply: { ...decoded.value, requestId } };
  }
  if (parsed?.kind === 'state') {
    // A zero-byte retained message clears the topic [MQTT-3.3.1-10].
    if (payload.length === 0) return { kind: 'state', deviceId: parsed.deviceId, state: null };
    const decoded = decodePayload(stateSchema, payload);
    if (!decoded.ok) return { kind: 'invalid', error: decoded.error };
    if (decoded.value.deviceId !== parsed.deviceId)
      return { kind: 'invalid', error: 'state deviceId differs from its topic' };
    return { kind: 'state', deviceId: parsed.deviceId, state: decoded.value };
  }
  if (parsed?.kind === 'taskStatus') {
    if (payload.length === 0)
      return { kind: 'statusCleared', deviceId: parsed.deviceId, taskId: parsed.taskId };
    const decoded = decodePayload(statusMessageSchema, payload);
    if (!decoded.ok) return { kind: 'invalid', error: decoded.error };
    if (decoded.value.deviceId !== parsed.deviceId || decoded.value.id !== parsed.taskId) {
      return { kind: 'invalid', error: 'status deviceId or id differs from its topic' };
    }
    return { kind: 'status', message: decoded.value };
  }
  return undefined;
}
