import { createHash } from 'node:crypto';
import { ApiError } from '../errors.ts';
import type { Executor } from '../executors/executor.ts';
import { IdSource } from './id-source.ts';
import type { Task, TaskSource } from './task.ts';
import { TaskEventEmitter, type TaskEventName, type TaskEvents } from './task-events.ts';

export interface TaskQueueOptions {
  executor: Executor;
  /** How many ended tasks are kept (contract: 128). */
  retain: number;
  /** How many queued tasks (not yet started) are accepted before QUEUE_FULL (contract: 1000). */
  maxQueue: number;
  idSource?: IdSource;
  /** Retry-After seconds sent with QUEUE_FULL. */
  retryAfterSeconds?: number;
  /** Where a throwing event listener is reported; default: stderr. It never stops the engine. */
  onListenerError?: (error: unknown, event: TaskEventName) => void;
}

export interface SubmitOptions {
  source: TaskSource;
  idempotencyKey?: string;
  requestId?: string;
  /** Create the task and end it FAILURE at once with this error, without running it. */
  failWith?: string;
}

export interface SubmitResult {
  task: Readonly<Task>;
  /** False when an Idempotency-Key matched an existing task: nothing new was queued. */
  created: boolean;
}

/** Longest stretch of back-to-back task execution before the loop yields to I/O (ms). */
const DRAIN_SLICE_MS = 2;

/** setImmediate as a promise: runs after pending I/O callbacks (HTTP requests, MQTT packets). */
function yieldTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/** sha256 of a script, base64url: what idempotency comparisons keep once the script is dropped. */
export function hashScript(script: string): string {
  return createHash('sha256').update(script).digest('base64url');
}

/**
 * The device's FIFO of scripts: one runs at a time, in arrival order (contract section 1).
 * Memory is bounded by `maxQueue` waiting tasks plus `retain` ended ones; a task's script is
 * dropped when it ends and its report is dropped when it is evicted.
 */
export class TaskQueue extends TaskEventEmitter {
  private readonly executor: Executor;
  private readonly retain: number;
  private readonly maxQueue: number;
  private readonly ids: IdSource;
  private readonly retryAfterSeconds: number;
  /** Every task held (queued, running, retained), in id (= arrival) order. */
  private readonly tasks = new Map<number, Task>();
  private readonly waiting: Task[] = [];
  private waitingHead = 0;
  private readonly ended: number[] = [];
  private endedHead = 0;
  private readonly byIdempotencyKey = new Map<string, number>();
  private running: Task | undefined;
  private pump: Promise<void> | undefined;
  private draining = false;
  private readonly onListenerError: (error: unknown, event: TaskEventName) => void;
  private abort = new AbortController();
  private stopped = true;
  private readonly endWaiters = new Map<number, Set<() => void>>();

  constructor(options: TaskQueueOptions) {
    super();
    this.executor = options.executor;
    this.retain = options.retain;
    this.maxQueue = options.maxQueue;
    this.ids = options.idSource ?? new IdSource();
    this.retryAfterSeconds = options.retryAfterSeconds ?? 1;
    this.onListenerError =
      options.onListenerError ??
      ((error, event) => console.error(`task queue: a ${event} listener threw`, error));
  }

  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    this.abort = new AbortController();
    this.kick();
  }

  /** Aborts the running script (it ends FAILURE) and waits for it; queued tasks stay queued. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.abort.abort(new Error('service stopping'));
    await this.pump;
    for (const waiters of this.endWaiters.values()) for (const wake of waiters) wake();
    this.endWaiters.clear();
  }

  get executorName(): string {
    return this.executor.name;
  }

  get queuedCount(): number {
    return this.waiting.length - this.waitingHead;
  }

  get runningTask(): Readonly<Task> | undefined {
    return this.running;
  }

  get heldCount(): number {
    return this.tasks.size;
  }

  get lastIssuedId(): number {
    return this.ids.lastIssued;
  }

  submit(script: string, options: SubmitOptions): SubmitResult {
    // Only a key (REST Idempotency-Key, MQTT requestId) is ever compared by script: a plain
    // submission does not pay for the hash.
    const keyed = options.idempotencyKey !== undefined || options.requestId !== undefined;
    const scriptHash = keyed ? hashScript(script) : undefined;
    if (options.idempotencyKey !== undefined) {
      const existingId = this.byIdempotencyKey.get(options.idempotencyKey);
      const existing = existingId === undefined ? undefined : this.tasks.get(existingId);
      if (existing) {
        if (existing.scriptHash !== scriptHash) {
          throw new ApiError(
            'IDEMPOTENCY_CONFLICT',
            `Idempotency-Key was first used for task ${existing.id} with a different script`,
            { extra: { id: existing.id } },
          );
        }
        return { task: existing, created: false };
      }
    }
    if (options.failWith === undefined && this.queuedCount >= this.maxQueue) {
      throw new ApiError('QUEUE_FULL', `The queue holds ${this.maxQueue} tasks; try again later`, {
        headers: { 'retry-after': String(this.retryAfterSeconds) },
      });
    }
    const task: Task = {
      id: this.ids.next(),
      script,
      ...(scriptHash !== undefined && { scriptHash }),
      source: options.source,
      state: 'queued',
      queuedAt: new Date(),
      ...(options.requestId !== undefined && { requestId: options.requestId }),
      ...(options.idempotencyKey !== undefined && { idempotencyKey: options.idempotencyKey }),
    };
    this.tasks.set(task.id, task);
    if (task.idempotencyKey !== undefined) this.byIdempotencyKey.set(task.idempotencyKey, task.id);
    this.notify('queued', task);
    if (options.failWith !== undefined) {
      this.end(task, { ok: false, error: options.failWith });
    } else {
      this.waiting.push(task);
      this.kick();
    }
    return { task, created: true };
  }

  get(id: number): Readonly<Task> | undefined {
    return this.tasks.get(id);
  }

  /** Newest first: queued, running and retained tasks. */
  list(): Readonly<Task>[] {
    return [...this.tasks.values()].reverse();
  }

  /**
   * Resolves with the task once it has ended, or after `ms` with its current state; with
   * undefined when it does not exist (or is evicted meanwhile). Used by long polling.
   */
  async waitForEnd(id: number, ms: number, signal?: AbortSignal): Promise<Readonly<Task> | undefined> {
    const task = this.tasks.get(id);
    if (!task || task.state === 'finished' || task.state === 'failed' || ms <= 0) return task;
    await new Promise<void>((resolve) => {
      const waiters = this.endWaiters.get(id) ?? new Set();
      this.endWaiters.set(id, waiters);
      const done = (): void => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', done);
        waiters.delete(done);
        if (waiters.size === 0) this.endWaiters.delete(id);
        resolve();
      };
      const timer = setTimeout(done, ms);
      signal?.addEventListener('abort', done, { once: true });
      waiters.add(done);
    });
    return this.tasks.get(id);
  }

  /**
   * Calls every listener even when one throws: a broken subscriber (metrics, bridge) must not
   * stop the engine or leave a task half-transitioned.
   */
  private notify<K extends TaskEventName>(event: K, ...args: TaskEvents[K]): void {
    for (const listener of this.rawListeners(event) as Array<(...a: TaskEvents[K]) => void>) {
      try {
        listener(...args);
      } catch (error) {
        this.onListenerError(error, event);
      }
    }
  }

  /**
   * Starts the drain loop unless it runs. `draining` is set before the loop starts and cleared
   * in the same turn as its last check, so a submit from an event listener (re-entrant, or in a
   * microtask after the last task ended) neither starts a second loop nor is left waiting.
   */
  private kick(): void {
    if (this.stopped || this.draining) return;
    this.draining = true;
    this.pump = this.drain();
  }

  private async drain(): Promise<void> {
    let sliceStart = performance.now();
    try {
      while (!this.stopped && this.queuedCount > 0) {
        // Instant scripts resolve in microtasks, so a long queue would run to its end in one
        // event-loop turn and starve HTTP and MQTT; give them a turn every DRAIN_SLICE_MS.
        if (performance.now() - sliceStart >= DRAIN_SLICE_MS) {
          await yieldTurn();
          sliceStart = performance.now();
          if (this.stopped || this.queuedCount === 0) break;
        }
        const task = this.waiting[this.waitingHead]!;
        this.waiting[this.waitingHead] = undefined as unknown as Task;
        this.waitingHead += 1;
        if (this.waitingHead > 1024 && this.waitingHead * 2 > this.waiting.length) {
          this.waiting.splice(0, this.waitingHead);
          this.waitingHead = 0;
        }
        task.state = 'running';
        task.startedAt = new Date();
        this.running = task;
        this.notify('started', task);
        let result: Awaited<ReturnType<Executor['execute']>>;
        try {
          result = await this.executor.execute(task.script, this.abort.signal);
        } catch (error) {
          // Executors must not reject; if one does anyway the task fails, the device keeps going.
          result = { ok: false, error: `executor error: ${(error as Error).message}` };
        }
        this.running = undefined;
        this.end(task, result);
      }
    } finally {
      this.draining = false;
    }
  }

  private end(task: Task, result: { ok: true; report: string } | { ok: false; error: string }): void {
    task.finishedAt = new Date();
    task.script = '';
    if (result.ok) {
      task.state = 'finished';
      task.report = result.report;
      this.notify('finished', task);
    } else {
      task.state = 'failed';
      task.error = result.error;
      this.notify('failed', task);
    }
    const waiters = this.endWaiters.get(task.id);
    if (waiters) for (const wake of [...waiters]) wake();
    this.ended.push(task.id);
    while (this.ended.length - this.endedHead > this.retain) {
      const evictedId = this.ended[this.endedHead]!;
      this.endedHead += 1;
      this.evict(evictedId);
    }
    if (this.endedHead > 1024 && this.endedHead * 2 > this.ended.length) {
      this.ended.splice(0, this.endedHead);
      this.endedHead = 0;
    }
  }

  private evict(id: number): void {
    const task = this.tasks.get(id);
    if (!task) return;
    this.tasks.delete(id);
    if (task.idempotencyKey !== undefined && this.byIdempotencyKey.get(task.idempotencyKey) === id) {
      this.byIdempotencyKey.delete(task.idempotencyKey);
    }
    const waiters = this.endWaiters.get(id);
    if (waiters) for (const wake of [...waiters]) wake();
    this.notify('evicted', task);
  }
}
