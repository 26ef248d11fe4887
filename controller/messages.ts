/**
 * Decodes what the controller receives into one typed message: a device state, a task status
 * (or its clearing), or a reply to one of its submissions. Pure, so malformed and foreign
 * messages are unit-tested; nothing here throws on bad input (docs/mqtt.md payloads are
 * checked with the shared zod schemas of bridge/contract/topics.ts).
 */
import { isMultiStore, storeOfTopic } from '../bridge/contract/store-namespace.ts';
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
import { deviceKey } from './store-keys.ts';

export type ControllerMessage =
  | { kind: 'state'; deviceId: string; state: DeviceState | null; dropped?: string }
  | { kind: 'status'; message: StatusMessage }
  | { kind: 'statusCleared'; deviceId: string; taskId: number }
  | { kind: 'reply'; deviceId: string; requestId: string; reply: Reply }
  | { kind: 'badReply'; deviceId: string; error: string }
  | { kind: 'invalid'; error: string };

/**
 * undefined: a topic outside the contract (ignored silently). With a multi-store `ns`
 * (`stores/+`) the topic's store level is checked and every device id becomes the key
 * `<store>/<deviceId>` (store-keys.ts) once the message was checked against its own topic, so a
 * register of one store can never speak for a register of another (contract 3.1).
 */
export function decodeControllerMessage(
  ns: string,
  topic: string,
  payload: Buffer,
): ControllerMessage | undefined {
  if (!isMultiStore(ns)) return decodeInStore(ns, topic, payload);
  const at = storeOfTopic(ns, topic);
  if (!at) return undefined;
  const decoded = decodeInStore(at.ns, topic, payload);
  if (!decoded) return undefined;
  const key = (deviceId: string): string => deviceKey(at.store, deviceId);
  switch (decoded.kind) {
    case 'state':
      return {
        ...decoded,
        deviceId: key(decoded.deviceId),
        state: decoded.state && { ...decoded.state, deviceId: key(decoded.state.deviceId) },
      };
    case 'status':
      return { kind: 'status', message: { ...decoded.message, deviceId: key(decoded.message.deviceId) } };
    case 'statusCleared':
      return { ...decoded, deviceId: key(decoded.deviceId) };
    case 'reply':
      return {
        ...decoded,
        deviceId: key(decoded.deviceId),
        reply: { ...decoded.reply, deviceId: key(decoded.reply.deviceId) },
      };
    case 'badReply':
      return { ...decoded, deviceId: key(decoded.deviceId) };
    default:
      return decoded;
  }
}

/**
 * A state's attributes breaking the bounds (a register may lie: at most 32, keys and value
 * lengths as bridge/contract/attributes.ts) are dropped, the rest of the state is taken.
 */
function decodeState(
  payload: Buffer,
): { ok: true; value: DeviceState; dropped?: string } | { ok: false; error: string } {
  const decoded = decodePayload(stateSchema, payload);
  if (decoded.ok) return decoded;
  let json: unknown;
  try {
    json = JSON.parse(payload.toString('utf8'));
  } catch {
    return decoded;
  }
  if (typeof json !== 'object' || json === null || !('attributes' in json)) return decoded;
  const { attributes: _dropped, ...rest } = json as Record<string, unknown>;
  const without = stateSchema.safeParse(rest);
  if (!without.success) return decoded;
  return { ok: true, value: without.data, dropped: `attributes dropped: ${decoded.error}` };
}

function decodeInStore(ns: string, topic: string, payload: Buffer): ControllerMessage | undefined {
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
    const decoded = decodeState(payload);
    if (!decoded.ok) return { kind: 'invalid', error: decoded.error };
    if (decoded.value.deviceId !== parsed.deviceId)
      return { kind: 'invalid', error: 'state deviceId differs from its topic' };
    return {
      kind: 'state',
      deviceId: parsed.deviceId,
      state: decoded.value,
      ...(decoded.dropped !== undefined && { dropped: decoded.dropped }),
    };
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
