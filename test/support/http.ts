/**
 * Shared pieces of the REST API tests: a tiny script executor (PRINT, SLEEP, FAIL, HOLD), an
 * app built on a real TaskQueue with its log captured, and a login helper.
 */
import { Writable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { parseServeConfig, type ServeConfigInput } from '../../cli/serve-config.ts';
import { type AppInternals, buildApp } from '../../src/app.ts';
import type { ExecutionResult, Executor } from '../../src/executors/executor.ts';
import type { MqttHealth } from '../../src/health.ts';
import { createLogger } from '../../src/logger.ts';
import { createMetricsRegistry } from '../../src/metrics.ts';
import { TaskQueue } from '../../src/tasks/task-queue.ts';

/**
 * Runs `PRINT x`, `SLEEP ms`, `FAIL msg` like the simulator, plus `HOLD`: waits until the test
 * calls release(), so a task can be kept running for exactly as long as a test needs.
 */
export class TestExecutor implements Executor {
  readonly name = 'test';
  private holds: Array<() => void> = [];
  held = 0;

  release(): void {
    const waiting = this.holds;
    this.holds = [];
    for (const wake of waiting) wake();
  }

  async execute(script: string, signal: AbortSignal): Promise<ExecutionResult> {
    const lines: string[] = [];
    for (const raw of script.split(/\r?\n/)) {
      const line = raw.trim();
      if (line === '' || line.startsWith('#')) continue;
      const [keyword = '', ...rest] = line.split(' ');
      const argument = rest.join(' ');
      if (signal.aborted) return { ok: false, error: 'aborted' };
      switch (keyword.toUpperCase()) {
        case 'PRINT':
          lines.push(argument);
          break;
        case 'FAIL':
          return { ok: false, error: argument };
        case 'SLEEP':
          await new Promise<void>((resolve) => {
            const timer = setTimeout(resolve, Number(argument));
            signal.addEventListener('abort', () => {
              clearTimeout(timer);
              resolve();
            });
          });
          break;
        case 'HOLD':
          this.held += 1;
          await new Promise<void>((resolve) => {
            this.holds.push(resolve);
            signal.addEventListener('abort', () => resolve());
          });
          break;
        default:
          return { ok: false, error: `unknown command ${keyword}` };
      }
    }
    return { ok: true, report: lines.join('\n') };
  }
}

export const USER = { userName: 'alice', password: 'correct horse battery staple' };

export interface TestApp {
  app: FastifyInstance;
  queue: TaskQueue;
  executor: TestExecutor;
  /** Every log line the app wrote. */
  logs: string[];
  close(): Promise<void>;
}

export async function startTestApp(
  input: Partial<ServeConfigInput> = {},
  internals: AppInternals = {},
  options: { startQueue?: boolean; mqttHealth?: () => MqttHealth } = {},
): Promise<TestApp> {
  const config = parseServeConfig({
    deviceId: 'till-1',
    mqtt: false,
    users: [`${USER.userName}:${USER.password}`],
    ...input,
  });
  const executor = new TestExecutor();
  const queue = new TaskQueue({
    executor,
    retain: config.retain,
    maxQueue: config.maxQueue,
    maxScriptBytes: config.maxScriptBytes,
  });
  const logs: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      logs.push(...chunk.toString('utf8').split('\n').filter(Boolean));
      done();
    },
  });
  const logger = createLogger({ level: 'trace' }, sink);
  const app = await buildApp(
    {
      config,
      queue,
      logger,
      registry: createMetricsRegistry(config.deviceId),
      ...(options.mqttHealth && { mqttHealth: options.mqttHealth }),
    },
    internals,
  );
  if (options.startQueue ?? true) queue.start();
  return {
    app,
    queue,
    executor,
    logs,
    async close() {
      executor.release();
      await app.close();
      await queue.stop();
    },
  };
}

export async function login(app: FastifyInstance, credentials = USER): Promise<string> {
  const response = await app.inject({ method: 'POST', url: '/api/authenticate', payload: credentials });
  if (response.statusCode !== 200) throw new Error(`login failed: ${response.body}`);
  return (response.json() as { token: string }).token;
}

export function bearer(token: string): Record<string, string> {
  return { authorization: `Bearer ${token}` };
}
