/**
 * `GET /api/authenticate` with a JSON body (docs/api.md, "Authentication"; the vendor client
 * sends it that way) and the same as `POST` for clients that cannot send a GET body.
 */
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { AuthService } from '../auth/auth-service.ts';
import { authenticateResponses, credentialsSchema } from './schemas.ts';

export interface AuthRoutesOptions {
  auth: AuthService;
  /** `--auth-body-limit`: bytes of body authenticate reads; a credential pair needs far less. */
  bodyLimit: number;
}

export const authRoutes: FastifyPluginAsyncZod<AuthRoutesOptions> = async (app, { auth, bodyLimit }) => {
  for (const method of ['GET', 'POST'] as const) {
    app.route({
      method,
      url: '/api/authenticate',
      // Anyone may call this route: it reads a few KiB, not the scripts' 2 MiB (docs/security.md).
      bodyLimit,
      schema: {
        tags: ['auth'],
        summary:
          method === 'GET'
            ? 'Trade a user name and password for a bearer token (vendor form: GET with a JSON body)'
            : 'Trade a user name and password for a bearer token (the form for browsers and generated clients)',
        description:
          method === 'GET'
            ? "The vendor's form: a GET with a JSON body, as the vendor's Java client sends it. OpenAPI 3.0 " +
              'tools ignore a GET body (swagger-ui, browsers and generated clients cannot send it): they should ' +
              'use POST /api/authenticate, which takes the same body and answers the same.'
            : 'The same as GET /api/authenticate with its JSON body, for clients that cannot send a body ' +
              'with GET: browsers, swagger-ui and clients generated from this description.',
        body: credentialsSchema,
        response: authenticateResponses,
      },
      handler: async (request) => {
        const { userName, password } = request.body;
        try {
          const issued = await auth.authenticate(request.ip, userName, password);
          request.log.info({ userName }, 'authenticated');
          return issued;
        } catch (error) {
          // Never the name itself: it may be a password typed into the wrong field.
          request.log.warn(
            {
              userNameDigest: auth.userNameDigest(userName),
              knownUser: auth.knows(userName),
              remoteAddress: request.ip,
            },
            'authentication refused',
          );
          throw error;
        }
      },
    });
  }
};
