/**
 * The device service's REST API (docs/api.md) as a fastify instance: routes 1–8, one
 * error body for every failure, bearer auth, metrics and the OpenAPI description. buildApp()
 * never listens and never starts or stops the queue; close() ends in-flight long polls and
 * stops the app's own timers and metrics.
 */
import Fastify, { type FastifyBaseLogger, type FastifyInstance, type FastifyServerOptions } from 'fastify';
import type { Registry } from 'prom-client';
import { AuthService } from './auth/auth-service.ts';
import type { DeviceCoreConfig } from './config.ts';
import type { MqttHealth } from './health.ts';
import { observeHttpRequests } from './http-metrics-hooks.ts';
import type { Logger } from './logger.ts';
import { createDeviceMetrics, createHttpMetrics, METRIC_NAMES } from './metrics.ts';
import { lazyChildLoggerFactory } from './request-logger.ts';
import { authRoutes } from './routes/auth-routes.ts';
import { clientErrorHandler, frameworkErrors, installErrorHandling } from './routes/error-handler.ts';
import { installJsonBodyParser } from './routes/json-body.ts';
import { logoutRoute } from './routes/logout-route.ts';
import { registerLazyOpenApi, registerOpenApi } from './routes/openapi.ts';
import { serviceRoutes } from './routes/service-routes.ts';
import { taskRoutes } from './routes/task-routes.ts';
import { requestValidatorCompiler } from './routes/validator.ts';
import { Waits } from './routes/waits.ts';
import type { TaskQueue } from './tasks/task-queue.ts';
import type { TlsFiles } from './tls.ts';

export interface AppOptions {
  config: DeviceCoreConfig;
  /** Already started or not; the app never starts or stops it. */
  queue: TaskQueue;
  /** pino instance, used as fastify's `loggerInstance`. */
  logger: Logger;
  /** One per device, never prom-client's global default. */
  registry: Registry;
  /** Absent => `{ state: 'disabled' }`. */
  mqttHealth?: () => MqttHealth;
  /** PEM certificate and key: the app is served over HTTPS (`--tls-cert`, `--tls-key`). */
  tls?: TlsFiles;
}

/** Knobs for tests; not part of the service's configuration. */
export interface AppInternals {
  /** Clock (ms since the epoch) of token expiry and the failed-attempt window. */
  now?: () => number;
  /** Live tokens kept (default 10 000). */
  maxTokens?: number;
  /** Addresses the failed-attempt limiter remembers (default 10 000). */
  maxAddresses?: number;
}

/**
 * The request body limit. The script limit is checked by the engine on the decoded script's
 * UTF-8 bytes; the body is larger when JSON escapes inflate the script, and a script within its
 * limit must never be refused for the way its JSON was written. The worst case is 6 bytes of
 * JSON per byte of UTF-8 (`\u0001` for a control character; `\u00e9` for a 2-byte character is
 * 3x, Python's `json.dumps` default), so the body may hold 6 times the script limit plus 64 KiB
 * for the rest of the document (docs/decisions/body-limit.md).
 */
export function bodyLimitFor(maxScriptBytes: number): number {
  return maxScriptBytes * 6 + 64 * 1024;
}

type CompilersFactory = NonNullable<
  NonNullable<FastifyServerOptions['schemaController']>['compilersFactory']
>;

/**
 * Answers are written with JSON.stringify: each handler builds its whole body, typed by the
 * route's zod response schema, which documents it and which the tests pin; it is not checked
 * again at run time (docs/decisions/rest-answers-unchecked.md).
 */
const jsonSerializer = () => (data: unknown) => JSON.stringify(data);

/**
 * The zod request validator (routes/validator.ts) and the JSON serializer as fastify's compiler factories.
 * Typed for ajv's route definitions (schema: unknown); ours are zod schemas.
 */
const compilers = {
  buildValidator: () => requestValidatorCompiler,
  buildSerializer: () => jsonSerializer,
} as unknown as CompilersFactory;

const disabledMqtt = (): MqttHealth => ({ state: 'disabled' });

export async function buildApp(options: AppOptions, internals: AppInternals = {}): Promise<FastifyInstance> {
  return await build(options, internals, false);
}

/**
 * `withOpenApi`: the documentation app of registerLazyOpenApi (the same routes, with swagger
 * registered); otherwise the serving app, which builds that one on the first request for
 * /openapi.json or /docs.
 */
async function build(
  options: AppOptions,
  internals: AppInternals,
  withOpenApi: boolean,
): Promise<FastifyInstance> {
  const { config, queue, logger, registry } = options;
  // The engine owns the script limit; the body limit follows from it.
  const bodyLimit = bodyLimitFor(queue.maxScriptBytes);
  const app = Fastify({
    ...(options.tls && { https: { cert: options.tls.cert, key: options.tls.key } }),
    loggerInstance: logger as FastifyBaseLogger,
    bodyLimit,
    // The vendor's GET /api/authenticate carries a body; HEAD routes would clash with that.
    exposeHeadRoutes: false,
    // While closing, answer in-flight keep-alive requests normally rather than fastify's own 503 body.
    return503OnClosing: false,
    // Over-long ids must reach the route and get INVALID_REQUEST: node refuses a request line
    // over 16 KiB (431) before any parameter could be longer than this.
    routerOptions: { maxParamLength: 16 * 1024 },
    // Bad percent-encoding and parser errors answer in the contract's error body too.
    frameworkErrors,
    clientErrorHandler,
    // Every request is validated by zod, every answer written as JSON (above); given as the
    // factories, fastify never loads its default compilers (ajv, fast-json-stringify).
    schemaController: { compilersFactory: compilers },
    // Each request's child logger is built only if the request logs something (request-logger.ts).
    childLoggerFactory: lazyChildLoggerFactory,
  }) as unknown as FastifyInstance;
  app.addHttpMethod('GET', { hasBody: true, overrideExisting: true });
  // docs/api.md: all bodies are JSON; a text/plain body is 415, not a string to validate.
  app.removeContentTypeParser('text/plain');
  installJsonBodyParser(app, config.maxJsonDepth);
  app.setValidatorCompiler(requestValidatorCompiler);
  app.setSerializerCompiler(jsonSerializer);
  installErrorHandling(app, bodyLimit);

  const auth = new AuthService({
    users: config.users,
    enabled: config.auth === 'on',
    tokenTtlSeconds: config.tokenTtl,
    maxFailures: config.authMaxFailures,
    userMaxFailures: config.authUserMaxFailures,
    windowMs: config.authWindow,
    ...(internals.now && { now: internals.now }),
    ...(internals.maxTokens !== undefined && { maxTokens: internals.maxTokens }),
    ...(internals.maxAddresses !== undefined && { maxAddresses: internals.maxAddresses }),
  });
  if (config.auth === 'off') {
    logger.warn('--auth off: every /api route answers without a token; use only on a trusted network');
  } else if (auth.userCount === 0) {
    logger.warn('no user configured: /api/authenticate refuses everyone, so every /api route answers 401');
  }

  // The serve command may already have put the task metrics on this registry.
  const deviceMetrics =
    registry.getSingleMetric(METRIC_NAMES.tasks) === undefined
      ? createDeviceMetrics(registry, queue)
      : undefined;
  const httpMetrics =
    registry.getSingleMetric(METRIC_NAMES.httpRequests) === undefined
      ? createHttpMetrics(registry)
      : undefined;
  const waits = new Waits();
  auth.start();

  if (httpMetrics) observeHttpRequests(app, httpMetrics);
  app.addHook('preClose', async () => {
    waits.abortAll();
  });
  app.addHook('onClose', async () => {
    await closeDocsApp?.();
    waits.abortAll();
    auth.stop();
    deviceMetrics?.stop();
    httpMetrics?.stop();
  });

  let closeDocsApp: (() => Promise<void>) | undefined;
  if (withOpenApi) await registerOpenApi(app);
  else {
    // Quiet: the documentation app's build warnings were already logged by this one.
    const docsOptions = { ...options, logger: logger.child({}, { level: 'silent' }) };
    ({ closeDocsApp } = registerLazyOpenApi(app, () => build(docsOptions, internals, true)));
  }
  await app.register(authRoutes, { auth, bodyLimit: config.authBodyLimit });
  await app.register(logoutRoute, { auth });
  await app.register(taskRoutes, { auth, queue, config, waits });
  await app.register(serviceRoutes, {
    config,
    queue,
    registry,
    mqttHealth: options.mqttHealth ?? disabledMqtt,
    startedAt: Date.now(),
  });
  await app.ready();
  return app;
}
