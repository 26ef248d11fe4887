/**
 * Logging in to the controller service (docs/api.md): `/api/authenticate` with every attempt
 * audited, `POST /api/logout`, and the bearer check of the other `/api` routes, from the
 * Authorization header only (URLs reach logs; the event stream has tickets).
 */
import type { FastifyRequest, onRequestHookHandler } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { AuthService } from '../../src/auth/auth-service.ts';
import { ApiError } from '../../src/routes/api-error.ts';
import { logoutRoute } from '../../src/routes/logout-route.ts';
import { authenticateResponses, credentialsSchema } from '../../src/routes/schemas.ts';
import type { AuditLog } from '../audit-log.ts';
import { LoginAudit } from './login-audit.ts';

const users = new WeakMap<FastifyRequest, string>();

/** The user whose token the request carried (checked by requireToken). */
export function userOf(request: FastifyRequest): string {
  return users.get(request) ?? 'unknown';
}

export function requireToken(auth: AuthService): onRequestHookHandler {
  return (request, _reply, done) => {
    try {
      users.set(request, auth.check(request.headers.authorization) ?? 'anonymous');
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
  /** `--auth-body-limit`: bytes of body authenticate reads (anyone may call it). */
  bodyLimit: number;
}

export const serviceAuthRoutes: FastifyPluginAsyncZod<ServiceAuthOptions> = async (
  app,
  { auth, audit, bodyLimit },
) => {
  const refusals = new LoginAudit(audit);
  await app.register(logoutRoute, {
    auth,
    onLogout: (user, address) => audit.record({ user, address, action: 'logout', detail: 'token revoked' }),
  });
  for (const method of ['GET', 'POST'] as const) {
    app.route({
      method,
      url: '/api/authenticate',
      // Anyone may call this route: it reads a few KiB, not the scripts' 2 MiB (docs/security.md).
      bodyLimit,
      schema: {
        tags: ['auth'],
        summary: `Trade a user name and password for a bearer token${method === 'GET' ? ' (vendor form, JSON body)' : ''}`,
        body: credentialsSchema,
        response: authenticateResponses,
      },
      handler: async (request) => {
        const { userName, password } = request.body;
        try {
          const issued = await auth.authenticate(request.ip, userName, password);
          audit.record({ user: userName, address: request.ip, action: 'login', detail: 'token issued' });
          return issued;
        } catch (error) {
          const code = error instanceof ApiError ? error.code : 'INTERNAL_ERROR';
          // Never the name itself: it may be a password typed into the wrong field.
          const userNameDigest = auth.userNameDigest(userName);
          const knownUser = auth.knows(userName);
          refusals.refused(userNameDigest, knownUser, request.ip, code);
          request.log.warn(
            { userNameDigest, knownUser, remoteAddress: request.ip },
            'authentication refused',
          );
          throw error;
        }
      },
    });
  }
};
