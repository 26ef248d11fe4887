/** Device metrics (docs/api.md, route 7): counted from queue events, one registry per device. */
import { describe, expect, it } from 'vitest';
import { parseServeConfig } from '../../cli/serve-config.ts';
import { buildApp } from '../../src/app.ts';
import { createDeviceMetrics, createMetricsRegistry, METRIC_NAMES } from '../../src/metrics.ts';
import { TaskQueue } from '../../src/tasks/task-queue.ts';
import { TestExecutor } from '../support/http.ts';
import { silent } from '../support/loggers.ts';

function newQueue(): TaskQueue {
  return new TaskQueue({ executor: new TestExecutor(), retain: 10, maxQueue: 10 });
}

async function ended(queue: TaskQueue, id: number): Promise<void> {
  await queue.waitForEnd(id, 5000);
}

describe('createDeviceMetrics', () => {
  it('counts tasks by final status and source, and observes execution and wait times', async () => {
    const queue = newQueue();
    const registry = createMetricsRegistry('till-9');
    const metrics = createDeviceMetrics(registry, queue);
    queue.start();
    try {
      await ended(queue, queue.submit('PRINT a', { source: 'rest' }).task.id);
      await ended(queue, queue.submit('FAIL b', { source: 'mqtt' }).task.id);
      queue.submit('PRINT c', { source: 'mqtt', notAfter: 0 });
      const text = await registry.metrics();
      expect(text).toContain('regbridge_tasks_total{status="FINISHED",device="till-9"} 1');
      expect(text).toContain('regbridge_tasks_total{status="FAILURE",device="till-9"} 2');
      expect(text).toContain('regbridge_tasks_submitted_total{source="rest",device="till-9"} 1');
      expect(text).toContain('regbridge_tasks_submitted_total{source="mqtt",device="till-9"} 2');
      // The refused task never ran: only two executions and two waits were observed.
      expect(text).toContain('regbridge_task_execution_seconds_count{device="till-9",status="FINISHED"} 1');
      expect(text).toContain('regbridge_task_execution_seconds_count{device="till-9",status="FAILURE"} 1');
      expect(text).toContain('regbridge_task_wait_seconds_count{device="till-9"} 2');
    } finally {
      metrics.stop();
      await queue.stop();
    }
  });

  it('reads queue depth and the running task at scrape time', async () => {
    const executor = new TestExecutor();
    const queue = new TaskQueue({ executor, retain: 10, maxQueue: 10 });
    const registry = createMetricsRegistry();
    const metrics = createDeviceMetrics(registry, queue);
    queue.start();
    try {
      queue.submit('HOLD', { source: 'rest' });
      queue.submit('PRINT x', { source: 'rest' });
      queue.submit('PRINT y', { source: 'rest' });
      const text = await registry.metrics();
      expect(text).toContain('regbridge_queue_depth 2');
      expect(text).toContain('regbridge_tasks_running 1');
    } finally {
      executor.release();
      metrics.stop();
      await queue.stop();
    }
  });

  it('stop() removes its listeners and metrics, so they can be created again', () => {
    const queue = newQueue();
    const registry = createMetricsRegistry();
    const before = queue.listenerCount('finished');
    const metrics = createDeviceMetrics(registry, queue);
    expect(queue.listenerCount('finished')).toBe(before + 1);
    metrics.stop();
    expect(queue.listenerCount('finished')).toBe(before);
    expect(registry.getSingleMetric(METRIC_NAMES.tasks)).toBeUndefined();
    createDeviceMetrics(registry, queue).stop();
  });

  it('devices in one process keep separate registries', async () => {
    const queue = newQueue();
    const a = createMetricsRegistry('a');
    const b = createMetricsRegistry('b');
    const stopA = createDeviceMetrics(a, queue);
    const stopB = createDeviceMetrics(b, newQueue());
    queue.start();
    try {
      await ended(queue, queue.submit('PRINT x', { source: 'rest' }).task.id);
      expect(await a.metrics()).toContain('regbridge_tasks_total{status="FINISHED",device="a"} 1');
      expect(await b.metrics()).toContain('regbridge_tasks_total{status="FINISHED",device="b"} 0');
    } finally {
      stopA.stop();
      stopB.stop();
      await queue.stop();
    }
  });
});

describe('buildApp and metrics', () => {
  const config = parseServeConfig({ deviceId: 'till-1', mqtt: false, auth: 'off' });
  const logger = silent;

  it('creates the device and HTTP metrics and removes them (and their listeners) on close', async () => {
    const queue = newQueue();
    const registry = createMetricsRegistry();
    const app = await buildApp({ config, queue, logger, registry });
    expect(queue.listenerCount('finished')).toBe(1);
    expect(registry.getSingleMetric(METRIC_NAMES.httpRequests)).toBeDefined();
    await app.close();
    expect(queue.listenerCount('finished')).toBe(0);
    expect(registry.getMetricsAsArray()).toHaveLength(0);
  });

  it('reuses device metrics someone already created on the registry', async () => {
    const queue = newQueue();
    const registry = createMetricsRegistry();
    const metrics = createDeviceMetrics(registry, queue);
    const app = await buildApp({ config, queue, logger, registry });
    try {
      expect(queue.listenerCount('finished')).toBe(1);
      const response = await app.inject({ url: '/metrics' });
      expect(response.body).toContain('regbridge_tasks_total');
    } finally {
      await app.close();
      metrics.stop();
    }
  });

  it('labels requests with the route pattern, and unmatched ones "unmatched"', async () => {
    const queue = newQueue();
    const registry = createMetricsRegistry();
    const app = await buildApp({ config, queue, logger, registry });
    try {
      expect((await app.inject({ url: '/api/tasks/12345' })).statusCode).toBe(404);
      expect((await app.inject({ url: '/no/such/route?x=1' })).statusCode).toBe(404);
      const text = await registry.metrics();
      expect(text).toContain(
        'regbridge_http_requests_total{method="GET",route="/api/tasks/:id",status_code="404"} 1',
      );
      expect(text).toContain(
        'regbridge_http_requests_total{method="GET",route="unmatched",status_code="404"} 1',
      );
      expect(text).toContain(
        'regbridge_http_request_duration_seconds_count{method="GET",route="unmatched"} 1',
      );
      expect(text).not.toContain('/no/such/route');
    } finally {
      await app.close();
    }
  });
});
