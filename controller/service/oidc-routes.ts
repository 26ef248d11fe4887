/**
 * Single sign-on routes (docs/controller.md, "Single sign-on"): status, login, callback (which
 * hands the dashboard a one-time code in the fragment) and the session exchange for a bearer
 * token. An HttpOnly cookie binds them to the browser that began, against login CSRF; no token is
 * ever put in a URL.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import * as z from 'zod';
import type { AuthService } from '../../src/auth/auth-service.ts';
import { ApiError } from '../../src/routes/api-error.ts';
import { errorResponse, errorResponses, jsonResponse, tokenSchema } from '../../src/routes/schemas.ts';
import type { AuditLog } from '../audit-log.ts';
import { OidcError, type OidcSignIn } from '../oidc-sign-in.ts';
import { ROLES, scopeText } from '../users.ts';
import { LoginAudit } from './login-audit.ts';
import { Handovers, type OidcUsers } from './oidc-sessions.ts';

export interface OidcRouteOptions {
  auth: AuthService;
  audit: AuditLog;
  /** Absent: no `--oidc-issuer`; the routes answer OIDC_NOT_CONFIGURED. */
  signIn?: OidcSignIn | undefined;
  users: OidcUsers;
  /** Bytes of body `POST /api/oidc/session` reads (anyone may call it): `--auth-body-limit`. */
  bodyLimit: number;
}

const COOKIE = 'regbridge_sso';
const COOKIE_PATH = '/api/oidc';
/** The cookie lives as long as a sign-in may take (OidcLimits.pendingMs). */
const COOKIE_SECONDS = 600;

function browserKeyOf(request: FastifyRequest): string | undefined {
  for (const part of (request.headers.cookie ?? '').split(';')) {
    const [name, ...value] = part.trim().split('=');
    if (name === COOKIE) return value.join('=');
  }
  return undefined;
}

/** `https`: the browser reaches the service over HTTPS (directly, or through a proxy's --oidc-redirect-url). */
function cookie(https: boolean, value: string, seconds: number): string {
  const secure = https ? '; Secure' : '';
  return `${COOKIE}=${value}; Path=${COOKIE_PATH}; HttpOnly; SameSite=Lax; Max-Age=${seconds}${secure}`;
}

const configSchema = z.object({
  enabled: z.boolean(),
  name: z.string().optional().describe('Shown as "Sign in with <name>"'),
  loginUrl: z.string().optional().describe('Where the browser goes to sign in'),
});

const sessionSchema = tokenSchema.extend({
  user: z.string(),
  role: z.enum(ROLES),
});

const redirect = (what: string) => jsonResponse(`303 See Other to ${what} (no body)`, z.null());
const notConfigured = errorResponse('OIDC_NOT_CONFIGURED: no --oidc-issuer is given');

export const oidcRoutes: FastifyPluginAsyncZod<OidcRouteOptions> = async (
  app,
  { auth, audit, signIn, users, bodyLimit },
) => {
  const refusals = new LoginAudit(audit);
  const handovers = new Handovers();
  const configured = (): OidcSignIn => {
    if (!signIn)
      throw new ApiError('OIDC_NOT_CONFIGURED', 'Single sign-on is off: no --oidc-issuer is given');
    return signIn;
  };
  const callbackUrl = (request: FastifyRequest, sso: OidcSignIn): string =>
    sso.fixedRedirectUrl ?? `${request.protocol}://${request.host}${COOKIE_PATH}/callback`;
  /** The dashboard, as the browser reaches it; a Host header no URL can be made of: this host. */
  const dashboard = (request: FastifyRequest, sso: OidcSignIn, fragment: string): string => {
    try {
      return `${new URL('/', callbackUrl(request, sso)).href}#${fragment}`;
    } catch {
      return `/#${fragment}`;
    }
  };
  const refused = (request: FastifyRequest, reply: FastifyReply, sso: OidcSignIn, error: unknown) => {
    const code = error instanceof OidcError ? error.code : 'OIDC_FAILED';
    const reason = error instanceof Error ? error.message : String(error);
    refusals.refusedSignOn(request.ip, code, reason);
    request.log.warn({ code, reason, remoteAddress: request.ip }, 'single sign-on refused');
    return reply
      .code(303)
      .header('location', dashboard(request, sso, `oidc-error=${code}`))
      .send();
  };

  app.get('/api/oidc', {
    schema: {
      tags: ['auth'],
      summary: 'Whether single sign-on is on, and the name its button shows',
      response: { 200: jsonResponse('Single sign-on settings the dashboard needs', configSchema) },
    },
    handler: async () =>
      signIn
        ? { enabled: true, name: signIn.displayName, loginUrl: `${COOKIE_PATH}/login` }
        : { enabled: false },
  });

  app.get('/api/oidc/login', {
    schema: {
      tags: ['auth'],
      summary: 'Begin a single sign-on: to the identity provider (authorization code flow with PKCE)',
      response: {
        303: redirect('the provider, or to the dashboard with #oidc-error=CODE'),
        404: notConfigured,
      },
    },
    handler: async (request, reply) => {
      const sso = configured();
      try {
        const { url, browserKey } = await sso.begin(callbackUrl(request, sso), request.ip);
        const https = callbackUrl(request, sso).startsWith('https:');
        reply.header('set-cookie', cookie(https, browserKey, COOKIE_SECONDS));
        return reply.code(303).header('location', url.href).send();
      } catch (error) {
        return refused(request, reply, sso, error);
      }
    },
  });

  app.get('/api/oidc/callback', {
    schema: {
      tags: ['auth'],
      summary: "The identity provider's answer: to the dashboard with a one-time hand-over code",
      response: { 303: redirect('the dashboard with #oidc=CODE or #oidc-error=CODE'), 404: notConfigured },
    },
    handler: async (request, reply) => {
      const sso = configured();
      const url = new URL(request.url, 'http://callback.invalid');
      try {
        const providerError = url.searchParams.get('error');
        if (providerError !== null)
          throw new OidcError('OIDC_FAILED', `the provider answered ${providerError.slice(0, 100)}`);
        const browserKey = browserKeyOf(request);
        const who = await sso.finish(url, browserKey);
        if (users.signedIn(who)) auth.revokeUser(who.userName);
        const token = auth.issueFor(who.userName);
        const scope = who.scope ? `, scope ${scopeText(who.scope)}` : '';
        audit.record({
          user: who.userName,
          address: request.ip,
          action: 'login',
          detail: `token issued (single sign-on, role ${who.role}${scope}${who.note ? `; ${who.note}` : ''})`,
        });
        const code = handovers.add({ token, user: who.userName, role: who.role }, browserKey ?? '');
        return reply
          .code(303)
          .header('location', dashboard(request, sso, `oidc=${code}`))
          .send();
      } catch (error) {
        return refused(request, reply, sso, error);
      }
    },
  });

  app.post('/api/oidc/session', {
    bodyLimit,
    schema: {
      tags: ['auth'],
      summary: "Trade the callback's one-time hand-over code for a bearer token (same browser only)",
      body: z.object({ code: z.string().min(1).max(200) }),
      response: {
        200: jsonResponse(
          'A bearer token, as /api/authenticate gives, with its user and role',
          sessionSchema,
        ),
        400: errorResponse('OIDC_FAILED: unknown, used or expired code, or another browser; INVALID_REQUEST'),
        404: notConfigured,
        413: errorResponse('BODY_TOO_LARGE: the body is over --auth-body-limit'),
        415: errorResponses.mediaType,
      },
    },
    handler: async (request, reply) => {
      const sso = configured();
      const handover = handovers.take(request.body.code, browserKeyOf(request));
      reply.header('set-cookie', cookie(callbackUrl(request, sso).startsWith('https:'), '', 0));
      if (!handover) {
        refusals.refusedSignOn(
          request.ip,
          'OIDC_FAILED',
          'hand-over code unknown, used, expired or another browser',
        );
        throw new ApiError('OIDC_FAILED', 'Unknown, used or expired sign-in code: sign in again');
      }
      return { ...handover.token, user: handover.user, role: handover.role };
    },
  });
};
