/**
 * Logging in to the controller service: `GET`/`POST /api/authenticate` as on the device
 * (docs/api.md), every success and failure written to the audit trail with the caller's
 * address; and the bearer check of every other `/api` route. `GET /api/events` also takes the
 * token as `?access_token=` (RFC 6750 section 2.3), because a browser's EventSource cannot send
 * an Authorization header.
 */
import type { FastifyRequest, onRequestHookHandler } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { AuthService } from '../../src/auth/auth-service.ts';
import { ApiError } from '../../src/routes/api-error.ts';
import {
  credentialsSchema,
  errorResponse,
  errorResponses,
  jsonResponse,
  tokenSchema,
} from '../../src/routes/schemas.ts';
import type { AuditLog } from '../audit-log.ts';

const users = new WeakMap<FastifyRequest, string>();

/** The user whose token the request carried (checked by requireToken). */
export function userOf(request: FastifyRequest): string {
  return users.get(request) ?? 'unknown';
}

export function requireToken(
  auth: AuthService,
  options: { queryToken?: boolean } = {},
): onRequestHookHandler {
  return (request, _reply, done) => {
    try {
      let header = request.headers.authorization;
      if (header === undefined && options.queryToken) {
        const token = new URL(request.url, 'http://x').searchParams.get('access_token');
        if (token) header = `Bearer ${token}`;
      }
      users.set(request, auth.check(header) ?? 'anonymous');
    } catch (error) {
      done(error as Error);
      return;
    }
    done();
  };
}

export interface ServiceAuthOptions {
  auth: AuthService;
  audit: AuditLog;
}

export const serviceAuthRoutes: FastifyPluginAsyncZod<ServiceAuthOptions> = async (app, { auth, audit }) => {
  for (const method of ['GET', 'POST'] as const) {
    app.route({
      method,
      url: '/api/authenticate',
      schema: {
        tags: ['auth'],
        summary: `Trade a user name and password for a bearer token${method === 'GET' ? ' (vendor form, JSON body)' : ''}`,
        body: credentialsSchema,
        response: {
          200: jsonResponse('A bearer token for the other /api routes', tokenSchema),
          400: errorResponses.invalid,
          401: errorResponse('INVALID_CREDENTIALS: wrong user name or password'),
          415: errorResponses.mediaType,
          429: errorResponse('TOO_MANY_ATTEMPTS: too many failures from this address; see Retry-After'),
          500: errorResponses.internal,
        },
      },
      handler: async (request) => {
        const { userName, password } = request.body;
        try {
          const issued = await auth.authenticate(request.ip, userName, password);
          audit.record({ user: userName, address: request.ip, action: 'login', detail: 'token issued' });
          return issued;
        } catch (error) {
          const code = error instanceof ApiError ? error.code : 'INTERNAL_ERROR';
          audit.record({ user: userName, address: request.ip, action: 'login_failed', detail: code });
          request.log.warn({ userName, remoteAddress: request.ip }, 'authentication refused');
          throw error;
        }
      },
    });
  }
};
