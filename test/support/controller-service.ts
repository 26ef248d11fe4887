/**
 * The controller service for tests: started in process (startControllerService) against a real
 * broker, with HTTP helpers over app.inject and a real event-stream reader over HTTP.
 */
import type { FastifyInstance } from 'fastify';
import {
  type ControllerServiceSettings,
  type RunningControllerService,
  startControllerService,
} from '../../cli/controller-service.ts';
import type { Job } from '../../controller/job-types.ts';
import type { PacingClock } from '../../controller/rollout.ts';
import type { Logger } from '../../src/logger.ts';
import type { RunningBroker } from './brokers.ts';
import { silent } from './loggers.ts';
import { until } from './waits.ts';

export const ADMIN = { name: 'admin', password: 'admin-pw' };

export async function startService(
  broker: RunningBroker,
  ns: string,
  options: {
    db?: string;
    clock?: PacingClock;
    settings?: Partial<ControllerServiceSettings>;
    logger?: Logger;
  } = {},
): Promise<RunningControllerService> {
  return startControllerService(
    {
      port: 0,
      host: '127.0.0.1',
      mqttUrl: broker.controllerUrl,
      mqttUser: { name: broker.controllerCreds.username!, password: broker.controllerCreds.password! },
      brokerHost: '127.0.0.1',
      brokerUsers: [],
      ns,
      users: [ADMIN],
      db: options.db ?? ':memory:',
      tokenTtl: 3600,
      settleMs: 100,
      ...options.settings,
    },
    { logger: options.logger ?? silent, ...(options.clock && { clock: options.clock }) },
  );
}

export interface Answer {
  statusCode: number;
  headers: Record<string, unknown>;
  // biome-ignore lint/suspicious/noExplicitAny: JSON bodies, checked by the tests' own expectations
  body: any;
}

export async function login(app: FastifyInstance, user = ADMIN): Promise<string> {
  const response = await app.inject({
    method: 'POST',
    url: '/api/authenticate',
    payload: { userName: user.name, password: user.password },
  });
  if (response.statusCode !== 200) throw new Error(`login failed: ${response.body}`);
  return (response.json() as { token: string }).token;
}

export async function api(
  app: FastifyInstance,
  token: string | undefined,
  method: 'GET' | 'POST' | 'PATCH' | 'DELETE',
  url: string,
  payload?: unknown,
  headers: Record<string, string> = {},
): Promise<Answer> {
  const response = await app.inject({
    method,
    url,
    headers: { ...(token !== undefined && { authorization: `Bearer ${token}` }), ...headers },
    ...(payload !== undefined && { payload: payload as Record<string, unknown> }),
  });
  const type = String(response.headers['content-type'] ?? '');
  return {
    statusCode: response.statusCode,
    headers: response.headers,
    body: type.includes('json') ? response.json() : response.body,
  };
}

/** Resolves with the job once `check` holds, looking again at every change the engine announces. */
export async function waitForJob(
  service: RunningControllerService,
  token: string,
  jobId: string,
  check: (job: Job) => boolean,
  what: string,
  timeoutMs = 15_000,
): Promise<Job> {
  const read = async (): Promise<Job> =>
    (await api(service.app, token, 'GET', `/api/jobs/${jobId}`)).body as Job;
  let job = await read();
  if (check(job)) return job;
  return new Promise<Job>((resolve, reject) => {
    let reading = false;
    let again = false;
    const onChange = (summary: { jobId: string }): void => {
      if (summary.jobId !== jobId) return;
      if (reading) {
        again = true;
        return;
      }
      reading = true;
      void read().then((latest) => {
        job = latest;
        reading = false;
        if (check(latest)) finish();
        else if (again) {
          again = false;
          onChange(summary);
        }
      }, reject);
    };
    const timer = setTimeout(() => {
      service.engine.off('job', onChange);
      reject(new Error(`timed out waiting for ${what}: ${JSON.stringify(job)}`));
    }, timeoutMs);
    const finish = (): void => {
      clearTimeout(timer);
      service.engine.off('job', onChange);
      resolve(job);
    };
    service.engine.on('job', onChange);
    // A change between the first read and subscribing: look once more.
    onChange({ jobId });
  });
}

export const ended = (job: Job): boolean => job.endedAt !== undefined;

/** A request to a controller service in another process, over HTTP; JSON bodies both ways. */
export async function callAt(
  port: number,
  token: string | undefined,
  method: string,
  path: string,
  body?: unknown,
) {
  const response = await fetch(`http://127.0.0.1:${port}${path}`, {
    method,
    headers: {
      ...(token !== undefined && { authorization: `Bearer ${token}` }),
      ...(body !== undefined && { 'content-type': 'application/json' }),
    },
    ...(body !== undefined && { body: JSON.stringify(body) }),
  });
  // biome-ignore lint/suspicious/noExplicitAny: JSON bodies, checked by the tests' expectations
  return { status: response.status, body: (await response.json()) as any };
}

/** Reads the job over HTTP (a service in another process: no event to hear) until `check` holds. */
export async function pollJobAt(
  port: number,
  token: string,
  jobId: string,
  check: (job: Job) => boolean,
): Promise<Job> {
  let job: Job | undefined;
  const read = async (): Promise<boolean> => {
    job = (await callAt(port, token, 'GET', `/api/jobs/${jobId}`)).body as Job;
    return check(job);
  };
  await until(read, `job ${jobId}`, 20_000, 10).catch((error: Error) => {
    throw new Error(`${error.message}; last read: ${JSON.stringify(job)}`);
  });
  return job!;
}
