/**
 * The zod schemas of the controller service's HTTP API (docs/controller.md, "HTTP API"): they
 * validate requests, serialize responses and generate /openapi.json. They join the device
 * API's schema registry (src/routes/schemas.ts), so both documents share Error and Token.
 */
import { z } from 'zod';
import { idSchema } from '../../bridge/contract/topics.ts';
import { apiSchemas, reconnectHealthSchema } from '../../src/routes/schemas.ts';
import { JOB_OUTCOMES, type JobOutcome } from '../job-query.ts';
import { JOB_STATUSES, type JobStatus, RESULT_STATUSES, type ResultStatus } from '../job-types.ts';

/** Registers one job may target (a listed target; a group takes what is known). */
export const MAX_TARGET_DEVICES = 10_000;
/** Longest deadline a job may ask for: a week. */
export const MAX_DEADLINE_MS = 7 * 24 * 3_600_000;
export const DEFAULT_PAGE = 50;
export const MAX_PAGE = 1000;

function named<T extends z.ZodType>(schema: T, id: string, description?: string): T {
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
    z.strictObject({ devices: z.array(idSchema).min(1).max(MAX_TARGET_DEVICES) }),
  ]),
  'JobTarget',
  '{"group": G} (the registers known in G when the job is created, online or not) or {"devices": [ids]}',
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
  status: z.enum(JOB_STATUSES as [JobStatus, ...JobStatus[]]).optional(),
  outcome: z.enum(JOB_OUTCOMES as [JobOutcome, ...JobOutcome[]]).optional(),
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
  status: z.enum(RESULT_STATUSES as [ResultStatus, ...ResultStatus[]]).optional(),
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
    status: z.enum(RESULT_STATUSES as [ResultStatus, ...ResultStatus[]]),
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
    status: z.literal('ok'),
    version: z.string(),
    uptimeSeconds: z.number().int().nonnegative(),
    mqtt: z.object({ state: z.string(), reconnect: reconnectHealthSchema }),
    devices: z.object({ known: z.number().int(), online: z.number().int() }),
    jobs: z.object({ inProgress: z.number().int(), total: z.number().int() }),
  }),
  'ControllerHealth',
);
