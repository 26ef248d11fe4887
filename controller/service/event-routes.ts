/**
 * The event stream's routes (docs/controller.md, "Events"): `POST /api/events/ticket` and
 * `GET /api/events` with a ticket or the Authorization header. A stream ends with its token's
 * session; each user holds at most `--max-event-streams`.
 */
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import * as z from 'zod';
import type { AuthService } from '../../src/auth/auth-service.ts';
import type { TokenSession } from '../../src/auth/token-store.ts';
import { ApiError } from '../../src/routes/api-error.ts';
import { errorResponse, errorResponses, jsonResponse } from '../../src/routes/schemas.ts';
import type { EventStream } from './event-stream.ts';
import type { EventTickets } from './event-tickets.ts';
import { securedErrors, security } from './schemas.ts';

export interface EventRoutesOptions {
  auth: AuthService;
  events: EventStream;
  tickets: EventTickets;
}

const ticketSchema = z.object({
  ticket: z.string(),
  expiresIn: z.number().int().positive(),
});

function refusedTicket(): ApiError {
  return new ApiError(
    'UNAUTHORIZED',
    'Unknown, used or expired ticket: ask POST /api/events/ticket for another',
    {
      headers: { 'www-authenticate': 'Bearer' },
    },
  );
}

export const eventRoutes: FastifyPluginAsyncZod<EventRoutesOptions> = async (
  app,
  { auth, events, tickets },
) => {
  app.post('/api/events/ticket', {
    schema: {
      tags: ['service'],
      summary: 'A single-use ticket for GET /api/events?ticket=, valid 30 s',
      security,
      response: {
        ...securedErrors,
        200: jsonResponse('A ticket for one event stream, bound to this token', ticketSchema),
      },
    },
    handler: async (request) => tickets.issue(auth.session(request.headers.authorization)),
  });

  app.get('/api/events', {
    schema: {
      tags: ['service'],
      summary:
        'Server-Sent Events: `event: device` (a register) and `event: job` (a job without results, script and target, plus the `result` that changed). Authenticated by a ticket (?ticket=) or the Authorization header; never a token in the URL',
      security,
      querystring: z.object({ ticket: z.string().max(100).optional() }),
      response: {
        200: { description: 'text/event-stream', content: { 'text/event-stream': { schema: z.string() } } },
        400: errorResponses.invalid,
        401: errorResponses.unauthorized,
        429: errorResponse('TOO_MANY_EVENT_STREAMS: this user has --max-event-streams streams open'),
      },
    },
    handler: async (request, reply) => {
      const { ticket } = request.query;
      let session: TokenSession;
      if (ticket !== undefined) {
        const redeemed = tickets.redeem(ticket);
        if (!redeemed || !auth.isLive(redeemed.key)) throw refusedTicket();
        session = redeemed;
      } else session = auth.session(request.headers.authorization);
      if (!events.admits(session.userName)) {
        throw new ApiError(
          'TOO_MANY_EVENT_STREAMS',
          'Too many event streams open for this user: close one first',
        );
      }
      reply.hijack();
      events.add(reply.raw, session);
    },
  });
};
