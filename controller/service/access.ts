/**
 * Who may call which route (docs/controller.md, "Users and roles"): every `/api` route but
 * authenticate maps to an action of the role table (controller/permissions.ts). A route not in
 * the table is `read` for GET and `administer` otherwise, so a route added later is admin-only
 * until it is listed. Refusals are 403 FORBIDDEN, audited. Also `GET /api/me`.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import * as z from 'zod';
import type { AuthService } from '../../src/auth/auth-service.ts';
import { ApiError } from '../../src/routes/api-error.ts';
import { errorResponse, errorResponses, jsonResponse } from '../../src/routes/schemas.ts';
import type { AuditLog } from '../audit-log.ts';
import { type Action, may } from '../permissions.ts';
import { ROLES, type Role, type Scope, scopeText } from '../users.ts';
import { requireToken, userOf } from './auth-routes.ts';

/** The role (and scope) of a user name; undefined: not a user (any more). */
export type RoleLookup = (userName: string) => { role: Role; scope?: Scope | undefined } | undefined;

export interface Access {
  user: string;
  role: Role;
  scope?: Scope | undefined;
}

const OPERATE_JOB = ['cancel', 'pause', 'resume', 'rerun'];

/** `METHOD url-pattern` -> action; the rest: GET read, others administer. */
const ROUTE_ACTIONS = new Map<string, Action>([
  ['POST /api/jobs', 'operate'],
  ...OPERATE_JOB.map((verb): [string, Action] => [`POST /api/jobs/:jobId/${verb}`, 'operate']),
  ['POST /api/jobs/:jobId/approve', 'approve'],
  ['POST /api/jobs/:jobId/deny', 'approve'],
  ['POST /api/schedules/:scheduleId/run', 'operate'],
  ['POST /api/scripts', 'author'],
  ['PUT /api/scripts/:scriptId', 'author'],
  ['DELETE /api/scripts/:scriptId', 'author'],
  // Checking a script changes nothing: anyone who may read may ask.
  ['POST /api/scripts/validate', 'read'],
  // Webhooks are the admin's, reads too: receivers' URLs may carry tokens, deliveries show
  // what is sent where.
  ['GET /api/webhooks', 'administer'],
  ['GET /api/webhooks/:webhookId/deliveries', 'administer'],
]);

/**
 * Routes that need no role (they need no token either): logging in, single sign-on (its own
 * state and cookie stand in for a token), the simulator's command table.
 */
const OPEN = new Set([
  '/api/authenticate',
  '/api/oidc',
  '/api/oidc/login',
  '/api/oidc/callback',
  '/api/oidc/session',
  '/api/simulator/commands',
]);

/**
 * Routes every role may use that check their own credentials (the bearer header, or the event
 * stream's single-use ticket): the check below would see no user for them.
 */
const SELF_AUTHENTICATED = new Set(['POST /api/logout', 'POST /api/events/ticket', 'GET /api/events']);

export function actionOf(method: string, url: string): Action {
  return ROUTE_ACTIONS.get(`${method} ${url}`) ?? (method === 'GET' ? 'read' : 'administer');
}

const accesses = new WeakMap<FastifyRequest, Access>();

/** The caller's user, role and scope (set for every `/api` route that needs a token). */
export function accessOf(request: FastifyRequest): Access {
  return accesses.get(request) ?? { user: userOf(request), role: 'viewer' };
}

export const forbiddenResponse = errorResponse("FORBIDDEN: the caller's role may not do this");

/**
 * Installs the check on `app` (before any route is registered): after the token check, before
 * the body is validated, so a refused caller learns nothing about the body's rules.
 */
export function installAccessControl(app: FastifyInstance, roleOf: RoleLookup, audit: AuditLog): void {
  app.addHook('onRoute', (route) => {
    const url = route.url;
    if (!url.startsWith('/api/') || OPEN.has(url) || !route.schema?.response) return;
    const responses = route.schema.response as Record<string, unknown>;
    responses[403] ??= forbiddenResponse;
  });
  app.addHook('preValidation', async (request) => {
    const url = request.routeOptions.url;
    if (url === undefined || !url.startsWith('/api/') || OPEN.has(url)) return;
    if (SELF_AUTHENTICATED.has(`${request.method} ${url}`)) return;
    const user = userOf(request);
    const entry = roleOf(user);
    const action = actionOf(request.method, url);
    if (entry === undefined || !may(entry.role, action)) {
      const role = entry?.role ?? 'none';
      audit.record({
        user,
        address: request.ip,
        action: 'forbidden',
        detail: `${request.method} ${url} (role ${role})`,
      });
      throw new ApiError('FORBIDDEN', `Role ${role} may not ${request.method} ${url}`, {
        extra: { role },
      });
    }
    accesses.set(request, { user, role: entry.role, ...(entry.scope && { scope: entry.scope }) });
  });
}

/** An operator's target reaches registers outside its scope: audited, then 403 OUT_OF_SCOPE. */
export function outOfScope(
  request: FastifyRequest,
  audit: AuditLog,
  what: string,
  deviceIds: string[],
): ApiError {
  const access = accessOf(request);
  const scope = access.scope ? scopeText(access.scope) : '';
  audit.record({
    user: access.user,
    address: request.ip,
    action: 'out_of_scope',
    detail: `${request.method} ${request.routeOptions.url}: ${what} (scope ${scope})`,
  });
  return new ApiError('OUT_OF_SCOPE', `${what} reaches registers outside your scope ${scope}`, {
    extra: { deviceIds: deviceIds.slice(0, 20) },
  });
}

const meSchema = z.object({
  user: z.string(),
  role: z.enum(ROLES),
  scope: z.string().optional().describe('As in the users file: group=G1,G2 or store=S1,S2'),
});

export const meRoutes: FastifyPluginAsyncZod<{ auth: AuthService }> = async (app, { auth }) => {
  app.addHook('onRequest', requireToken(auth));
  app.get('/api/me', {
    schema: {
      tags: ['auth'],
      summary: 'Who the token belongs to: user name, role and scope',
      security: [{ bearerAuth: [] }],
      response: {
        200: jsonResponse('The caller', meSchema),
        401: errorResponses.unauthorized,
        500: errorResponses.internal,
      },
    },
    handler: async (request) => {
      const { user, role, scope } = accessOf(request);
      return { user, role, ...(scope && { scope: scopeText(scope) }) };
    },
  });
};
