/**
 * Closing a fastify app without waiting on a client. Node 20 does not count a reused keep-alive
 * socket as idle while its client leaves a response body unread (undici's fetch until the body
 * is garbage-collected), so fastify's close would wait on that client; past the grace period
 * every remaining connection is cut.
 */
import type { FastifyInstance } from 'fastify';

/** How long requests in flight get to finish when the service stops. */
export const HTTP_CLOSE_GRACE_MS = 2000;

export async function closeHttpApp(app: FastifyInstance, graceMs = HTTP_CLOSE_GRACE_MS): Promise<void> {
  const cut = setTimeout(() => app.server.closeAllConnections(), graceMs);
  try {
    await app.close();
  } finally {
    clearTimeout(cut);
  }
}
