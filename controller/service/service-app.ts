/**
 * The controller service's HTTP API (docs/controller.md, "HTTP API") as a fastify instance:
 * bearer auth with an audit of every login, devices, jobs, the audit trail, Server-Sent Events,
 * health, metrics, OpenAPI and the dashboard's static files. buildControllerApp() never
 * listens; cli/controller-service.ts owns listening and shutdown.
 */
import type { ServerOptions } from 'node:https';
import fastifyStatic from '@fastify/static';
import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import { serializerCompiler, validatorCompiler } from 'fastify-type-provider-zod';
import type { Registry } from 'prom-client';
import {
  AuthService,
  DEFAULT_AUTH_MAX_FAILURES,
  DEFAULT_AUTH_USER_MAX_FAILURES,
  DEFAULT_AUTH_WINDOW_MS,
} from '../../src/auth/auth-service.ts';
import type { Logger } from '../../src/logger.ts';
import { createHttpMetrics } from '../../src/metrics.ts';
import { installErrorHandling } from '../../src/routes/error-handler.ts';
import { DEFAULT_MAX_JSON_DEPTH, installJsonBodyParser } from '../../src/routes/json-body.ts';
import { registerOpenApi } from '../../src/routes/openapi.ts';
import type { AuditLog } from '../audit-log.ts';
import type { TaskSummary } from '../directory.ts';
import type { JobEngine } from '../job-engine.ts';
import type { ConnectionState, DeviceEntry, TaskView } from '../types.ts';
import { serviceAuthRoutes } from './auth-routes.ts';
import { EventStream } from './event-stream.ts';
import { jobRoutes } from './job-routes.ts';
import { BODY_LIMIT } from './limits.ts';
import { readRoutes } from './read-routes.ts';
import { createServiceMetrics } from './service-metrics.ts';
import { simulatorRoutes } from './simulator-routes.ts';

/** What the HTTP API reads of the store controller. */
export interface DirectoryView {
  readonly connection: ConnectionState;
  /** While disconnected: the reconnect attempt awaited and when it starts (StoreController). */
  readonly reconnect?: { attempt: number; inMs: number } | undefined;
  devices(): DeviceEntry[];
  device(deviceId: string): DeviceEntry | undefined;
  taskSummary(deviceId: string): TaskSummary;
  on(event: 'device', listener: (entry: DeviceEntry) => void): unknown;
  on(event: 'status', listener: (task: TaskView) => void): unknown;
  off(event: 'device', listener: (entry: DeviceEntry) => void): unknown;
  off(event: 'status', listener: (task: TaskView) => void): unknown;
}

export interface ControllerAppOptions {
  engine: JobEngine;
  directory: DirectoryView;
  audit: AuditLog;
  users: readonly { readonly name: string; readonly password: string }[];
  /** Seconds. */
  tokenTtl: number;
  logger: Logger;
  registry: Registry;
  /** The dashboard's files, served at `/`. */
  dashboardDir: string;
  /** Jobs in the history (for /health). */
  jobCount: () => number;
  /** HTTPS instead of HTTP (--tls-cert, --tls-key). */
  https?: ServerOptions;
  /** Failed logins per address (and per user name) before 429; default 5 per 60 s. */
  authMaxFailures?: number;
  /** Failed logins per user name before 429 (docs/security.md); default as `serve`'s. */
  authUserMaxFailures?: number;
  authWindowMs?: number;
  /** Deepest JSON body nesting parsed (docs/security.md); default as `serve`'s. */
  maxJsonDepth?: number;
}

export async function buildControllerApp(options: ControllerAppOptions): Promise<FastifyInstance> {
  const { logger, registry } = options;
  const bodyLimit = BODY_LIMIT;
  const app = Fastify({
    loggerInstance: logger as FastifyBaseLogger,
    bodyLimit,
    exposeHeadRoutes: false,
    return503OnClosing: false,
    ...(options.https && { https: options.https }),
  }) as unknown as FastifyInstance;
  app.addHttpMethod('GET', { hasBody: true, overrideExisting: true });
  app.removeContentTypeParser('text/plain');
  installJsonBodyParser(app, options.maxJsonDepth ?? DEFAULT_MAX_JSON_DEPTH);
  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(serializerCompiler);
  installErrorHandling(app, bodyLimit);

  const auth = new AuthService({
    users: options.users,
    enabled: true,
    tokenTtlSeconds: options.tokenTtl,
    maxFailures: options.authMaxFailures ?? DEFAULT_AUTH_MAX_FAILURES,
    userMaxFailures: options.authUserMaxFailures ?? DEFAULT_AUTH_USER_MAX_FAILURES,
    windowMs: options.authWindowMs ?? DEFAULT_AUTH_WINDOW_MS,
  });
  auth.start();
  const events = new EventStream(options.engine, options.directory, logger);
  const httpMetrics = createHttpMetrics(registry);
  const serviceMetrics = createServiceMetrics(registry, options.engine, options.directory);
  app.addHook('onResponse', (request, reply, done) => {
    httpMetrics.observe(
      request.method,
      request.routeOptions.url ?? 'unmatched',
      reply.statusCode,
      reply.elapsedTime / 1000,
    );
    done();
  });
  app.addHook('preClose', async () => events.close());
  app.addHook('onClose', async () => {
    events.close();
    auth.stop();
    httpMetrics.stop();
    serviceMetrics.stop();
  });

  await registerOpenApi(app, {
    title: 'regbridge controller service',
    description:
      "A store's controller: jobs that fan a script out to its registers, their history, an audit trail and live events. " +
      'Every error answers `{statusCode, error, code, message}`; see docs/errors.md for the codes.',
    tags: [
      { name: 'auth', description: 'Bearer tokens' },
      { name: 'jobs', description: 'Scripts fanned out to registers, with rollout control' },
      { name: 'devices', description: 'The registers the controller knows' },
      { name: 'audit', description: 'Who did what' },
      { name: 'service', description: 'Health, metrics, events, this description' },
    ],
  });
  await app.register(serviceAuthRoutes, { auth, audit: options.audit });
  await app.register(jobRoutes, { auth, engine: options.engine });
  await app.register(readRoutes, {
    auth,
    engine: options.engine,
    directory: options.directory,
    audit: options.audit,
    events,
    registry,
    startedAt: Date.now(),
    jobCount: options.jobCount,
  });
  await app.register(simulatorRoutes);
  await app.register(fastifyStatic, { root: options.dashboardDir, prefix: '/', index: ['index.html'] });
  await app.ready();
  return app;
}
