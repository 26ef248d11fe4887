/**
 * The zod schemas of the REST API (docs/api.md). They validate requests, serialize
 * responses and generate /openapi.json, so the three can never disagree. Messages are
 * predicates ("is required", "must be ...") that the error handler prefixes with the field.
 */
import * as z from 'zod';
import { type HttpErrorCode, httpErrorCodes } from '../errors.ts';

/** Long poll bound of `GET /api/tasks/{id}?waitMs=` (docs/api.md). */
export const MAX_WAIT_MS = 30_000;
/** Our bound of `POST /api/fm-script?timeoutMs=` (the contract leaves it open): 10 minutes. */
export const MAX_FM_SCRIPT_TIMEOUT_MS = 600_000;
/** Idempotency-Key length bound (the contract leaves it open). */
export const MAX_IDEMPOTENCY_KEY_LENGTH = 255;

/** Component ids of the OpenAPI document; a private registry keeps other modules' ids out. */
export const apiSchemas = z.registry<{
  id?: string;
  description?: string;
  type?: string;
  minimum?: number;
  maximum?: number;
}>();

/**
 * Attaches an OpenAPI description. zod's describe() would write to the global registry, which
 * the document generator does not read once it is given our private one.
 */
function doc<T extends z.ZodType>(schema: T, description: string): T {
  apiSchemas.add(schema, { ...apiSchemas.get(schema), description });
  return schema;
}

function requiredString(what: string) {
  return z.string({ error: (issue) => (issue.input === undefined ? 'is required' : `must be ${what}`) });
}

/** A decimal integer in a string (path or query), from `min` to `max`, no sign, no leading zeros. */
function integerString(min: number, max: number, message = `must be an integer from ${min} to ${max}`) {
  const schema = z
    .string({ error: message })
    .regex(/^(0|[1-9][0-9]*)$/, { error: message })
    .transform((text, ctx) => {
      const value = Number(text);
      if (value >= min && value <= max) return value;
      ctx.addIssue({ code: 'custom', message });
      return z.NEVER;
    });
  // OpenAPI: documented as the integer it is, with its bounds (the value arrives as text).
  apiSchemas.add(schema, { type: 'integer', minimum: min, maximum: max });
  return schema;
}

const timestamp = z.iso.datetime({ offset: false });
export const taskStatusSchema = z.enum(['RUNNING', 'FINISHED', 'FAILURE']);

export const taskSchema = z.object({
  id: z.number().int().positive().max(Number.MAX_SAFE_INTEGER),
  status: doc(taskStatusSchema.clone(), 'RUNNING while queued or running, then FINISHED or FAILURE'),
  report: doc(z.string().optional(), 'Present exactly when status is FINISHED (may be empty)'),
  error: doc(z.string().optional(), 'Present exactly when status is FAILURE'),
  queuedAt: timestamp,
  startedAt: timestamp.optional(),
  finishedAt: timestamp.optional(),
});
apiSchemas.add(taskSchema, { id: 'Task', description: 'A script and its outcome' });

export const acceptedSchema = z.object({ id: z.number().int().positive(), status: z.literal('RUNNING') });
apiSchemas.add(acceptedSchema, { id: 'Accepted', description: 'A task was queued; poll its Location' });

export const taskListSchema = z.object({ tasks: z.array(taskSchema) });
apiSchemas.add(taskListSchema, { id: 'TaskList', description: 'Newest first: queued, running, retained' });

const errorCodes = httpErrorCodes as [HttpErrorCode, ...HttpErrorCode[]];
export const errorSchema = z.object({
  statusCode: z.number().int(),
  error: doc(z.string(), 'HTTP reason phrase'),
  code: z.enum(errorCodes),
  message: doc(z.string(), 'Human-readable explanation'),
});
apiSchemas.add(errorSchema, { id: 'Error', description: 'Every error answers this body' });

export const taskNotFoundSchema = errorSchema.extend({
  code: z.literal('TASK_DOES_NOT_EXIST'),
  id: z.number().int(),
  status: z.literal('TASK_DOES_NOT_EXIST'),
});
apiSchemas.add(taskNotFoundSchema, { id: 'TaskDoesNotExist', description: 'Unknown or evicted task id' });

export const taskEndedSchema = errorSchema.extend({
  code: z.literal('TASK_ENDED'),
  id: z.number().int(),
  status: doc(z.enum(['FINISHED', 'FAILURE']), 'How the task ended'),
});
apiSchemas.add(taskEndedSchema, { id: 'TaskEnded', description: 'The task had already ended' });

export const taskRunningSchema = errorSchema.extend({ code: z.literal('TASK_RUNNING') });
apiSchemas.add(taskRunningSchema, {
  id: 'TaskRunning',
  description: 'The task has started; a running script is never cut',
});

const credentialsShape = {
  userName: requiredString('a string'),
  password: requiredString('a string'),
};
export const credentialsSchema = z.object(credentialsShape, { error: 'must be a JSON object' });
apiSchemas.add(credentialsSchema, { id: 'Credentials' });

export const tokenSchema = z.object({
  token: doc(z.string(), 'Opaque; send as "Authorization: Bearer <token>"'),
  tokenType: z.literal('Bearer'),
  expiresIn: doc(z.number().int().positive(), 'Seconds until the token expires'),
});
apiSchemas.add(tokenSchema, { id: 'Token' });

export const vendorScriptBodySchema = z.object(
  { vendorScript: doc(requiredString('a string'), 'The script text (UTF-8, CR LF or LF lines)') },
  { error: 'must be a JSON object' },
);
export const fmScriptBodySchema = z.object(
  { fmScript: doc(requiredString('a string'), 'The script text (UTF-8, CR LF or LF lines)') },
  { error: 'must be a JSON object' },
);

export const idempotencyHeadersSchema = z.looseObject({
  'idempotency-key': doc(
    z
      .string({ error: 'must be a string' })
      .min(1, { error: 'must not be empty' })
      .max(MAX_IDEMPOTENCY_KEY_LENGTH, { error: `must be at most ${MAX_IDEMPOTENCY_KEY_LENGTH} characters` })
      .optional(),
    'The same key with the same script again returns the first task (200) and runs nothing',
  ),
});

export const taskIdParamsSchema = z.object({
  id: doc(integerString(1, Number.MAX_SAFE_INTEGER, 'must be a positive integer below 2^53'), 'Task id'),
});

export const waitQuerySchema = z.object({
  waitMs: doc(
    integerString(0, MAX_WAIT_MS).optional(),
    `Long poll: answer as soon as the task ends, or after this many ms (0..${MAX_WAIT_MS})`,
  ),
});

export const fmScriptQuerySchema = z.object({
  timeoutMs: doc(
    integerString(0, MAX_FM_SCRIPT_TIMEOUT_MS).optional(),
    `How long to wait for the end, ms (default: the configured fmScriptTimeout, 60000; max ${MAX_FM_SCRIPT_TIMEOUT_MS})`,
  ),
});

export const listQuerySchema = z.object({
  status: doc(
    z.enum(['RUNNING', 'FINISHED', 'FAILURE'], { error: 'must be RUNNING, FINISHED or FAILURE' }).optional(),
    'Only tasks in this status',
  ),
});

/** `/health`'s `mqtt.reconnect`, on the device and on the controller service alike. */
export const reconnectHealthSchema = doc(
  z
    .object({
      attempt: doc(z.number().int().positive(), 'Reconnect attempt since the connection was lost'),
      inMs: doc(z.number().int().nonnegative(), 'Until that attempt starts; 0: under way'),
    })
    .optional(),
  'While disconnected: the reconnect attempt awaited (growing, randomised waits)',
);

export const healthSchema = z.object({
  status: doc(
    z.enum(['ok', 'degraded']),
    'degraded (and 503): the MQTT broker has been out of reach for --health-mqtt-grace or longer',
  ),
  deviceId: z.string(),
  installation: z.string(),
  version: z.string(),
  executor: z.string(),
  auth: z.enum(['on', 'off']),
  uptimeSeconds: z.number().int().nonnegative(),
  queue: z.object({
    queued: doc(z.number().int().nonnegative(), 'Waiting, not started'),
    running: z.number().int().min(0).max(1),
    retained: doc(z.number().int().nonnegative(), 'Ended tasks still answerable'),
    maxQueue: z.number().int().positive(),
    retain: z.number().int().positive(),
    lastTaskId: doc(
      z.number().int().nonnegative(),
      'Id counter: issued ids are at most this, later ones above',
    ),
  }),
  mqtt: z.object({
    state: z.enum(['disabled', 'connecting', 'connected', 'reconnecting', 'offline']),
    url: z.string().optional(),
    protocol: doc(
      z.enum(['3.1.1', '5']).optional(),
      'MQTT protocol of the connection in use, while connected',
    ),
    pending: z.number().int().nonnegative().optional(),
    reconnect: reconnectHealthSchema,
    offlineMs: doc(
      z.number().int().nonnegative().optional(),
      'While not connected: for how long, since start or since the connection was lost',
    ),
  }),
});
apiSchemas.add(healthSchema, { id: 'Health' });

/** A JSON response entry with its own description (fastify serializes it by content type). */
export function jsonResponse(description: string, schema: z.ZodType) {
  return { description, content: { 'application/json': { schema } } };
}

/** An error response entry: the shared body under one description. */
export function errorResponse(description: string, schema: z.ZodType = errorSchema) {
  return jsonResponse(description, schema);
}

export const errorResponses = {
  invalid: errorResponse(
    'INVALID_REQUEST: malformed JSON, missing or mistyped field, empty script, bad parameter',
  ),
  unauthorized: errorResponse('UNAUTHORIZED: missing, malformed, unknown or expired bearer token'),
  tooLarge: errorResponse('SCRIPT_TOO_LARGE: script or body over the limit'),
  mediaType: errorResponse('UNSUPPORTED_MEDIA_TYPE: the body is not application/json'),
  internal: errorResponse('INTERNAL_ERROR: a bug; logged'),
  queueFull: errorResponse('QUEUE_FULL: too many queued tasks; retry after Retry-After seconds'),
  conflict: errorResponse('IDEMPOTENCY_CONFLICT: Idempotency-Key seen before with a different script'),
  notFound: errorResponse('TASK_DOES_NOT_EXIST: unknown or evicted id', taskNotFoundSchema),
  notCancellable: errorResponse(
    'TASK_RUNNING: the task has started (a running script is never cut); TASK_ENDED: it had ended (the body carries id and status)',
    z.union([taskRunningSchema, taskEndedSchema]),
  ),
} as const;

/** Every bearer-secured route's OpenAPI security and its shared error answers. */
export const security = [{ bearerAuth: [] }];
export const securedErrors = { 401: errorResponses.unauthorized, 500: errorResponses.internal } as const;
/** With a query, path or body to refuse too (400). */
export const inputErrors = { 400: errorResponses.invalid, ...securedErrors } as const;

/** The answers of `/api/authenticate`, on the device and on the controller service. */
export const authenticateResponses = {
  200: jsonResponse('A bearer token for the other /api routes', tokenSchema),
  400: errorResponses.invalid,
  401: errorResponse('INVALID_CREDENTIALS: wrong user name or password'),
  413: errorResponse('BODY_TOO_LARGE: the body is over --auth-body-limit'),
  415: errorResponses.mediaType,
  429: errorResponse(
    'TOO_MANY_ATTEMPTS: too many failures from this address or for this user name; see Retry-After',
  ),
  500: errorResponses.internal,
} as const;

/** fastify's content type of a JSON answer; every answer written by hand sends the same. */
export const JSON_CONTENT_TYPE = 'application/json; charset=utf-8';
