/**
 * Headers of every controller service answer (docs/security.md, "Controller service"): the
 * dashboard loads only its own files and is never framed (clickjacking), no answer is sniffed as
 * another type, and no URL leaks in a Referer. swagger-ui at /docs builds its page with inline
 * styles, so it keeps the other two headers but not the policy.
 */
import type { FastifyInstance } from 'fastify';

export const CONTENT_SECURITY_POLICY = "default-src 'self'; frame-ancestors 'none'";

export const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'content-security-policy': CONTENT_SECURITY_POLICY,
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
};

export function installSecurityHeaders(app: FastifyInstance): void {
  app.addHook('onRequest', (request, reply, done) => {
    const docs = request.url === '/docs' || request.url.startsWith('/docs/');
    for (const [name, value] of Object.entries(SECURITY_HEADERS)) {
      if (!(docs && name === 'content-security-policy')) reply.header(name, value);
    }
    done();
  });
}
