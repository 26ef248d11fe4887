/**
 * Routes 2–5 of docs/api.md and its cancel (5a): submit a script
 * (asynchronously or waiting for its end), read one task (with long polling), cancel a queued
 * one, list tasks. Every route here needs a bearer token unless
 * `--auth off`; the check runs on request, before the body is even read.
 */
import type { FastifyReply } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { AuthService } from '../auth/auth-service.ts';
import type { DeviceCoreConfig } from '../config.ts';
import { taskDoesNotExist } from '../errors.ts';
import { statusOf, toTaskBody } from '../tasks/task.ts';
import type { TaskQueue } from '../tasks/task-queue.ts';
import {
  acceptedSchema,
  errorResponses,
  fmScriptBodySchema,
  fmScriptQuerySchema,
  idempotencyHeadersSchema,
  inputErrors,
  jsonResponse,
  listQuerySchema,
  MAX_FM_SCRIPT_TIMEOUT_MS,
  security,
  taskIdParamsSchema,
  taskListSchema,
  taskSchema,
  vendorScriptBodySchema,
  waitQuerySchema,
} from './schemas.ts';
import type { Waits } from './waits.ts';

export interface TaskRoutesOptions {
  auth: AuthService;
  queue: TaskQueue;
  config: DeviceCoreConfig;
  waits: Waits;
}

/** How refusals name the script of each route (SubmitOptions.subject). */
const VENDOR_SCRIPT_SUBJECT = "body field 'vendorScript'";
const FM_SCRIPT_SUBJECT = "body field 'fmScript'";

/** The 202 body `{"id": <int>, "status": "RUNNING"}` (docs/api.md, route 2). */
function sendAccepted(reply: FastifyReply, id: number): FastifyReply {
  return reply.code(202).send({ id, status: 'RUNNING' as const });
}

export const taskRoutes: FastifyPluginAsyncZod<TaskRoutesOptions> = async (
  app,
  { auth, queue, config, waits },
) => {
  // Callback style: an async hook costs a promise and a microtask hop on every request.
  app.addHook('onRequest', (request, _reply, done) => {
    try {
      auth.check(request.headers.authorization);
    } catch (error) {
      done(error as Error);
      return;
    }
    done();
  });

  /** The engine admits or refuses the script (blank, size, idempotency, queue bound). */
  function submit(subject: string, script: string, idempotencyKey: string | undefined) {
    // One object shape for every submission (an absent key is undefined): no spread per request.
    return queue.submit(script, { source: 'rest', subject, idempotencyKey });
  }

  /** Waits for the end of task `id` for up to `ms`, giving up if the client goes away. */
  function waitForEnd(reply: FastifyReply, id: number, ms: number) {
    return waits.run(reply, (signal) => queue.waitForEnd(id, ms, signal));
  }

  app.post('/api/vendor-script', {
    schema: {
      tags: ['tasks'],
      summary: 'Queue a script; answers at once with the task id',
      security,
      headers: idempotencyHeadersSchema,
      body: vendorScriptBodySchema,
      response: {
        ...inputErrors,
        200: jsonResponse('Idempotency-Key replay: the first task; nothing runs again', taskSchema),
        202: jsonResponse('Queued: poll the Location', acceptedSchema),
        409: errorResponses.conflict,
        413: errorResponses.tooLarge,
        415: errorResponses.mediaType,
        503: errorResponses.queueFull,
      },
    },
    // Synchronous: an async handler costs a promise and a microtask hop on every submission.
    // A refusal thrown here reaches the error handler as a rejection would.
    handler: (request, reply) => {
      const { task, created } = submit(
        VENDOR_SCRIPT_SUBJECT,
        request.body.vendorScript,
        request.headers['idempotency-key'],
      );
      reply.header('location', `/api/tasks/${task.id}`);
      if (!created) reply.code(200).send(toTaskBody(task));
      else sendAccepted(reply, task.id);
    },
  });

  app.post('/api/fm-script', {
    schema: {
      tags: ['tasks'],
      summary: 'Run a script and wait for its end (up to timeoutMs)',
      security,
      headers: idempotencyHeadersSchema,
      querystring: fmScriptQuerySchema,
      body: fmScriptBodySchema,
      response: {
        ...inputErrors,
        200: jsonResponse('The task ended (FINISHED or FAILURE) in time', taskSchema),
        202: jsonResponse('Still running after timeoutMs: poll the Location', acceptedSchema),
        404: errorResponses.notFound,
        409: errorResponses.conflict,
        413: errorResponses.tooLarge,
        415: errorResponses.mediaType,
        503: errorResponses.queueFull,
      },
    },
    handler: async (request, reply) => {
      const timeoutMs = request.query.timeoutMs ?? Math.min(config.fmScriptTimeout, MAX_FM_SCRIPT_TIMEOUT_MS);
      const { task } = submit(FM_SCRIPT_SUBJECT, request.body.fmScript, request.headers['idempotency-key']);
      reply.header('location', `/api/tasks/${task.id}`);
      const current = await waitForEnd(reply, task.id, timeoutMs);
      // Only a retention window smaller than the tasks ending meanwhile can evict it this fast.
      if (!current) throw taskDoesNotExist(task.id);
      if (statusOf(current.state) !== 'RUNNING') return reply.code(200).send(toTaskBody(current));
      return sendAccepted(reply, current.id);
    },
  });

  app.get('/api/tasks/:id', {
    schema: {
      tags: ['tasks'],
      summary: 'One task; with waitMs, answers when it ends or after waitMs (long poll)',
      security,
      params: taskIdParamsSchema,
      querystring: waitQuerySchema,
      response: {
        ...inputErrors,
        200: jsonResponse('The task (after the long poll, if waitMs was given)', taskSchema),
        404: errorResponses.notFound,
      },
    },
    handler: async (request, reply) => {
      const { id } = request.params;
      const waitMs = request.query.waitMs ?? 0;
      const task = waitMs > 0 ? await waitForEnd(reply, id, waitMs) : queue.get(id);
      if (!task) throw taskDoesNotExist(id);
      return toTaskBody(task);
    },
  });

  app.delete('/api/tasks/:id', {
    schema: {
      tags: ['tasks'],
      summary: 'Cancel a queued task: it ends FAILURE with an error starting CANCELLED',
      security,
      params: taskIdParamsSchema,
      response: {
        ...inputErrors,
        200: jsonResponse('Cancelled: the task, now FAILURE with an error starting "CANCELLED"', taskSchema),
        404: errorResponses.notFound,
        409: errorResponses.notCancellable,
      },
    },
    handler: async (request) => {
      const { id } = request.params;
      return toTaskBody(queue.cancel(id, `cancelled over REST (DELETE /api/tasks/${id}) before it started`));
    },
  });

  app.get('/api/tasks', {
    schema: {
      tags: ['tasks'],
      summary: 'Queued, running and retained tasks, newest first',
      security,
      querystring: listQuerySchema,
      response: {
        ...inputErrors,
        200: jsonResponse('Tasks, newest first', taskListSchema),
      },
    },
    handler: async (request) => {
      const { status } = request.query;
      const tasks = queue.list().map(toTaskBody);
      return { tasks: status === undefined ? tasks : tasks.filter((task) => task.status === status) };
    },
  });
};
