/**
 * The MQTT topic contract (docs/mqtt.md, docs/api.md): topic builders and parsers, payload
 * types and zod schemas. Shared by the device bridge, the store controller and every client, so both ends
 * of a topic always agree.
 */
import * as z from 'zod';
import { attributesSchema } from './attributes.ts';

export const ID_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;

/** Device and group ids: `[A-Za-z0-9_-]{1,64}`, so no wildcard or `/` can enter a topic level. */
export const idSchema = z.string().regex(ID_PATTERN, 'must match [A-Za-z0-9_-]{1,64}');

/**
 * A namespace is one or more topic levels (`pos`, `stores/042`). No level may be empty or hold
 * a wildcard, and it must not start with `$` ([MQTT-4.7.2-1]: `$` topics are the broker's).
 */
export const namespaceSchema = z
  .string()
  .min(1)
  .max(200)
  .refine(
    (ns) => !ns.startsWith('$') && ns.split('/').every((level) => /^[A-Za-z0-9_.-]+$/.test(level)),
    'namespace levels must be non-empty and use only [A-Za-z0-9_.-] (no wildcards, no leading $)',
  );

export function assertId(kind: 'device' | 'group', id: string): string {
  if (!ID_PATTERN.test(id))
    throw new Error(`invalid ${kind} id ${JSON.stringify(id)}: must match [A-Za-z0-9_-]{1,64}`);
  return id;
}

export function assertNamespace(ns: string): string {
  const parsed = namespaceSchema.safeParse(ns);
  if (!parsed.success)
    throw new Error(`invalid namespace ${JSON.stringify(ns)}: ${parsed.error.issues[0]?.message}`);
  return ns;
}

export const ALL_GROUP = 'all';

/**
 * The client id of a register: `regbridge_<ns with every character outside [A-Za-z0-9_-] as _>_<deviceId>`.
 * Stable across restarts (the broker keeps its session) and reserved to the device user
 * `<deviceId>` on the store broker (contract 6.1).
 */
export function deviceClientId(ns: string, deviceId: string): string {
  return `${deviceClientIdPrefix(ns)}${deviceId}`;
}

/** What every register's client id in `ns` starts with; the rest is its device id. */
export function deviceClientIdPrefix(ns: string): string {
  return `regbridge_${ns.replace(/[^A-Za-z0-9_-]/g, '_')}_`;
}

export const topics = {
  state: (ns: string, deviceId: string) => `${ns}/devices/${assertId('device', deviceId)}/state`,
  taskStatus: (ns: string, deviceId: string, taskId: number) =>
    `${ns}/devices/${assertId('device', deviceId)}/tasks/${taskId}/status`,
  deviceScripts: (ns: string, deviceId: string) => `${ns}/devices/${assertId('device', deviceId)}/scripts`,
  groupScripts: (ns: string, group: string) => `${ns}/groups/${assertId('group', group)}/scripts`,
  /** Cancels (docs/api.md): one device (by id or requestId), or a group (by requestId). */
  deviceCancel: (ns: string, deviceId: string) => `${ns}/devices/${assertId('device', deviceId)}/cancel`,
  groupCancel: (ns: string, group: string) => `${ns}/groups/${assertId('group', group)}/cancel`,
  /**
   * Every answer of a device to a script or a cancel (contract 3.1): under its own subtree, so
   * the store broker's ACL binds the topic's deviceId to the user who published it.
   */
  deviceReply: (ns: string, deviceId: string, requestId: string) =>
    `${ns}/devices/${assertId('device', deviceId)}/replies/${requestId}`,
  /** Subscription filters. */
  allStates: (ns: string) => `${ns}/devices/+/state`,
  allTaskStatuses: (ns: string) => `${ns}/devices/+/tasks/+/status`,
  allReplies: (ns: string) => `${ns}/devices/+/replies/#`,
  deviceTaskStatuses: (ns: string, deviceId: string) =>
    `${ns}/devices/${assertId('device', deviceId)}/tasks/+/status`,
  everything: (ns: string) => `${ns}/#`,
} as const;

export type ParsedTopic =
  | { kind: 'state'; deviceId: string }
  | { kind: 'taskStatus'; deviceId: string; taskId: number }
  | { kind: 'deviceScripts'; deviceId: string }
  | { kind: 'groupScripts'; group: string }
  | { kind: 'deviceCancel'; deviceId: string }
  | { kind: 'reply'; deviceId: string; requestId: string }
  | { kind: 'groupCancel'; group: string };

/** Parses a topic under `ns`; undefined for anything that is not part of the contract. */
export function parseTopic(ns: string, topic: string): ParsedTopic | undefined {
  if (!topic.startsWith(`${ns}/`)) return undefined;
  const levels = topic.slice(ns.length + 1).split('/');
  const [first, id, third, fourth, fifth] = levels;
  if (id === undefined || !ID_PATTERN.test(id)) return undefined;
  if (first === 'devices') {
    if (levels.length === 3 && third === 'state') return { kind: 'state', deviceId: id };
    if (levels.length === 3 && third === 'scripts') return { kind: 'deviceScripts', deviceId: id };
    if (levels.length === 3 && third === 'cancel') return { kind: 'deviceCancel', deviceId: id };
    if (levels.length === 4 && third === 'replies' && fourth !== undefined && isReplyLevel(fourth))
      return { kind: 'reply', deviceId: id, requestId: fourth };
    if (
      levels.length === 5 &&
      third === 'tasks' &&
      fifth === 'status' &&
      fourth !== undefined &&
      /^[1-9]\d{0,15}$/.test(fourth)
    ) {
      const taskId = Number(fourth);
      if (Number.isSafeInteger(taskId)) return { kind: 'taskStatus', deviceId: id, taskId };
    }
    return undefined;
  }
  if (first === 'groups' && levels.length === 3 && third === 'scripts')
    return { kind: 'groupScripts', group: id };
  if (first === 'groups' && levels.length === 3 && third === 'cancel')
    return { kind: 'groupCancel', group: id };
  return undefined;
}

const isoDate = z.iso.datetime();

export const installationSchema = z.enum(['cash-register', 'cash-register+pos', 'pos']);

export const onlineStateSchema = z.object({
  online: z.literal(true),
  deviceId: idSchema,
  bootId: z.string().min(1),
  installation: installationSchema,
  /** Contract 6.1: at most 64 characters (the store broker refuses a longer one too). */
  version: z.string().max(64),
  startedAt: isoDate,
  groups: z.array(idSchema),
  /** `serve --attribute KEY=VALUE` (./attributes.ts); absent when none. */
  attributes: attributesSchema.optional(),
});

/** The last will, and what a clean shutdown publishes too. */
export const offlineStateSchema = z.object({
  online: z.literal(false),
  deviceId: idSchema,
  bootId: z.string().min(1),
});

export const stateSchema = z.discriminatedUnion('online', [onlineStateSchema, offlineStateSchema]);

export const taskStatusSchema = z.enum(['RUNNING', 'FINISHED', 'FAILURE']);

export const statusMessageSchema = z.object({
  id: z.number().int().positive().max(Number.MAX_SAFE_INTEGER),
  deviceId: idSchema,
  bootId: z.string().min(1),
  seq: z.number().int().positive(),
  status: taskStatusSchema,
  report: z.string().optional(),
  error: z.string().optional(),
  requestId: z.string().optional(),
  queuedAt: isoDate,
  startedAt: isoDate.optional(),
  finishedAt: isoDate.optional(),
});

/** requestIds are echoed into replies and status messages; bounded so they cannot bloat either. */
export const requestIdSchema = z.string().min(1).max(200);

// Built from a string: a NUL in a regex literal is a lint error (noControlCharactersInRegex).
const REPLY_LEVEL = new RegExp(`^[^/+#${String.fromCharCode(0)}]{1,200}$`);
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/**
 * Whether a requestId can be the last level of a reply topic: no `/`, no wildcard
 * ([MQTT-4.7.1-1]), no NUL and well-formed UTF-16 ([MQTT-1.5.4-1], [MQTT-1.5.4-2]). A submission
 * whose requestId is not runs as any other; it just cannot be answered.
 */
export function isReplyLevel(requestId: string): boolean {
  return REPLY_LEVEL.test(requestId) && !LONE_SURROGATE.test(requestId);
}

/**
 * The shape of a submission. Whether its script is acceptable (not blank, well-formed, within
 * the size limit) is the device's decision, the same for REST and MQTT. A v1.1 `replyTo` is
 * stripped like any unknown key: replies go to the device's own reply topic (contract 3.1).
 */
export const scriptSubmissionSchema = z.object({
  script: z.string(),
  requestId: requestIdSchema.optional(),
  notAfter: z.number().int().nonnegative().optional(),
});

/**
 * A cancel on `<ns>/devices/<id>/cancel` (docs/api.md): exactly one of `id` (the task)
 * and `requestId` (the submission, seen or still to come).
 */
export const deviceCancelSchema = z
  .object({
    id: z.number().int().positive().max(Number.MAX_SAFE_INTEGER).optional(),
    requestId: requestIdSchema.optional(),
  })
  .refine((cancel) => (cancel.id === undefined) !== (cancel.requestId === undefined), {
    message: 'exactly one of id and requestId',
  });

/** A cancel on `<ns>/groups/<g>/cancel`: `requestId` only (task ids are per device). */
export const groupCancelSchema = z.object({
  id: z.never({ error: 'a group cancel names a requestId, not a task id' }).optional(),
  requestId: requestIdSchema,
});

export const replyAcceptedSchema = z.object({
  requestId: z.string().optional(),
  deviceId: idSchema,
  id: z.number().int().positive(),
  status: taskStatusSchema,
});

export const replyRefusedSchema = z.object({
  requestId: z.string().optional(),
  deviceId: idSchema,
  error: z.string(),
});

export const replySchema = z.union([replyAcceptedSchema, replyRefusedSchema]);

/**
 * Answers to a cancel have the shape of a submission's: `{deviceId, requestId?, id, status}`
 * once cancelled, `{deviceId, requestId?, error: "<CODE>: ..."}` when not.
 */
export const cancelReplySchema = replySchema;

export type OnlineState = z.infer<typeof onlineStateSchema>;
export type OfflineState = z.infer<typeof offlineStateSchema>;
export type DeviceState = z.infer<typeof stateSchema>;
export type StatusMessage = z.infer<typeof statusMessageSchema>;
export type ScriptSubmission = z.infer<typeof scriptSubmissionSchema>;
export type ReplyAccepted = z.infer<typeof replyAcceptedSchema>;
export type ReplyRefused = z.infer<typeof replyRefusedSchema>;
export type Reply = z.infer<typeof replySchema>;
export type DeviceCancel = z.infer<typeof deviceCancelSchema>;
export type GroupCancel = z.infer<typeof groupCancelSchema>;

/** Parses a JSON payload against a schema; a message for the log on failure, never a throw. */
export function decodePayload<T>(
  schema: z.ZodType<T>,
  payload: Buffer | string,
): { ok: true; value: T } | { ok: false; error: string } {
  let json: unknown;
  try {
    json = JSON.parse(typeof payload === 'string' ? payload : payload.toString('utf8'));
  } catch {
    return { ok: false, error: 'payload is not valid JSON' };
  }
  const parsed = schema.safeParse(json);
  if (parsed.success) return { ok: true, value: parsed.data };
  // A field's issue names the field; one about the payload as a whole is just its message.
  const issues = parsed.error.issues.map(
    (i) => (i.path.length > 0 ? `${i.path.join('.')}: ` : '') + i.message,
  );
  return { ok: false, error: `invalid payload: ${issues.join('; ')}` };
}
