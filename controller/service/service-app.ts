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
import { isMultiStore } from '../../bridge/contract/store-namespace.ts';
import {
  AuthService,
  DEFAULT_AUTH_BODY_LIMIT,
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
import { type OidcLimits, type OidcSettings, OidcSignIn } from '../oidc-sign-in.ts';
import type { ResultSearch } from '../result-search.ts';
import type { MissedRun, Scheduler } from '../scheduler.ts';
import type { ApprovalMode, ScriptDialect } from '../script-intake.ts';
import type { ScriptLibrary } from '../script-library.ts';
import type { StoreLink } from '../store-links.ts';
import type { ConnectionState, DeviceEntry, TaskView } from '../types.ts';
import type { ControllerUsers } from '../users.ts';
import type { Webhooks } from '../webhooks.ts';
import { installAccessControl, meRoutes, type RoleLookup } from './access.ts';
import { serviceAuthRoutes } from './auth-routes.ts';
import { eventRoutes } from './event-routes.ts';
import { EventStream } from './event-stream.ts';
import { EventTickets } from './event-tickets.ts';
import { jobRoutes } from './job-routes.ts';
import { BODY_LIMIT } from './limits.ts';
import { oidcRoutes } from './oidc-routes.ts';
import { OidcUsers } from './oidc-sessions.ts';
import { readRoutes } from './read-routes.ts';
import { scheduleRoutes } from './schedule-routes.ts';
import { scriptRoutes } from './script-routes.ts';
import { searchRoutes } from './search-routes.ts';
import { installSecurityHeaders } from './security-headers.ts';
import { createServiceMetrics } from './service-metrics.ts';
import { simulatorRoutes } from './simulator-routes.ts';
import { installStoreBodies } from './store-bodies.ts';
import { webhookRoutes } from './webhook-routes.ts';

/** What the HTTP API reads of the store controller. */
export interface DirectoryView {
  /** The namespace; `stores/+` (several stores) keys registers `store/id` (controller/store-keys.ts). */
  readonly ns?: string;
  readonly connection: ConnectionState;
  /** While disconnected: the reconnect attempt awaited and when it starts (StoreController). */
  readonly reconnect?: { attempt: number; inMs: number } | undefined;
  /** Replies dropped by reason (StoreController.droppedReplies, contract 3.1). */
  readonly droppedReplies?: Readonly<Record<string, number>>;
  devices(): DeviceEntry[];
  /** Each store's link state (several stores with `--store-link-topic`). */
  storeLinks?(): ReadonlyMap<string, StoreLink>;
  device(deviceId: string): DeviceEntry | undefined;
  taskSummary(deviceId: string): TaskSummary;
  on(event: 'device', listener: (entry: DeviceEntry) => void): unknown;
  on(event: 'status', listener: (task: TaskView) => void): unknown;
  off(event: 'device', listener: (entry: DeviceEntry) => void): unknown;
  off(event: 'status', listener: (task: TaskView) => void): unknown;
}

export interface ControllerAppOptions {
  engine: JobEngine;
  /** Schedules (docs/controller.md, "Schedules"); without it, /api/schedules is not served. */
  scheduler?: Scheduler;
  directory: DirectoryView;
  audit: AuditLog;
  /** Who may log in, with their roles; a reload (SIGHUP) replaces them and ends changed users' tokens. */
  users: ControllerUsers;
  /** Seconds. */
  tokenTtl: number;
  logger: Logger;
  registry: Registry;
  /** The dashboard's files, served at `/`. */
  dashboardDir: string;
  /** Jobs in the history (for /health). */
  jobCount: () => number;
  /** Searches every job's results (GET /api/results). */
  search: ResultSearch;
  webhooks: Webhooks;
  /** HTTPS instead of HTTP (--tls-cert, --tls-key). */
  https?: ServerOptions;
  /** Failed logins per address (and per user name) before 429; default 5 per 60 s. */
  authMaxFailures?: number;
  /** Failed logins per user name before 429 (docs/security.md); default as `serve`'s. */
  authUserMaxFailures?: number;
  authWindowMs?: number;
  /** Bytes of body /api/authenticate reads (`--auth-body-limit`); default as `serve`'s. */
  authBodyLimit?: number;
  /** The script library (its tables are in the history file). */
  library: ScriptLibrary;
  /** `--script-dialect`: check every job's script against the simulator's commands, or not. */
  scriptDialect?: ScriptDialect;
  /** `--approval`: `library` (the scripts' flag) or `all` (every job waits for approval). */
  approval?: ApprovalMode;
  /** Deepest JSON body nesting parsed (docs/security.md); default as `serve`'s. */
  maxJsonDepth?: number;
  /** `--max-event-streams`: open event streams per user; default DEFAULT_MAX_EVENT_STREAMS. */
  maxEventStreams?: number;
  /** Single sign-on (`--oidc-*`); absent: password logins only. */
  oidc?: OidcSettings | undefined;
  /** Bounds of single sign-ons in progress; defaults DEFAULT_OIDC_LIMITS. */
  oidcLimits?: Partial<OidcLimits>;
}

/** The dashboard's pages (docs/dashboard.md, "Pages"): each has its own address. */
export const DASHBOARD_PAGES = [
  'stores',
  'registers',
  'jobs',
  'scripts',
  'schedules',
  'results',
  'audit',
  'webhooks',
];

/**
 * A shared link or a reload of a dashboard page's address gets index.html, whose modules show the
 * page (history API); /api and the files keep their own routes, and other paths stay 404.
 */
function dashboardPages(app: FastifyInstance): void {
  for (const page of DASHBOARD_PAGES) {
    for (const url of [`/${page}`, `/${page}/*`]) {
      app.get(url, { schema: { hide: true } }, (_request, reply) => reply.sendFile('index.html'));
    }
  }
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
  installSecurityHeaders(app);

  const auth = new AuthService({
    users: options.users.all(),
    enabled: true,
    tokenTtlSeconds: options.tokenTtl,
    maxFailures: options.authMaxFailures ?? DEFAULT_AUTH_MAX_FAILURES,
    userMaxFailures: options.authUserMaxFailures ?? DEFAULT_AUTH_USER_MAX_FAILURES,
    windowMs: options.authWindowMs ?? DEFAULT_AUTH_WINDOW_MS,
  });
  auth.start();
  options.users.onReplace((users, gone) => auth.replaceUsers(users, gone));
  const oidcUsers = new OidcUsers(options.tokenTtl * 1000);
  const roleOf: RoleLookup = (name) => options.users.get(name) ?? oidcUsers.get(name);
  const events = new EventStream(options.engine, options.directory, logger, {
    sessions: auth,
    scopeOf: (name) => roleOf(name)?.scope,
    ...(options.maxEventStreams !== undefined && { maxPerUser: options.maxEventStreams }),
  });
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
  const onMissed = (run: MissedRun): void => events.announce('schedule.missed', run);
  options.scheduler?.on('missed', onMissed);
  app.addHook('preClose', async () => {
    options.scheduler?.off('missed', onMissed);
    events.close();
  });
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
      { name: 'schedules', description: 'Jobs created at the times of a cron, in a time zone' },
      { name: 'scripts', description: 'The script library: versioned scripts with typed parameters' },
      { name: 'devices', description: 'The registers the controller knows' },
      { name: 'audit', description: 'Who did what' },
      { name: 'webhooks', description: 'Events pushed to HTTP receivers, signed per Standard Webhooks' },
      { name: 'service', description: 'Health, metrics, events, this description' },
    ],
  });
  // Signed-in users are named `oidc:...`; a users file's names never hold a colon, so the two never meet.
  installAccessControl(app, roleOf, options.audit);
  if (options.directory.ns !== undefined && isMultiStore(options.directory.ns)) installStoreBodies(app);
  const authBodyLimit = options.authBodyLimit ?? DEFAULT_AUTH_BODY_LIMIT;
  await app.register(serviceAuthRoutes, { auth, audit: options.audit, bodyLimit: authBodyLimit });
  await app.register(oidcRoutes, {
    auth,
    audit: options.audit,
    signIn: options.oidc && new OidcSignIn(options.oidc, options.oidcLimits),
    users: oidcUsers,
    bodyLimit: authBodyLimit,
  });
  await app.register(meRoutes, { auth });
  const dialect = options.scriptDialect ?? 'simulator';
  await app.register(jobRoutes, {
    auth,
    engine: options.engine,
    audit: options.audit,
    library: options.library,
    dialect,
    approval: options.approval ?? 'library',
  });
  await app.register(scriptRoutes, { auth, library: options.library, audit: options.audit, dialect });
  if (options.scheduler) await app.register(scheduleRoutes, { auth, scheduler: options.scheduler });
  await app.register(eventRoutes, { auth, events, tickets: new EventTickets() });
  await app.register(searchRoutes, { auth, engine: options.engine, search: options.search });
  await app.register(webhookRoutes, { auth, webhooks: options.webhooks, audit: options.audit });
  await app.register(readRoutes, {
    auth,
    engine: options.engine,
    directory: options.directory,
    audit: options.audit,
    registry,
    startedAt: Date.now(),
    jobCount: options.jobCount,
  });
  await app.register(simulatorRoutes);
  await app.register(fastifyStatic, { root: options.dashboardDir, prefix: '/', index: ['index.html'] });
  dashboardPages(app);
  await app.ready();
  return app;
}
