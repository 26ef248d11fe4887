/**
 * Cheap acceptance checks in front of the zod schemas of what the controller receives (task
 * statuses, replies, states): a message the check accepts is taken as JSON.parse made it;
 * anything else goes through the schema as before, so a refusal reads exactly as it always did.
 *
 * Why: zod's parse copies and walks every message, and a job to 500 registers brings about 2,000
 * of them (three statuses and a reply per register) into the service and into every other
 * controller listening; it was the largest single part of the service's message handling
 * (docs/benchmarks.md, scenario 7). Each check accepts only what its schema accepts unchanged:
 * no key the schema would strip (zod objects drop unknown keys), every value of the type and
 * range the schema demands; test/controller-message-checks.test.ts compares both on every case.
 */

import { isPlainObject, keysOf, onlyKeys } from '../bridge/contract/plain-checks.ts';
import {
  ID_PATTERN,
  installationSchema,
  offlineStateSchema,
  onlineStateSchema,
  replyAcceptedSchema,
  replyRefusedSchema,
  statusMessageSchema,
  taskStatusSchema,
} from '../bridge/contract/topics.ts';

/**
 * The exact expression of `z.iso.datetime()` (zod keeps it on the schema's definition); without
 * it (another zod), no check accepts a date and everything goes through zod.
 */
export function isoPatternOf(schema: unknown): RegExp | undefined {
  const pattern = (schema as { _zod?: { def?: { pattern?: unknown } } })._zod?.def?.pattern;
  return pattern instanceof RegExp ? pattern : undefined;
}

function positiveInt(value: unknown): boolean {
  return typeof value === 'number' && Number.isSafeInteger(value) && value > 0;
}

function optionalString(value: unknown): boolean {
  return value === undefined || typeof value === 'string';
}

// The schemas' own keys and values: a field added to a schema is a key the check refuses (zod
// then decides) until the check learns it.
const TASK_STATUSES: ReadonlySet<unknown> = new Set(taskStatusSchema.options);
const INSTALLATIONS: ReadonlySet<unknown> = new Set(installationSchema.options);
const STATUS_KEYS = keysOf(statusMessageSchema);
const ACCEPTED_REPLY_KEYS = keysOf(replyAcceptedSchema);
const REFUSED_REPLY_KEYS = keysOf(replyRefusedSchema);
const ONLINE_KEYS = keysOf(onlineStateSchema);
const OFFLINE_KEYS = keysOf(offlineStateSchema);

function isId(value: unknown): boolean {
  return typeof value === 'string' && ID_PATTERN.test(value);
}

export interface MessageChecks {
  status(value: unknown): boolean;
  reply(value: unknown): boolean;
  state(value: unknown): boolean;
}

/** The checks for statusMessageSchema, replySchema and stateSchema (bridge/contract/topics.ts). */
export function messageChecks(isoDate: RegExp | undefined): MessageChecks {
  const date = (value: unknown): boolean =>
    isoDate !== undefined && typeof value === 'string' && isoDate.test(value);
  const optionalDate = (value: unknown): boolean => value === undefined || date(value);
  return {
    status: (value) =>
      isPlainObject(value) &&
      positiveInt(value.id) &&
      isId(value.deviceId) &&
      typeof value.bootId === 'string' &&
      value.bootId.length > 0 &&
      positiveInt(value.seq) &&
      TASK_STATUSES.has(value.status) &&
      optionalString(value.report) &&
      optionalString(value.error) &&
      optionalString(value.requestId) &&
      date(value.queuedAt) &&
      optionalDate(value.startedAt) &&
      optionalDate(value.finishedAt) &&
      onlyKeys(value, STATUS_KEYS),
    // The union's first member (accepted) wins when both would match, as in zod.
    reply: (value) =>
      isPlainObject(value) &&
      optionalString(value.requestId) &&
      isId(value.deviceId) &&
      (value.error === undefined
        ? positiveInt(value.id) && TASK_STATUSES.has(value.status) && onlyKeys(value, ACCEPTED_REPLY_KEYS)
        : typeof value.error === 'string' &&
          value.id === undefined &&
          value.status === undefined &&
          onlyKeys(value, REFUSED_REPLY_KEYS)),
    state: (value) => {
      if (!isPlainObject(value) || !isId(value.deviceId)) return false;
      if (typeof value.bootId !== 'string' || value.bootId.length === 0) return false;
      if (value.online === false) return onlyKeys(value, OFFLINE_KEYS);
      return (
        value.online === true &&
        INSTALLATIONS.has(value.installation) &&
        typeof value.version === 'string' &&
        date(value.startedAt) &&
        Array.isArray(value.groups) &&
        value.groups.every(isId) &&
        onlyKeys(value, ONLINE_KEYS)
      );
    },
  };
}
