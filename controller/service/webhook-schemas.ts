/** The zod schemas of the webhook routes (controller/service/webhook-routes.ts). */
import * as z from 'zod';
import { apiSchemas } from '../../src/routes/schemas.ts';
import { WEBHOOK_EVENTS } from '../webhooks.ts';

const timestamp = z.iso.datetime({ offset: false });
const events = z.enum(WEBHOOK_EVENTS);

export const webhookSpecSchema = z.strictObject({
  url: z.url({ protocol: /^https?$/, error: 'must be an http:// or https:// URL' }).max(2000),
  events: z
    .array(events)
    .min(1)
    .max(WEBHOOK_EVENTS.length * 2),
  secret: z
    .string()
    .regex(/^whsec_[A-Za-z0-9+/]{32,}={0,2}$/, {
      error: 'must be whsec_ followed by at least 24 random bytes in base64',
    })
    .optional(),
});
apiSchemas.add(webhookSpecSchema, { id: 'WebhookRequest' });

const webhookShape = {
  webhookId: z.string(),
  url: z.string(),
  events: z.array(events),
  createdBy: z.string(),
  createdAt: timestamp,
};
export const webhookSchema = z.object(webhookShape);
apiSchemas.add(webhookSchema, { id: 'Webhook' });
export const webhookCreatedSchema = z.object({ ...webhookShape, secret: z.string() });
apiSchemas.add(webhookCreatedSchema, {
  id: 'WebhookCreated',
  description: 'The only answer that shows the secret',
});
export const webhookListSchema = z.object({ webhooks: z.array(webhookSchema) });
apiSchemas.add(webhookListSchema, { id: 'WebhookList' });

export const deliverySchema = z.object({
  messageId: z.string(),
  event: events,
  status: z.enum(['PENDING', 'DELIVERED', 'FAILED']),
  attempts: z.number().int(),
  createdAt: timestamp,
  lastAttemptAt: timestamp.optional(),
  lastStatus: z.number().int().optional(),
  lastError: z.string().optional(),
  nextAttemptAt: timestamp.optional(),
});
apiSchemas.add(deliverySchema, {
  id: 'WebhookDelivery',
  description: 'messageId is the webhook-id header of every attempt',
});
export const deliveryListSchema = z.object({ deliveries: z.array(deliverySchema) });
apiSchemas.add(deliveryListSchema, { id: 'WebhookDeliveryList' });

export const webhookIdParamsSchema = z.object({ webhookId: z.string().min(1).max(100) });
