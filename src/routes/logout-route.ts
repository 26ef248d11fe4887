/**
 * `POST /api/logout` (device and controller service): the request's bearer token is revoked at
 * once, so a token that leaked after its holder logged out is worth nothing (docs/security.md).
 */
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import * as z from 'zod';
import type { AuthService } from '../auth/auth-service.ts';
import { jsonResponse, securedErrors, security } from './schemas.ts';

export interface LogoutRouteOptions {
  auth: AuthService;
  /** After a revocation (the controller service audits it). */
  onLogout?: (user: string, address: string) => void;
}

export const logoutRoute: FastifyPluginAsyncZod<LogoutRouteOptions> = async (app, { auth, onLogout }) => {
  app.post('/api/logout', {
    schema: {
      tags: ['auth'],
      summary: 'Revoke the bearer token of this request at once',
      security,
      response: {
        ...securedErrors,
        204: jsonResponse('The token is revoked (no body); with auth off, nothing to revoke', z.null()),
      },
    },
    handler: async (request, reply) => {
      const header = request.headers.authorization;
      const user = auth.enabled ? auth.session(header).userName : undefined;
      auth.logout(header);
      if (user !== undefined) onLogout?.(user, request.ip);
      return reply.code(204).send();
    },
  });
};
