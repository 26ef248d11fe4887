/**
 * Jobs over HTTP (docs/controller.md, "HTTP API"): create one (Idempotency-Key honoured), list
 * them newest first, read one with its results, cancel one. The engine answers in its domain;
 * this module turns that into statuses and the shared error body (docs/errors.md).
 */
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { AuthService } from '../../src/auth/auth-service.ts';
import { ApiError } from '../../src/routes/api-error.ts';
import {
  errorResponse,
  errorResponses,
  idempotencyHeadersSchema,
  JSON_CONTENT_TYPE,
  jsonResponse,
} from '../../src/routes/schemas.ts';
import type { JobEngine } from '../job-engine.ts';
import type { JobSpec } from '../job-types.ts';
import { requireToken, userOf } from './auth-routes.ts';
import { MAX_SCRIPT_BYTES } from './limits.ts';
import {
  DEFAULT_PAGE,
  jobIdParamsSchema,
  jobListQuerySchema,
  jobListSchema,
  jobSchema,
  jobSpecSchema,
} from './schemas.ts';

export interface JobRoutesOptions {
  auth: AuthService;
  engine: JobEngine;
}

const security = [{ bearerAuth: [] }];
const notFound = errorResponse('JOB_DOES_NOT_EXIST: no job with this id');

function jobDoesNotExist(jobId: string): ApiError {
  return new ApiError('JOB_DOES_NOT_EXIST', `Job ${jobId} does not exist`, { extra: { jobId } });
}

export const jobRoutes: FastifyPluginAsyncZod<JobRoutesOptions> = async (app, { auth, engine }) => {
  app.addHook('onRequest', requireToken(auth));

  app.post('/api/jobs', {
    schema: {
      tags: ['jobs'],
      summary: 'Start a job: one script to a group or a list of registers',
      security,
      headers: idempotencyHeadersSchema,
      body: jobSpecSchema,
      response: {
        201: jsonResponse('Created; its Location is /api/jobs/<jobId>', jobSchema),
        200: jsonResponse('The same Idempotency-Key and request again: the first job', jobSchema),
        400: errorResponses.invalid,
        401: errorResponses.unauthorized,
        409: errorResponse('IDEMPOTENCY_CONFLICT: the Idempotency-Key was used for another request'),
        413: errorResponses.tooLarge,
        415: errorResponses.mediaType,
        500: errorResponses.internal,
      },
    },
    handler: async (request, reply) => {
      const spec = request.body as JobSpec;
      const bytes = Buffer.byteLength(spec.script, 'utf8');
      if (bytes > MAX_SCRIPT_BYTES) {
        throw new ApiError(
          'SCRIPT_TOO_LARGE',
          `body field 'script' is ${bytes} bytes; the limit is ${MAX_SCRIPT_BYTES}`,
        );
      }
      const caller = { user: userOf(request), address: request.ip };
      const outcome = engine.create(spec, caller, request.headers['idempotency-key']);
      switch (outcome.kind) {
        case 'conflict':
          throw new ApiError('IDEMPOTENCY_CONFLICT', 'Idempotency-Key was used before for another request', {
            extra: { jobId: outcome.jobId },
          });
        case 'noTarget':
          throw new ApiError('INVALID_REQUEST', `body field 'target': ${outcome.message}`);
        default:
          reply.header('location', `/api/jobs/${outcome.job.jobId}`);
          // Built by the engine from its own typed job (the schema above documents it and the
          // tests pin it): validating 500 results again took ~2-14 ms of the event loop while
          // the registers were running the job's scripts (docs/benchmarks.md, scenario 7).
          reply.type(JSON_CONTENT_TYPE).serializer(JSON.stringify);
          return reply.code(outcome.kind === 'created' ? 201 : 200).send(outcome.job);
      }
    },
  });

  app.get('/api/jobs', {
    schema: {
      tags: ['jobs'],
      summary:
        'Jobs newest first, without their results (?limit=, default 50; ?before=<jobId> pages on), filtered by status, outcome, name (substring), createdBy, scheduleId, scriptId, from, to (createdAt); other parameters are refused',
      security,
      querystring: jobListQuerySchema,
      response: {
        200: jsonResponse('Jobs, newest first', jobListSchema),
        400: errorResponses.invalid,
        401: errorResponses.unauthorized,
        404: errorResponse('JOB_DOES_NOT_EXIST: ?before= names no job'),
        500: errorResponses.internal,
      },
    },
    handler: async (request) => {
      const { limit, before, ...query } = request.query;
      const jobs = engine.list(limit ?? DEFAULT_PAGE, before, query);
      if (!jobs) throw jobDoesNotExist(before!);
      return { jobs };
    },
  });

  app.get('/api/jobs/:jobId', {
    schema: {
      tags: ['jobs'],
      summary: 'One job with one result per targeted register',
      security,
      params: jobIdParamsSchema,
      response: {
        200: jsonResponse('The job', jobSchema),
        401: errorResponses.unauthorized,
        404: notFound,
        500: errorResponses.internal,
      },
    },
    handler: async (request) => {
      const job = engine.get(request.params.jobId);
      if (!job) throw jobDoesNotExist(request.params.jobId);
      return job;
    },
  });

  app.post('/api/jobs/:jobId/cancel', {
    schema: {
      tags: ['jobs'],
      summary: 'Cancel a job: nothing more is sent, queued tasks are cancelled, running scripts finish',
      security,
      params: jobIdParamsSchema,
      response: {
        200: jsonResponse('The job, now CANCELLED', jobSchema),
        401: errorResponses.unauthorized,
        404: notFound,
        409: errorResponse('JOB_ENDED: the job had already ended'),
        500: errorResponses.internal,
      },
    },
    handler: async (request) => {
      const { jobId } = request.params;
      const outcome = engine.cancel(jobId, { user: userOf(request), address: request.ip });
      if (outcome.kind === 'unknown') throw jobDoesNotExist(jobId);
      if (outcome.kind === 'ended') {
        throw new ApiError('JOB_ENDED', `Job ${jobId} has already ended (${outcome.job.status})`, {
          extra: { jobId, status: outcome.job.status },
        });
      }
      return outcome.job;
    },
  });
};
