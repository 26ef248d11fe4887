/**
 * The zod schemas of the controller service's HTTP API (docs/controller.md, "HTTP API"): they
 * validate requests, serialize responses and generate /openapi.json. They join the device
 * API's schema registry (src/routes/schemas.ts), so both documents share Error and Token.
 */
import { z } from 'zod';
import { idSchema } from '../../bridge/contract/topics.ts';
import { apiSchemas, reconnectHealthSchema } from '../../src/routes/schemas.ts';
import { JOB_STATUSES, type JobStatus, RESULT_STATUSES, type ResultStatus } from '../job-types.ts';

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

export const targetSchema = named(
  z.union([
    z.strictObject({ group: idSchema }),
    z.strictObject({
      devices: z.array(idSchema).min(1).max(MAX_TARGET_DEVICES),
      allowUnknown: z.boolean().optional(),
    }),
  ]),
  'JobTarget',
  '{"group": G} (the registers known in G when the job is created, online or not) or {"devices": [ids]} ' +
    '(every id known to the controller, unless "allowUnknown": true)',
);

export const rolloutSchema = named(
  z.strictObject({ batchSize: intField(1).optional(), maxPerMinute: intField(1).optional() }),
  'Rollout',
  'At most batchSize registers running the script at once; at most maxPerMinute sends per rolling minute',
);

export const abortSchema = named(
  z.strictObject({ failureRatio: z.number().min(0).max(1), minEnded: intField(1).optional() }),
  'AbortRule',
  'Once minEnded (default 1) results have ended and failed/ended >= failureRatio, the job is ABORTED',
);

export const jobSpecSchema = named(
  z.strictObject(
    {
      script: z.string({ error: 'is required' }).refine((s) => s.trim() !== '', 'must not be empty'),
      target: targetSchema,
      name: z.string().min(1).max(200).optional(),
      rollout: rolloutSchema.optional(),
      abort: abortSchema.optional(),
      deadlineMs: z.number().int().min(1000).max(MAX_DEADLINE_MS).optional(),
    },
    { error: (issue) => (issue.code === 'invalid_type' ? 'must be a JSON object' : undefined) },
  ),
  'JobRequest',
);

export const resultSchema = named(
  z.object({
    deviceId: z.string(),
    status: z.enum(RESULT_STATUSES as [ResultStatus, ...ResultStatus[]]),
    taskId: z.number().int().optional(),
    report: z.string().optional(),
    error: z.string().optional(),
    sentAt: timestamp.optional(),
    endedAt: timestamp.optional(),
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
  status: z.enum(JOB_STATUSES as [JobStatus, ...JobStatus[]]),
  script: z.string(),
  target: targetSchema,
  rollout: rolloutSchema.optional(),
  abort: abortSchema.optional(),
  deadlineAt: timestamp,
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
  z.object({ ...summaryShape, results: z.array(resultSchema) }),
  'Job',
  'A job with one result per targeted register',
);
export const jobListSchema = named(z.object({ jobs: z.array(jobSummarySchema) }), 'JobList');

export const jobIdParamsSchema = z.object({ jobId: z.string().min(1).max(100) });

const pageSize = z
  .string()
  .regex(/^[1-9][0-9]*$/, { error: `must be an integer from 1 to ${MAX_PAGE}` })
  .transform(Number)
  .pipe(z.number().max(MAX_PAGE, { error: `must be an integer from 1 to ${MAX_PAGE}` }));

export const jobListQuerySchema = z.object({
  limit: pageSize.optional(),
  before: z.string().min(1).max(100).optional(),
});
export const auditQuerySchema = z.object({ limit: pageSize.optional() });

export const deviceSchema = named(
  z.object({
    deviceId: z.string(),
    online: z.boolean(),
    groups: z.array(z.string()),
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
