/**
 * The zod schemas of the controller service's schedules (docs/controller.md, "Schedules"): they
 * validate requests, serialize responses and document /openapi.json.
 */
import * as z from 'zod';
import { apiSchemas } from '../../src/routes/schemas.ts';
import { cronProblem } from '../job-window.ts';
import { jobSpecSchema, MAX_PAGE } from './schemas.ts';

/** Longest misfire grace: a week. */
export const MAX_MISFIRE_GRACE_MS = 7 * 24 * 3_600_000;

const isoTime = z.iso.datetime({ offset: true });
const timestamp = z.iso.datetime({ offset: false });

const fields = {
  name: z.string().min(1).max(200),
  cron: z.string().min(9).max(200),
  timezone: z.string().min(1).max(100),
  job: jobSpecSchema.refine((job) => job.startAt === undefined, {
    error: "must not have 'startAt': the schedule says when",
  }),
  enabled: z.boolean().optional(),
  startAt: isoTime.optional(),
  endAt: isoTime.optional(),
  misfireGraceMs: z.number().int().min(0).max(MAX_MISFIRE_GRACE_MS).optional(),
};

function checkCron(
  value: { cron?: string | undefined; timezone?: string | undefined },
  ctx: z.RefinementCtx,
): void {
  if (value.cron === undefined || value.timezone === undefined) return;
  const problem = cronProblem(value.cron, value.timezone);
  if (problem) ctx.addIssue({ code: 'custom', message: problem, path: ['cron'] });
}

export const scheduleInputSchema = z.strictObject(fields).superRefine(checkCron);
apiSchemas.add(scheduleInputSchema, { id: 'ScheduleRequest' });

/** PATCH: any of the fields; cron and timezone are checked together against the stored ones. */
export const schedulePatchSchema = z.strictObject({
  name: fields.name.optional(),
  cron: fields.cron.optional(),
  timezone: fields.timezone.optional(),
  job: fields.job.optional(),
  enabled: fields.enabled,
  startAt: fields.startAt,
  endAt: fields.endAt,
  misfireGraceMs: fields.misfireGraceMs,
});
apiSchemas.add(schedulePatchSchema, { id: 'SchedulePatch' });

export const scheduleSchema = z.object({
  scheduleId: z.string(),
  name: z.string(),
  cron: z.string(),
  timezone: z.string(),
  job: jobSpecSchema,
  enabled: z.boolean(),
  startAt: timestamp.optional(),
  endAt: timestamp.optional(),
  misfireGraceMs: z.number().int(),
  createdBy: z.string(),
  createdAt: timestamp,
  lastFireAt: timestamp.optional(),
  nextRunAt: timestamp.nullable(),
  nextRuns: z.array(timestamp),
});
apiSchemas.add(scheduleSchema, {
  id: 'Schedule',
  description: 'A job created at every match of cron in timezone; nextRunAt null: no run any more',
});

export const scheduleListSchema = z.object({ schedules: z.array(scheduleSchema) });
apiSchemas.add(scheduleListSchema, { id: 'ScheduleList' });

export const scheduleIdParamsSchema = z.object({ scheduleId: z.string().min(1).max(100) });

const pageSize = z
  .string()
  .regex(/^[1-9][0-9]*$/, { error: `must be an integer from 1 to ${MAX_PAGE}` })
  .transform(Number)
  .pipe(z.number().max(MAX_PAGE, { error: `must be an integer from 1 to ${MAX_PAGE}` }));

export const scheduleListQuerySchema = z.strictObject({
  limit: pageSize.optional(),
  before: z.string().min(1).max(100).optional(),
});
