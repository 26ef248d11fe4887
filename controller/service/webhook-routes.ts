/**
 * Webhooks over HTTP (docs/controller.md, "Webhooks"): add one (its secret shown in this answer
 * only), list them, delete one, and read its latest deliveries. Roles arrive with user roles;
 * until then every signed-in user is an admin.
 */
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import * as z from 'zod';
import type { AuthService } from '../../src/auth/auth-service.ts';
import { ApiError } from '../../src/routes/api-error.ts';
import { errorResponse, errorResponses, jsonResponse } from '../../src/routes/schemas.ts';
import type { AuditLog } from '../audit-log.ts';
import { WEBHOOK_EVENTS, type WebhookEvent, type Webhooks } from '../webhooks.ts';
import { requireToken, userOf } from './auth-routes.ts';
import { DEFAULT_PAGE, inputErrors, MAX_PAGE, securedErrors, security } from './schemas.ts';
import {
  deliveryListSchema,
  webhookCreatedSchema,
  webhookIdParamsSchema,
  webhookListSchema,
  webhookSchema,
  webhookSpecSchema,
} from './webhook-schemas.ts';

export interface WebhookRoutesOptions {
  auth: AuthService;
  webhooks: Webhooks;
  audit: AuditLog;
}

/** The receiver as audited: its origin only (a path or query may hold a token). */
function originOf(url: string): string {
  return new URL(url).origin;
}

const notFound = errorResponse('WEBHOOK_DOES_NOT_EXIST: no webhook with this id');

function webhookDoesNotExist(webhookId: string): ApiError {
  return new ApiError('WEBHOOK_DOES_NOT_EXIST', `Webhook ${webhookId} does not exist`);
}

export const webhookRoutes: FastifyPluginAsyncZod<WebhookRoutesOptions> = async (
  app,
  { auth, webhooks, audit },
) => {
  app.addHook('onRequest', requireToken(auth));

  app.post('/api/webhooks', {
    schema: {
      tags: ['webhooks'],
      summary: `Notify a URL of events (${WEBHOOK_EVENTS.join(', ')}), signed per Standard Webhooks; the secret is shown in this answer only`,
      security,
      body: webhookSpecSchema,
      response: {
        ...inputErrors,
        201: jsonResponse('Created, with its secret', webhookCreatedSchema),
        415: errorResponses.mediaType,
      },
    },
    handler: async (request, reply) => {
      const spec = request.body as { url: string; events: WebhookEvent[]; secret?: string };
      const created = webhooks.create(spec, userOf(request));
      audit.record({
        user: userOf(request),
        address: request.ip,
        action: 'webhook_created',
        detail: `webhook ${created.webhookId} to ${originOf(created.url)} for ${created.events.join(', ')}`,
      });
      request.log.info({ webhookId: created.webhookId, events: created.events }, 'webhook created');
      return reply.code(201).header('location', `/api/webhooks/${created.webhookId}`).send(created);
    },
  });

  app.get('/api/webhooks', {
    schema: {
      tags: ['webhooks'],
      summary: 'The webhooks, oldest first (secrets are never shown again)',
      security,
      querystring: z.strictObject({}),
      response: {
        ...inputErrors,
        200: jsonResponse('Webhooks', webhookListSchema),
      },
    },
    handler: async () => ({ webhooks: webhooks.list() }),
  });

  app.delete('/api/webhooks/:webhookId', {
    schema: {
      tags: ['webhooks'],
      summary: 'Delete a webhook and its deliveries (pending ones are not sent)',
      security,
      params: webhookIdParamsSchema,
      response: {
        ...securedErrors,
        200: jsonResponse('The webhook deleted', webhookSchema),
        404: notFound,
      },
    },
    handler: async (request) => {
      const hook = webhooks.get(request.params.webhookId);
      if (!hook || !webhooks.remove(hook.webhookId)) throw webhookDoesNotExist(request.params.webhookId);
      audit.record({
        user: userOf(request),
        address: request.ip,
        action: 'webhook_deleted',
        detail: `webhook ${hook.webhookId} to ${originOf(hook.url)}`,
      });
      return hook;
    },
  });

  app.get('/api/webhooks/:webhookId/deliveries', {
    schema: {
      tags: ['webhooks'],
      summary: 'The latest deliveries of a webhook, newest first (?limit=, default 50)',
      security,
      params: webhookIdParamsSchema,
      querystring: z.strictObject({
        limit: z.coerce.number().int().min(1).max(MAX_PAGE).optional(),
      }),
      response: {
        ...inputErrors,
        200: jsonResponse('Deliveries', deliveryListSchema),
        404: notFound,
      },
    },
    handler: async (request) => {
      const { webhookId } = request.params;
      if (!webhooks.get(webhookId)) throw webhookDoesNotExist(webhookId);
      return { deliveries: webhooks.deliveries(webhookId, request.query.limit ?? DEFAULT_PAGE) };
    },
  });
};
