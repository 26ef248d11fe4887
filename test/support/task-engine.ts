/**
 * The task engine driven by hand: an executor whose scripts end when the test says so, one that
 * ends them at once, queues that the suite stops after each test, and an event recorder.
 */
import type { ExecutionResult, Executor } from '../../src/executors/executor.ts';
import type { Task } from '../../src/tasks/task.ts';
import type { TaskEventName } from '../../src/tasks/task-events.ts';
import { TaskQueue, type TaskQueueOptions } from '../../src/tasks/task-queue.ts';
import { until } from './waits.ts';

interface Call {
  script: string;
  signal: AbortSignal;
  end(result: ExecutionResult): void;
}

/** Each script runs until the test ends it; counts how many run at once. */
export class ControlledExecutor implements Executor {
  readonly name = 'controlled';
  readonly calls: Call[] = [];
  running = 0;
  maxRunning = 0;

  execute(script: string, signal: AbortSignal): Promise<ExecutionResult> {
    this.running += 1;
    this.maxRunning = Math.max(this.maxRunning, this.running);
    return new Promise((resolve) => {
      let ended = false;
      const end = (result: ExecutionResult): void => {
        if (ended) return;
        ended = true;
        this.running -= 1;
        resolve(result);
      };
      // Like a real executor: aborting ends the script promptly with a failure.
      signal.addEventListener('abort', () => end({ ok: false, error: 'aborted' }), { once: true });
      this.calls.push({ script, signal, end });
    });
  }

  /** Ends call `index` (waiting for it to start first). */
  async finish(
    index: number,
    result: ExecutionResult = { ok: true, report: `report ${index}` },
  ): Promise<void> {
    await until(() => this.calls.length > index);
    this.calls[index]!.end(result);
  }
}

/** Ends every script at once, with a report of `reportBytes` bytes. */
export class InstantExecutor implements Executor {
  readonly name = 'instant';
  constructor(private readonly reportBytes = 10) {}
  async execute(script: string): Promise<ExecutionResult> {
    return { ok: true, report: `${script}:`.padEnd(this.reportBytes, 'x') };
  }
}

/** Every queue makeQueue() started: stop them in afterEach. */
export const queues: TaskQueue[] = [];

export function makeQueue(executor: Executor, options: Partial<TaskQueueOptions> = {}): TaskQueue {
  const queue = new TaskQueue({ executor, retain: 128, maxQueue: 1000, ...options });
  queues.push(queue);
  queue.start();
  return queue;
}

export function recordEvents(queue: TaskQueue): string[] {
  const events: string[] = [];
  for (const name of ['queued', 'started', 'finished', 'failed', 'evicted'] as TaskEventName[]) {
    queue.on(name, (task: Readonly<Task>) => events.push(`${name} ${task.script || task.id}`));
  }
  return events;
}
