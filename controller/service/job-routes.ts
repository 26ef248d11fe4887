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
import type { AuditLog } from '../audit-log.ts';
import type { JobEngine } from '../job-engine.ts';
import type { JobSpec } from '../job-types.ts';
import { type ApprovalMode, dialectProblems, renderRef, type ScriptDialect } from '../script-intake.ts';
import type { ScriptLibrary } from '../script-library.ts';
import { accessOf, outOfScope } from './access.ts';
import { requireToken, userOf } from './auth-routes.ts';
import { MAX_SCRIPT_BYTES } from './limits.ts';
import {
  DEFAULT_PAGE,
  decisionBodySchema,
  inputErrors,
  jobIdParamsSchema,
  jobListQuerySchema,
  jobListSchema,
  jobQuerySchema,
  jobSchema,
  jobSpecSchema,
  rerunSchema,
  securedErrors,
  security,
} from './schemas.ts';
import { problemsError, renderedOrThrow } from './script-routes.ts';
import { countsByStore } from './store-bodies.ts';

export interface JobRoutesOptions {
  auth: AuthService;
  engine: JobEngine;
  audit: AuditLog;
  library: ScriptLibrary;
  dialect: ScriptDialect;
  approval: ApprovalMode;
}

const notFound = errorResponse('JOB_DOES_NOT_EXIST: no job with this id');

function jobEnded(jobId: string, status: string): ApiError {
  return new ApiError('JOB_ENDED', `Job ${jobId} has already ended (${status})`, {
    extra: { jobId, status },
  });
}

function jobDoesNotExist(jobId: string): ApiError {
  return new ApiError('JOB_DOES_NOT_EXIST', `Job ${jobId} does not exist`, { extra: { jobId } });
}

export const jobRoutes: FastifyPluginAsyncZod<JobRoutesOptions> = async (app, options) => {
  const { auth, engine, audit, library } = options;
  app.addHook('onRequest', requireToken(auth));

  app.post('/api/jobs', {
    schema: {
      tags: ['jobs'],
      summary: 'Start a job: one script to a group or a list of registers',
      security,
      headers: idempotencyHeadersSchema,
      body: jobSpecSchema,
      response: {
        ...securedErrors,
        201: jsonResponse('Created; its Location is /api/jobs/<jobId>', jobSchema),
        200: jsonResponse('The same Idempotency-Key and request again: the first job', jobSchema),
        400: errorResponse(
          'INVALID_REQUEST: a malformed body; INVALID_PARAMS: the scriptRef cannot be rendered; INVALID_SCRIPT: lines the simulator refuses (problems)',
        ),
        404: errorResponse('SCRIPT_DOES_NOT_EXIST: the scriptRef names no library script'),
        409: errorResponse(
          'IDEMPOTENCY_CONFLICT: the Idempotency-Key was used for another request; SCRIPT_ARCHIVED: the scriptRef is archived',
        ),
        413: errorResponses.tooLarge,
        415: errorResponses.mediaType,
      },
    },
    handler: async (request, reply) => {
      const body = request.body;
      let spec: JobSpec;
      let waitForApproval = options.approval === 'all';
      if (body.scriptRef !== undefined) {
        const rendered = renderedOrThrow(renderRef(library, body.scriptRef));
        const { scriptRef: _ref, ...rest } = body;
        spec = { ...rest, script: rendered.script, scriptRef: rendered.ref } as JobSpec;
        waitForApproval ||= rendered.requiresApproval;
      } else spec = body as JobSpec;
      const bytes = Buffer.byteLength(spec.script, 'utf8');
      if (bytes > MAX_SCRIPT_BYTES) {
        throw new ApiError(
          'SCRIPT_TOO_LARGE',
          `body field 'script' is ${bytes} bytes; the limit is ${MAX_SCRIPT_BYTES}`,
        );
      }
      const problems = dialectProblems(spec.script, options.dialect);
      if (problems.length > 0) throw problemsError('INVALID_SCRIPT', problems);
      const caller = { user: userOf(request), address: request.ip, scope: accessOf(request).scope };
      const outcome = engine.create(spec, caller, request.headers['idempotency-key'], { waitForApproval });
      switch (outcome.kind) {
        case 'outOfScope':
          throw outOfScope(request, audit, 'the job', outcome.deviceIds);
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
        ...inputErrors,
        200: jsonResponse('Jobs, newest first', jobListSchema),
        404: errorResponse('JOB_DOES_NOT_EXIST: ?before= names no job'),
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
      summary: 'One job with one result per targeted register; ?by=store adds countsByStore (several stores)',
      security,
      params: jobIdParamsSchema,
      querystring: jobQuerySchema,
      response: {
        ...inputErrors,
        200: jsonResponse('The job', jobSchema),
        404: notFound,
      },
    },
    handler: async (request) => {
      const job = engine.get(request.params.jobId);
      if (!job) throw jobDoesNotExist(request.params.jobId);
      if (request.query.by === 'store') return { ...job, countsByStore: countsByStore(job.results) };
      return job;
    },
  });

  const controls = [
    [
      'cancel',
      'Cancel a job: nothing more is sent, queued tasks are cancelled, running scripts finish',
      'CANCELLED',
    ],
    ['pause', 'Pause a job: nothing more is sent until it is resumed; running scripts finish', 'PAUSED'],
    [
      'resume',
      'Resume a paused job: back to where it was (the next wave, if one had ended)',
      'back where it was',
    ],
  ] as const;
  for (const [action, summary, now] of controls) {
    app.post(`/api/jobs/:jobId/${action}`, {
      schema: {
        tags: ['jobs'],
        summary,
        security,
        params: jobIdParamsSchema,
        response: {
          ...securedErrors,
          200: jsonResponse(`The job, now ${now}`, jobSchema),
          404: notFound,
          403: errorResponse(
            'FORBIDDEN: the role may not; OUT_OF_SCOPE: the job reaches registers outside your scope',
          ),
          409: errorResponse('JOB_ENDED: the job had already ended'),
        },
      },
      handler: async (request) => {
        const { jobId } = request.params;
        const outcome = engine[action](jobId, {
          user: userOf(request),
          address: request.ip,
          scope: accessOf(request).scope,
        });
        if (outcome.kind === 'unknown') throw jobDoesNotExist(jobId);
        if (outcome.kind === 'outOfScope')
          throw outOfScope(request, audit, `job ${jobId}`, outcome.deviceIds);
        if (outcome.kind === 'ended') throw jobEnded(jobId, outcome.job.status);
        return outcome.job;
      },
    });
  }

  app.post('/api/jobs/:jobId/rerun', {
    schema: {
      tags: ['jobs'],
      summary: 'A new job (new requestIds) over the registers whose results had the given statuses',
      security,
      params: jobIdParamsSchema,
      body: rerunSchema,
      response: {
        ...inputErrors,
        201: jsonResponse(
          'Created; rerunOf names the first job; its Location is /api/jobs/<jobId>',
          jobSchema,
        ),
        404: notFound,
        409: errorResponse('JOB_NOT_ENDED: the job is still open'),
      },
    },
    handler: async (request, reply) => {
      const { jobId } = request.params;
      const outcome = engine.rerun(jobId, request.body.statuses, {
        user: userOf(request),
        address: request.ip,
        scope: accessOf(request).scope,
      });
      switch (outcome.kind) {
        case 'outOfScope':
          throw outOfScope(request, audit, `job ${jobId}`, outcome.deviceIds);
        case 'unknown':
          throw jobDoesNotExist(jobId);
        case 'open':
          throw new ApiError(
            'JOB_NOT_ENDED',
            `Job ${jobId} is still ${outcome.job.status}: rerun it once it has ended`,
            {
              extra: { jobId, status: outcome.job.status },
            },
          );
        case 'noTarget':
          throw new ApiError('INVALID_REQUEST', `body field 'statuses': ${outcome.message}`);
        case 'conflict':
          throw new ApiError('IDEMPOTENCY_CONFLICT', 'Idempotency-Key was used before for another request');
        default:
          reply.header('location', `/api/jobs/${outcome.job.jobId}`);
          return reply.code(201).send(outcome.job);
      }
    },
  });

  for (const decision of ['approve', 'deny'] as const) {
    app.post(`/api/jobs/:jobId/${decision}`, {
      schema: {
        tags: ['jobs'],
        summary:
          decision === 'approve'
            ? 'Approve a job waiting for approval (not its creator): it starts'
            : 'Deny a job waiting for approval (not its creator): it ends DENIED, nothing sent',
        security,
        params: jobIdParamsSchema,
        body: decisionBodySchema,
        response: {
          ...inputErrors,
          200: jsonResponse(
            decision === 'approve' ? 'The job, now IN_PROGRESS' : 'The job, now DENIED',
            jobSchema,
          ),
          403: errorResponse("FORBIDDEN: the role may not decide; SELF_APPROVAL: the job's creator may not"),
          404: notFound,
          409: errorResponse('JOB_NOT_WAITING: the job is not waiting for approval'),
        },
      },
      handler: async (request) => {
        const { jobId } = request.params;
        const access = accessOf(request);
        const caller = { user: access.user, address: request.ip, scope: access.scope };
        const outcome = engine.decide(jobId, decision, caller, request.body?.comment);
        switch (outcome.kind) {
          case 'unknown':
            throw jobDoesNotExist(jobId);
          case 'selfApproval':
            audit.record({
              user: access.user,
              address: request.ip,
              action: 'forbidden',
              detail: `${decision} of job ${jobId}: SELF_APPROVAL`,
            });
            throw new ApiError(
              'SELF_APPROVAL',
              `You created job ${jobId}: someone else must ${decision} it`,
              {
                extra: { jobId },
              },
            );
          case 'outOfScope':
            throw outOfScope(request, audit, `job ${jobId}`, outcome.deviceIds);
          case 'notWaiting':
            throw new ApiError(
              'JOB_NOT_WAITING',
              `Job ${jobId} is not waiting for approval (${outcome.job.status})`,
              {
                extra: { jobId, status: outcome.job.status },
              },
            );
          default:
            return outcome.job;
        }
      },
    });
  }
};
