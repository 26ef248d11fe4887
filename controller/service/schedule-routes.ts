/**
 * Schedules over HTTP (docs/controller.md, "Schedules"): create, list, read, change, delete, and
 * run now. The scheduler answers in its domain; this module turns that into statuses and the
 * shared error body (docs/errors.md).
 */
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { AuthService } from '../../src/auth/auth-service.ts';
import { ApiError } from '../../src/routes/api-error.ts';
import { errorResponse, errorResponses, jsonResponse } from '../../src/routes/schemas.ts';
import { cronProblem } from '../job-window.ts';
import type { ScheduleInput, Scheduler } from '../scheduler.ts';
import { requireToken, userOf } from './auth-routes.ts';
import {
  scheduleIdParamsSchema,
  scheduleInputSchema,
  scheduleListQuerySchema,
  scheduleListSchema,
  schedulePatchSchema,
  scheduleSchema,
} from './schedule-schemas.ts';
import { DEFAULT_PAGE, inputErrors, jobSchema, security } from './schemas.ts';

export interface ScheduleRoutesOptions {
  auth: AuthService;
  scheduler: Scheduler;
}

const notFound = errorResponse('SCHEDULE_DOES_NOT_EXIST: no schedule with this id');

function scheduleDoesNotExist(scheduleId: string): ApiError {
  return new ApiError('SCHEDULE_DOES_NOT_EXIST', `Schedule ${scheduleId} does not exist`, {
    extra: { scheduleId },
  });
}

export const scheduleRoutes: FastifyPluginAsyncZod<ScheduleRoutesOptions> = async (
  app,
  { auth, scheduler },
) => {
  app.addHook('onRequest', requireToken(auth));
  const one = { params: scheduleIdParamsSchema, security, tags: ['schedules'] };

  app.post('/api/schedules', {
    schema: {
      tags: ['schedules'],
      summary: 'Create a schedule: a job at every match of a five-field cron in an IANA time zone',
      security,
      body: scheduleInputSchema,
      response: {
        ...inputErrors,
        201: jsonResponse('Created; its Location is /api/schedules/<scheduleId>', scheduleSchema),
      },
    },
    handler: async (request, reply) => {
      const schedule = scheduler.create(request.body as ScheduleInput, {
        user: userOf(request),
        address: request.ip,
      });
      reply.header('location', `/api/schedules/${schedule.scheduleId}`);
      return reply.code(201).send(schedule);
    },
  });

  app.get('/api/schedules', {
    schema: {
      tags: ['schedules'],
      summary: 'Schedules newest first (?limit=, default 50; ?before=<scheduleId> pages on)',
      security,
      querystring: scheduleListQuerySchema,
      response: {
        200: jsonResponse('Schedules', scheduleListSchema),
        400: errorResponses.invalid,
        401: errorResponses.unauthorized,
        404: errorResponse('SCHEDULE_DOES_NOT_EXIST: ?before= names no schedule'),
      },
    },
    handler: async (request) => {
      const { limit, before } = request.query;
      const schedules = scheduler.list(limit ?? DEFAULT_PAGE, before);
      if (!schedules) throw scheduleDoesNotExist(before!);
      return { schedules };
    },
  });

  app.get('/api/schedules/:scheduleId', {
    schema: {
      ...one,
      summary: 'One schedule with its next runs',
      response: {
        200: jsonResponse('The schedule', scheduleSchema),
        401: errorResponses.unauthorized,
        404: notFound,
      },
    },
    handler: async (request) => {
      const schedule = scheduler.get(request.params.scheduleId);
      if (!schedule) throw scheduleDoesNotExist(request.params.scheduleId);
      return schedule;
    },
  });

  app.patch('/api/schedules/:scheduleId', {
    schema: {
      ...one,
      summary: 'Change a schedule (enable or disable it, another cron, job or time zone)',
      body: schedulePatchSchema,
      response: {
        200: jsonResponse('The schedule as changed', scheduleSchema),
        400: errorResponses.invalid,
        401: errorResponses.unauthorized,
        404: notFound,
      },
    },
    handler: async (request) => {
      const { scheduleId } = request.params;
      const current = scheduler.get(scheduleId);
      if (!current) throw scheduleDoesNotExist(scheduleId);
      const changes = request.body as Partial<ScheduleInput>;
      const problem = cronProblem(changes.cron ?? current.cron, changes.timezone ?? current.timezone);
      if (problem) throw new ApiError('INVALID_REQUEST', `body field 'cron': ${problem}`);
      return scheduler.update(scheduleId, changes, { user: userOf(request), address: request.ip })!;
    },
  });

  app.delete('/api/schedules/:scheduleId', {
    schema: {
      ...one,
      summary: 'Delete a schedule (its jobs stay)',
      response: {
        200: jsonResponse('The schedule deleted', scheduleSchema),
        401: errorResponses.unauthorized,
        404: notFound,
      },
    },
    handler: async (request) => {
      const removed = scheduler.remove(request.params.scheduleId, {
        user: userOf(request),
        address: request.ip,
      });
      if (!removed) throw scheduleDoesNotExist(request.params.scheduleId);
      return removed;
    },
  });

  app.post('/api/schedules/:scheduleId/run', {
    schema: {
      ...one,
      summary: "Run now: a job of the schedule's body, carrying its scheduleId",
      response: {
        201: jsonResponse('The job created; its Location is /api/jobs/<jobId>', jobSchema),
        400: errorResponses.invalid,
        401: errorResponses.unauthorized,
        404: notFound,
      },
    },
    handler: async (request, reply) => {
      const { scheduleId } = request.params;
      const ran = scheduler.runNow(scheduleId, { user: userOf(request), address: request.ip });
      if (ran.kind === 'unknown') throw scheduleDoesNotExist(scheduleId);
      const { outcome } = ran;
      if (outcome.kind === 'noTarget')
        throw new ApiError('INVALID_REQUEST', `schedule's job target: ${outcome.message}`);
      if (outcome.kind !== 'created')
        throw new ApiError('INVALID_REQUEST', `job not created: ${outcome.kind}`);
      reply.header('location', `/api/jobs/${outcome.job.jobId}`);
      return reply.code(201).send(outcome.job);
    },
  });
};
