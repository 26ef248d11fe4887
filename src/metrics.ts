/**
 * Prometheus metrics of one device (docs/api.md, route 7). They live in the device's
 * own Registry (several devices may share a process: the demo, tests) and follow the task
 * engine through its events only. stop() removes the listeners and the metrics.
 */
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { Task } from './tasks/task.ts';
import type { TaskQueue } from './tasks/task-queue.ts';

export const METRIC_NAMES = {
  tasks: 'regbridge_tasks_total',
  submitted: 'regbridge_tasks_submitted_total',
  queueDepth: 'regbridge_queue_depth',
  running: 'regbridge_tasks_running',
  execution: 'regbridge_task_execution_seconds',
  wait: 'regbridge_task_wait_seconds',
  httpRequests: 'regbridge_http_requests_total',
  httpDuration: 'regbridge_http_request_duration_seconds',
} as const;

/** Seconds; scripts range from a PRINT (sub-ms) to SLEEPs and a 120 s command time-out. */
const TASK_BUCKETS = [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 120, 300];
const HTTP_BUCKETS = [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 30];

export interface DeviceMetrics {
  /** Removes the queue listeners and this device's task metrics from the registry. */
  stop(): void;
}

export interface HttpMetrics {
  /** Counts one answered HTTP request; `route` is the route pattern, never the raw URL. */
  observe(method: string, route: string, statusCode: number, seconds: number): void;
  stop(): void;
}

/** A registry for one device; `deviceId` becomes a `device` label on every series. */
export function createMetricsRegistry(deviceId?: string): Registry {
  const registry = new Registry();
  if (deviceId !== undefined) registry.setDefaultLabels({ device: deviceId });
  return registry;
}

function seconds(from: Date | undefined, to: Date | undefined): number | undefined {
  return from && to ? Math.max(0, (to.getTime() - from.getTime()) / 1000) : undefined;
}

export function createDeviceMetrics(registry: Registry, queue: TaskQueue): DeviceMetrics {
  const registers = [registry];
  const tasks = new Counter({
    name: METRIC_NAMES.tasks,
    help: 'Tasks that ended, by final status (FINISHED or FAILURE)',
    labelNames: ['status'] as const,
    registers,
  });
  const submitted = new Counter({
    name: METRIC_NAMES.submitted,
    help: 'Tasks created (queued), by source (rest or mqtt)',
    labelNames: ['source'] as const,
    registers,
  });
  new Gauge({
    name: METRIC_NAMES.queueDepth,
    help: 'Tasks queued and not yet started',
    registers,
    collect() {
      this.set(queue.queuedCount);
    },
  });
  new Gauge({
    name: METRIC_NAMES.running,
    help: 'Tasks running now (0 or 1: a device runs one script at a time)',
    registers,
    collect() {
      this.set(queue.runningTask ? 1 : 0);
    },
  });
  const execution = new Histogram({
    name: METRIC_NAMES.execution,
    help: 'Execution time of a script, from start to end, by final status',
    labelNames: ['status'] as const,
    buckets: TASK_BUCKETS,
    registers,
  });
  const wait = new Histogram({
    name: METRIC_NAMES.wait,
    help: 'Time a task waited in the queue before it started',
    buckets: TASK_BUCKETS,
    registers,
  });
  // Zero series exist from the start, so rate() works before the first task ends.
  for (const status of ['FINISHED', 'FAILURE']) tasks.inc({ status }, 0);
  for (const source of ['rest', 'mqtt']) submitted.inc({ source }, 0);

  const onQueued = (task: Readonly<Task>): void => submitted.inc({ source: task.source });
  const onStarted = (task: Readonly<Task>): void => {
    const waited = seconds(task.queuedAt, task.startedAt);
    if (waited !== undefined) wait.observe(waited);
  };
  const onEnded = (status: 'FINISHED' | 'FAILURE') => (task: Readonly<Task>) => {
    tasks.inc({ status });
    // A task refused at once (e.g. an expired MQTT submission) never ran: no execution time.
    const ran = seconds(task.startedAt, task.finishedAt);
    if (ran !== undefined) execution.observe({ status }, ran);
  };
  const onFinished = onEnded('FINISHED');
  const onFailed = onEnded('FAILURE');
  queue.on('queued', onQueued);
  queue.on('started', onStarted);
  queue.on('finished', onFinished);
  queue.on('failed', onFailed);

  const names = [
    METRIC_NAMES.tasks,
    METRIC_NAMES.submitted,
    METRIC_NAMES.queueDepth,
    METRIC_NAMES.running,
    METRIC_NAMES.execution,
    METRIC_NAMES.wait,
  ];
  return {
    stop() {
      queue.off('queued', onQueued);
      queue.off('started', onStarted);
      queue.off('finished', onFinished);
      queue.off('failed', onFailed);
      for (const name of names) registry.removeSingleMetric(name);
    },
  };
}

/** HTTP request metrics of the REST API; the app creates them and stops them on close. */
export function createHttpMetrics(registry: Registry): HttpMetrics {
  const registers = [registry];
  const requests = new Counter({
    name: METRIC_NAMES.httpRequests,
    help: 'HTTP requests answered, by method, route pattern and status code',
    labelNames: ['method', 'route', 'status_code'] as const,
    registers,
  });
  const duration = new Histogram({
    name: METRIC_NAMES.httpDuration,
    help: 'Time to answer an HTTP request (long polls included)',
    labelNames: ['method', 'route'] as const,
    buckets: HTTP_BUCKETS,
    registers,
  });
  return {
    observe(method, route, statusCode, elapsed) {
      requests.inc({ method, route, status_code: String(statusCode) });
      duration.observe({ method, route }, elapsed);
    },
    stop() {
      registry.removeSingleMetric(METRIC_NAMES.httpRequests);
      registry.removeSingleMetric(METRIC_NAMES.httpDuration);
    },
  };
}
