/**
 * The zod schemas of the controller service's HTTP API (docs/controller.md, "HTTP API"): they
 * validate requests, serialize responses and generate /openapi.json. They join the device
 * API's schema registry (src/routes/schemas.ts), so both documents share Error and Token.
 */
import * as z from 'zod';
import { attributesSchema } from '../../bridge/contract/attributes.ts';
import { idSchema } from '../../bridge/contract/topics.ts';
import { apiSchemas, reconnectHealthSchema } from '../../src/routes/schemas.ts';
import { JOB_OUTCOMES, JOB_STATUSES, RESULT_STATUSES, RETRY_ON, type ResultStatus } from '../job-types.ts';
import { cronProblem } from '../job-window.ts';

export { inputErrors, securedErrors, security } from '../../src/routes/schemas.ts';

/** Registers one job may target (a listed target; a group takes what is known). */
export const MAX_TARGET_DEVICES = 10_000;
/** Longest deadline a job may ask for: a week. */
export const MAX_DEADLINE_MS = 7 * 24 * 3_600_000;
export const DEFAULT_PAGE = 50;
export const MAX_PAGE = 1000;

export function named<T extends z.ZodType>(schema: T, id: string, description?: string): T {
  apiSchemas.add(schema, { id, ...(description !== undefined && { description }) });
  return schema;
}

const timestamp = z.iso.datetime({ offset: false });
const intField = (min: number) =>
  z
    .number({ error: `must be an integer >= ${min}` })
    .int()
    .min(min);

/** A listed register: its id, or `store/id` with several stores. */
const deviceKeySchema = z
  .string()
  .regex(
    /^(?:[A-Za-z0-9_-]{1,64}\/)?[A-Za-z0-9_-]{1,64}$/,
    'must be a device id ([A-Za-z0-9_-]{1,64}) or store/id',
  );

export const targetSchema = named(
  z
    .strictObject({
      group: idSchema.optional(),
      devices: z.array(deviceKeySchema).min(1).max(MAX_TARGET_DEVICES).optional(),
      allowUnknown: z.boolean().optional(),
      stores: z.array(idSchema).min(1).max(MAX_TARGET_DEVICES).optional(),
      attributes: attributesSchema
        .refine((attributes) => Object.keys(attributes).length > 0, {
          message: 'give at least one attribute',
        })
        .optional(),
      continuous: z.boolean().optional(),
    })
    .superRefine((target, ctx) => {
      if (
        target.group === undefined &&
        target.devices === undefined &&
        target.stores === undefined &&
        target.attributes === undefined
      )
        ctx.addIssue({ code: 'custom', message: 'give at least one of group, devices, stores, attributes' });
      if (target.allowUnknown !== undefined && target.devices === undefined)
        ctx.addIssue({ code: 'custom', message: 'is only for a device list', path: ['allowUnknown'] });
    }),
  'JobTarget',
  'Which registers: {"group": G} (the registers known in G when the job is created, online or not), ' +
    '{"devices": [ids]} (every id known to the controller, unless "allowUnknown": true; with several ' +
    'stores store/id, or a plain id for that id in every store), {"stores": [S]} (several stores only) and ' +
    '{"attributes": {"region": "north"}}; combined, a register is taken when it matches every condition ' +
    'given. "continuous": true (with the job\'s endAt): registers joining the target while the job runs get it too',
);

/** Waves one rollout may list. */
export const MAX_WAVES = 100;
/** Longest retry backoff or attempt time-out: a day. */
export const MAX_RETRY_WAIT_MS = 24 * 3_600_000;

export const waveSchema = named(
  z.strictObject({
    size: z.union([
      intField(1),
      z.string().regex(/^([1-9][0-9]?|100)%$/, { error: 'must be an integer >= 1 or "N%" (1-100)' }),
    ]),
    successRatio: z.number().min(0).max(1).optional(),
    pauseAfter: z.boolean().optional(),
  }),
  'Wave',
  'size registers (or "N%" of the target, rounded up) in target order; the next wave starts when all ended ' +
    'and FINISHED/ended >= successRatio (else PAUSED); pauseAfter pauses for a person',
);

export const rolloutSchema = named(
  z.strictObject({
    batchSize: intField(1).optional(),
    maxPerMinute: intField(1).optional(),
    waves: z.array(waveSchema).min(1).max(MAX_WAVES).optional(),
  }),
  'Rollout',
  'At most batchSize registers running the script at once; at most maxPerMinute sends per rolling minute; waves',
);

export const retrySchema = named(
  z.strictObject({
    maxAttempts: z.number().int().min(1).max(10),
    backoffMs: z.number().int().min(1000).max(MAX_RETRY_WAIT_MS).optional(),
    on: z.array(z.enum(RETRY_ON)).min(1).optional(),
    attemptTimeoutMs: z.number().int().min(1000).max(MAX_RETRY_WAIT_MS).optional(),
  }),
  'Retry',
  'Attempts retried only while provably not run (OFFLINE, REFUSED, NO_ANSWER without a task), with the same requestId',
);

/** A cron expression (five fields) in an IANA time zone: both checked (croner, Intl). */
function cronIn<T extends z.ZodObject>(shape: T): T {
  return shape.superRefine((value, ctx) => {
    const { cron, timezone } = value as { cron?: unknown; timezone?: unknown };
    if (typeof cron !== 'string' || typeof timezone !== 'string') return;
    const problem = cronProblem(cron, timezone);
    if (problem) ctx.addIssue({ code: 'custom', message: problem, path: ['cron'] });
  }) as unknown as T;
}

export const windowSchema = named(
  cronIn(
    z.strictObject({
      cron: z.string().min(9).max(200),
      durationMs: z.number().int().min(60_000).max(MAX_DEADLINE_MS),
      timezone: z.string().min(1).max(100),
    }),
  ),
  'JobWindow',
  'Scripts are sent only while a window is open: from each match of cron (five fields, in timezone) for durationMs',
);

const isoTime = z.iso.datetime({ offset: true });

export const abortSchema = named(
  z.strictObject({ failureRatio: z.number().min(0).max(1), minEnded: intField(1).optional() }),
  'AbortRule',
  'Once minEnded (default 1) results have ended and failed/ended >= failureRatio, the job is ABORTED',
);

const paramValue = z.union([z.string(), z.number()]);

export const scriptRefSchema = named(
  z.strictObject({
    scriptId: z.string().min(1).max(100),
    version: z.number().int().min(1).optional(),
    params: z.record(z.string().max(64), paramValue).optional(),
  }),
  'ScriptRef',
  'A library script (its latest version unless `version` is given) and its parameters',
);

export const jobSpecSchema = named(
  z
    .strictObject(
      {
        script: z
          .string()
          .refine((s) => s.trim() !== '', 'must not be empty')
          .optional(),
        scriptRef: scriptRefSchema.optional(),
        target: targetSchema,
        name: z.string().min(1).max(200).optional(),
        rollout: rolloutSchema.optional(),
        abort: abortSchema.optional(),
        deadlineMs: z.number().int().min(1000).max(MAX_DEADLINE_MS).optional(),
        retry: retrySchema.optional(),
        startAt: isoTime.optional(),
        window: windowSchema.optional(),
        endAt: isoTime.optional(),
      },
      { error: (issue) => (issue.code === 'invalid_type' ? 'must be a JSON object' : undefined) },
    )
    .superRefine((spec, ctx) => {
      if (spec.target?.continuous === true && spec.endAt === undefined) {
        ctx.addIssue({ code: 'custom', message: 'is required with target.continuous', path: ['endAt'] });
      }
      if (spec.endAt !== undefined && spec.target?.continuous !== true) {
        ctx.addIssue({ code: 'custom', message: 'is only for a continuous target', path: ['endAt'] });
      }
      if (spec.script === undefined && spec.scriptRef === undefined) {
        ctx.addIssue({
          code: 'custom',
          path: ['script'],
          message: "is required (or 'scriptRef', a library script)",
        });
      } else if (spec.script !== undefined && spec.scriptRef !== undefined) {
        ctx.addIssue({
          code: 'custom',
          path: ['script'],
          message: "give either 'script' or 'scriptRef', not both",
        });
      }
    }),
  'JobRequest',
);

export const paramSpecSchema = named(
  z.strictObject({
    name: z.string().min(1).max(64),
    type: z.enum(['string', 'integer', 'enum']),
    values: z.array(z.string().min(1).max(200)).min(1).max(100).optional(),
    pattern: z.string().min(1).max(200).optional(),
    required: z.boolean().optional(),
    default: paramValue.optional(),
  }),
  'ScriptParam',
  'A parameter {{name}} of a library script; required unless it has a default or required is false',
);

export const scriptDraftSchema = named(
  z.strictObject({
    name: z.string().min(1).max(200),
    description: z.string().max(2000).optional(),
    body: z.string().refine((s) => s.trim() !== '', 'must not be empty'),
    params: z.array(paramSpecSchema).max(50).optional(),
    requiresApproval: z.boolean().optional(),
  }),
  'ScriptDraft',
);

export const libraryScriptSchema = named(
  z.object({
    scriptId: z.string(),
    version: z.number().int(),
    latestVersion: z.number().int(),
    name: z.string(),
    description: z.string().optional(),
    body: z.string(),
    params: z.array(paramSpecSchema),
    requiresApproval: z.boolean(),
    createdBy: z.string(),
    createdAt: timestamp,
    archived: z.boolean(),
    archivedAt: timestamp.optional(),
  }),
  'LibraryScript',
);
export const scriptListSchema = named(z.object({ scripts: z.array(libraryScriptSchema) }), 'ScriptList');
export const scriptIdParamsSchema = z.object({ scriptId: z.string().min(1).max(100) });
export const scriptVersionParamsSchema = z.object({
  scriptId: z.string().min(1).max(100),
  version: z
    .string()
    .regex(/^[1-9][0-9]{0,8}$/, 'must be a version number')
    .transform(Number),
});

export const problemSchema = named(
  z.object({ line: z.number().int().optional(), message: z.string() }),
  'ScriptProblem',
);
export const validateBodySchema = z.union([
  z.strictObject({ script: z.string().min(1) }),
  z.strictObject({ scriptRef: scriptRefSchema }),
]);
export const validationSchema = named(
  z.object({ valid: z.boolean(), script: z.string().optional(), problems: z.array(problemSchema) }),
  'ScriptValidation',
);
/** The body of approve/deny; none at all is as good as {} (fastify hands a missing body on as null). */
export const decisionBodySchema = z.strictObject({ comment: z.string().max(1000).optional() }).nullish();

export const resultSchema = named(
  z.object({
    store: z.string().optional().describe('The store (several stores only: --ns stores/+)'),
    deviceId: z.string(),
    status: z.enum(RESULT_STATUSES),
    taskId: z.number().int().optional(),
    report: z.string().optional(),
    error: z.string().optional(),
    sentAt: timestamp.optional(),
    endedAt: timestamp.optional(),
    attempts: z.number().int(),
    nextAttemptAt: timestamp.optional(),
  }),
  'JobResult',
);

export const countsSchema = named(
  z.object({
    total: z.number().int(),
    pending: z.number().int(),
    running: z.number().int(),
    finished: z.number().int(),
    failed: z.number().int(),
    offline: z.number().int(),
    noAnswer: z.number().int(),
    cancelled: z.number().int(),
  }),
  'JobCounts',
);

const summaryShape = {
  jobId: z.string(),
  name: z.string().optional(),
  createdBy: z.string(),
  createdAt: timestamp,
  endedAt: timestamp.optional(),
  status: z.enum(JOB_STATUSES),
  script: z.string(),
  target: targetSchema,
  rollout: rolloutSchema.optional(),
  abort: abortSchema.optional(),
  retry: retrySchema.optional(),
  startAt: timestamp.optional(),
  window: windowSchema.optional(),
  endAt: timestamp.optional(),
  scheduleId: z.string().optional(),
  rerunOf: z.string().optional(),
  pausedReason: z.string().optional(),
  wave: z.object({ current: z.number().int(), count: z.number().int() }).optional(),
  deadlineAt: timestamp,
  scriptRef: z
    .object({ scriptId: z.string(), version: z.number().int(), params: z.record(z.string(), paramValue) })
    .optional(),
  approval: z
    .object({
      decision: z.enum(['approved', 'denied']),
      by: z.string(),
      at: timestamp,
      comment: z.string().optional(),
    })
    .optional(),
  counts: countsSchema,
  outcome: z
    .enum(['SUCCEEDED', 'PARTIAL', 'FAILED'])
    .optional()
    .describe(
      'Once the job has ended (endedAt set): every result FINISHED (SUCCEEDED), some (PARTIAL) or none (FAILED)',
    ),
};

export const jobSummarySchema = named(z.object(summaryShape), 'JobSummary', 'A job without its results');
export const jobSchema = named(
  z.object({
    ...summaryShape,
    results: z.array(resultSchema),
    countsByStore: z
      .record(z.string(), countsSchema)
      .optional()
      .describe("With ?by=store: the counts of each store's results"),
  }),
  'Job',
  'A job with one result per targeted register',
);
export const jobListSchema = named(z.object({ jobs: z.array(jobSummarySchema) }), 'JobList');

export const rerunSchema = named(
  z.strictObject({
    statuses: z
      .array(
        z.enum(
          RESULT_STATUSES.filter((s) => s !== 'PENDING' && s !== 'RUNNING') as [
            ResultStatus,
            ...ResultStatus[],
          ],
        ),
      )
      .min(1),
  }),
  'RerunRequest',
  'A new job over the registers whose results had one of these statuses',
);

export const jobIdParamsSchema = z.object({ jobId: z.string().min(1).max(100) });

const pageSize = z
  .string()
  .regex(/^[1-9][0-9]*$/, { error: `must be an integer from 1 to ${MAX_PAGE}` })
  .transform(Number)
  .pipe(z.number().max(MAX_PAGE, { error: `must be an integer from 1 to ${MAX_PAGE}` }));

/** A day (`2026-11-22`, UTC midnight) or an ISO-8601 instant with any offset, as stored (UTC). */
const instant = z
  .string()
  .regex(/^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2}))?$/, {
    error: 'must be a date (2026-11-22) or an ISO-8601 time with an offset (2026-11-22T23:05:00Z)',
  })
  .transform((text, context) => {
    const date = new Date(text);
    const [year, month, day] = text.slice(0, 10).split('-').map(Number) as [number, number, number];
    // Date() rolls 2026-02-30 over to March; a day that does not exist is a mistake.
    if (Number.isNaN(date.getTime()) || new Date(Date.UTC(year, month - 1, day)).getUTCDate() !== day) {
      context.addIssue({ code: 'custom', message: 'is not a real date' });
      return z.NEVER;
    }
    return date.toISOString();
  });
const text = z.string().min(1).max(200);

// Strict: an unknown parameter is a mistake to report, not a filter to drop silently.
export const jobListQuerySchema = z.strictObject({
  limit: pageSize.optional(),
  before: z.string().min(1).max(100).optional(),
  status: z.enum(JOB_STATUSES).optional(),
  outcome: z.enum(JOB_OUTCOMES).optional(),
  name: text.optional(),
  createdBy: text.optional(),
  scheduleId: text.optional(),
  scriptId: text.optional(),
  from: instant.optional(),
  to: instant.optional(),
});

export const auditQuerySchema = z.strictObject({
  limit: pageSize.optional(),
  action: text.optional(),
  user: text.optional(),
  from: instant.optional(),
  to: instant.optional(),
});

export const resultQuerySchema = z.strictObject({
  limit: pageSize.optional(),
  before: z.string().min(1).max(20).optional(),
  deviceId: text.optional(),
  store: text.optional(),
  status: z.enum(RESULT_STATUSES).optional(),
  jobId: text.optional(),
  scriptId: text.optional(),
  from: instant.optional(),
  to: instant.optional(),
  q: text.optional(),
  format: z.enum(['json', 'csv']).optional(),
});

export const foundResultSchema = named(
  z.object({
    jobId: z.string(),
    jobName: z.string().optional(),
    store: z.string().optional(),
    deviceId: z.string(),
    status: z.enum(RESULT_STATUSES),
    taskId: z.number().int().optional(),
    sentAt: timestamp.optional(),
    endedAt: timestamp.optional(),
    report: z.string().optional(),
    error: z.string().optional(),
    attempts: z.number().int(),
  }),
  'FoundResult',
  'A result of a job, with the job it belongs to',
);
export const resultListSchema = named(
  z.object({ results: z.array(foundResultSchema), next: z.string().optional() }),
  'ResultList',
  'One page, newest first; `next` (absent on the last page) is the `before` of the next one',
);

export const scriptListQuerySchema = z.strictObject({
  limit: pageSize.optional(),
  before: z.string().min(1).max(100).optional(),
  archived: z.enum(['true', 'false']).optional(),
});

export const deviceSchema = named(
  z.object({
    store: z.string().optional().describe('The store (several stores only: --ns stores/+)'),
    deviceId: z.string(),
    online: z.boolean(),
    groups: z.array(z.string()),
    attributes: z
      .record(z.string(), z.string())
      .optional()
      .describe("serve --attribute KEY=VALUE, as the register's state says"),
    installation: z.string().optional(),
    version: z.string().optional(),
    bootId: z.string(),
    lastSeenAt: timestamp,
    lastTask: z.object({ id: z.number().int(), status: z.string() }).optional(),
    queue: z.object({ queued: z.number().int(), running: z.number().int() }),
  }),
  'Device',
  'A register as learnt from its retained state topic',
);
export const deviceListSchema = named(z.object({ devices: z.array(deviceSchema) }), 'DeviceList');

export const storeSchema = named(
  z.object({
    store: z.string(),
    devices: z.number().int().describe('Registers known in the store'),
    online: z.number().int().describe('Of those, online now'),
    lastSeenAt: timestamp.optional().describe('Latest message of any of its registers'),
    link: z
      .enum(['up', 'down'])
      .optional()
      .describe("As the store's link topic last said (--store-link-topic); absent when none was heard"),
    silent: z.boolean().describe('No register of the store online: the store needs a look'),
  }),
  'Store',
  'A store as its registers tell (several stores only: --ns stores/+)',
);
export const storeListSchema = named(z.object({ stores: z.array(storeSchema) }), 'StoreList');

export const jobQuerySchema = z.strictObject({
  by: z.enum(['store']).optional(),
});

export const auditEntrySchema = named(
  z.object({
    at: timestamp,
    user: z.string(),
    address: z.string(),
    action: z.string(),
    detail: z.string(),
  }),
  'AuditEntry',
);
export const auditListSchema = named(z.object({ entries: z.array(auditEntrySchema) }), 'AuditList');

export const serviceHealthSchema = named(
  z.object({
    status: z.enum(['ok', 'error']),
    version: z.string(),
    uptimeSeconds: z.number().int().nonnegative(),
    /** `error` (and 503) while the audit trail cannot be written: logins fail meanwhile. */
    history: z.object({ state: z.enum(['ok', 'error']), error: z.string().optional() }),
    mqtt: z.object({ state: z.string(), reconnect: reconnectHealthSchema }),
    devices: z.object({ known: z.number().int(), online: z.number().int() }),
    jobs: z.object({ inProgress: z.number().int(), total: z.number().int() }),
  }),
  'ControllerHealth',
);
