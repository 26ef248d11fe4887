/**
 * The read side of the controller service (docs/controller.md, "HTTP API"): registers, stores, the
 * audit trail (bearer token), health and metrics (no token).
 */
import type { FastifyPluginAsyncZod, ZodTypeProvider } from 'fastify-type-provider-zod';
import type { Registry } from 'prom-client';
import type { AuthService } from '../../src/auth/auth-service.ts';
import { errorResponses, jsonResponse } from '../../src/routes/schemas.ts';
import { addMetricsRoute } from '../../src/routes/service-routes.ts';
import { VERSION } from '../../src/version.ts';
import type { AuditLog } from '../audit-log.ts';
import type { JobEngine } from '../job-engine.ts';
import { storeInsideScope } from '../permissions.ts';
import { storeSummaries } from '../stores.ts';
import { accessOf } from './access.ts';
import { requireToken } from './auth-routes.ts';
import { deviceBody } from './device-body.ts';
import {
  auditListSchema,
  auditQuerySchema,
  DEFAULT_PAGE,
  deviceListSchema,
  inputErrors,
  securedErrors,
  security,
  serviceHealthSchema,
  storeListSchema,
} from './schemas.ts';
import type { DirectoryView } from './service-app.ts';

export interface ReadRoutesOptions {
  auth: AuthService;
  engine: JobEngine;
  directory: DirectoryView;
  audit: AuditLog;
  registry: Registry;
  startedAt: number;
  jobCount: () => number;
}

export const readRoutes: FastifyPluginAsyncZod<ReadRoutesOptions> = async (app, options) => {
  const { auth, engine, directory, audit, registry } = options;

  await app.register(async (plugin) => {
    const secured = plugin.withTypeProvider<ZodTypeProvider>();
    secured.addHook('onRequest', requireToken(auth));
    secured.get('/api/devices', {
      schema: {
        tags: ['devices'],
        summary: 'Every register known from its retained state, online or not, by deviceId',
        security,
        response: {
          ...securedErrors,
          200: jsonResponse('Registers', deviceListSchema),
        },
      },
      handler: async (request) => {
        const scope = accessOf(request).scope;
        return {
          devices: directory
            .devices()
            .filter((entry) => storeInsideScope(scope, entry.store))
            .map((entry) => deviceBody(entry, directory.taskSummary(entry.deviceId))),
        };
      },
    });

    secured.get('/api/stores', {
      schema: {
        tags: ['devices'],
        summary:
          'The stores of a controller for several stores (--ns stores/+), by store: registers known and online, last heard of, link (--store-link-topic), silent (none online, or link down); [] with one store',
        security,
        response: {
          ...securedErrors,
          200: jsonResponse('Stores', storeListSchema),
        },
      },
      handler: async (request) => {
        const scope = accessOf(request).scope;
        return {
          stores: storeSummaries(directory.devices(), directory.storeLinks?.()).filter((store) =>
            storeInsideScope(scope, store.store),
          ),
        };
      },
    });

    secured.get('/api/audit', {
      schema: {
        tags: ['audit'],
        summary:
          'The audit trail, newest first (?limit=, default 50), filtered by action, user, from, to; other parameters are refused',
        security,
        querystring: auditQuerySchema,
        response: {
          ...inputErrors,
          200: jsonResponse('Entries', auditListSchema),
        },
      },
      handler: async (request) => {
        const { limit, ...filter } = request.query;
        return { entries: audit.list(limit ?? DEFAULT_PAGE, filter) };
      },
    });
  });

  app.get('/health', {
    schema: {
      tags: ['service'],
      summary:
        'Liveness, history, broker connection, registers and jobs; 503 while the history cannot be written',
      response: {
        200: jsonResponse('The service answers', serviceHealthSchema),
        503: jsonResponse('The history (audit trail) cannot be written: logins fail', serviceHealthSchema),
        500: errorResponses.internal,
      },
    },
    handler: async (_request, reply) => {
      const devices = directory.devices();
      const reconnect = directory.reconnect;
      const fault = audit.fault;
      if (fault !== undefined) reply.code(503);
      return {
        status: fault === undefined ? ('ok' as const) : ('error' as const),
        version: VERSION,
        uptimeSeconds: Math.floor((Date.now() - options.startedAt) / 1000),
        history: fault === undefined ? { state: 'ok' as const } : { state: 'error' as const, error: fault },
        mqtt: { state: directory.connection, ...(reconnect && { reconnect }) },
        devices: { known: devices.length, online: devices.filter((d) => d.online).length },
        jobs: { inProgress: engine.activeCount, total: options.jobCount() },
      };
    },
  });

  addMetricsRoute(app, registry);
};
