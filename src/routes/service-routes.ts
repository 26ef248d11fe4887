/** Routes 6 and 7 of docs/api.md: /health and /metrics, both without auth. */
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { Registry } from 'prom-client';
import * as z from 'zod';
import type { DeviceCoreConfig } from '../config.ts';
import { healthStatus, type MqttHealth } from '../health.ts';
import type { TaskQueue } from '../tasks/task-queue.ts';
import { VERSION } from '../version.ts';
import { errorResponses, healthSchema, jsonResponse } from './schemas.ts';

/** `--health-mqtt-grace`'s default: a broker restart is not an outage, minutes are. */
export const DEFAULT_HEALTH_MQTT_GRACE_MS = 60_000;

export interface ServiceRoutesOptions {
  config: DeviceCoreConfig;
  queue: TaskQueue;
  registry: Registry;
  mqttHealth: () => MqttHealth;
  startedAt: number;
}

export const serviceRoutes: FastifyPluginAsyncZod<ServiceRoutesOptions> = async (
  app,
  { config, queue, registry, mqttHealth, startedAt },
) => {
  app.get('/health', {
    schema: {
      tags: ['service'],
      summary: 'Liveness, queue depth and MQTT connection state; 503 degraded while cut off from the broker',
      response: {
        200: jsonResponse('The service answers', healthSchema),
        503: jsonResponse(
          'Degraded: the MQTT broker has been out of reach for --health-mqtt-grace',
          healthSchema,
        ),
        500: errorResponses.internal,
      },
    },
    handler: async (_request, reply) => {
      const queued = queue.queuedCount;
      const running = queue.runningTask ? 1 : 0;
      const mqtt = mqttHealth();
      const status = healthStatus(mqtt, config.healthMqttGrace ?? DEFAULT_HEALTH_MQTT_GRACE_MS);
      if (status === 'degraded') reply.code(503);
      return {
        status,
        deviceId: config.deviceId,
        installation: config.installation,
        version: VERSION,
        executor: queue.executorName,
        auth: config.auth,
        uptimeSeconds: Math.floor((Date.now() - startedAt) / 1000),
        queue: {
          queued,
          running,
          retained: Math.max(0, queue.heldCount - queued - running),
          maxQueue: config.maxQueue,
          retain: config.retain,
          lastTaskId: queue.lastIssuedId,
        },
        mqtt,
      };
    },
  });

  addMetricsRoute(app, registry);
};

/** `GET /metrics` (route 7): `registry` in Prometheus text format; the controller service's too. */
export function addMetricsRoute(app: Parameters<FastifyPluginAsyncZod>[0], registry: Registry): void {
  app.get('/metrics', {
    schema: {
      tags: ['service'],
      summary: 'Prometheus text format',
      response: {
        200: {
          description: 'Prometheus exposition format 0.0.4',
          content: { 'text/plain': { schema: z.string() } },
        },
        500: errorResponses.internal,
      },
    },
    handler: async (_request, reply) => reply.type(registry.contentType).send(await registry.metrics()),
  });
}
