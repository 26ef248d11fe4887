import { coded, DomainError, taskDoesNotExist } from '../errors.ts';
import type { Executor } from '../executors/executor.ts';
import { EndWaiters } from './end-waiters.ts';
import { Fifo } from './fifo.ts';
import { IdSource } from './id-source.ts';
import { Idempotency } from './idempotency.ts';
import type { CancelResult, SubmitOptions, SubmitResult, TaskQueueOptions } from './queue-types.ts';
import { DEFAULT_REQUEST_ID_MEMORY } from './request-ids.ts';
import { checkScript, DEFAULT_MAX_SCRIPT_BYTES, hashScript } from './script-text.ts';
import { statusOf, type Task } from './task.ts';
import { TaskEventEmitter } from './task-events.ts';

export type { CancelResult, SubmitOptions, SubmitResult, TaskQueueOptions };

function taskEnded(task: Readonly<Task>): DomainError {
  const status = statusOf(task.state);
  return new DomainError('TASK_ENDED', `Task ${task.id} has already ended (${status})`, {
    details: { id: task.id, status },
  });
}

/** Longest stretch of back-to-back task execution before the loop yields to I/O (ms). */
const DRAIN_SLICE_MS = 2;

/** setImmediate as a promise: runs after pending I/O callbacks (HTTP requests, MQTT packets). */
function yieldTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/** The Retry-After of a full queue (QUEUE_FULL), in seconds. */
export const DEFAULT_RETRY_AFTER_SECONDS = 1;

/**
 * The device's FIFO of scripts, one at a time (docs/api.md), bounded by `maxQueue` waiting and
 * `retain` ended tasks. `submit()` is the one admission path of REST and MQTT alike; refusals are
 * DomainErrors with registered codes.
 */
export class TaskQueue extends TaskEventEmitter {
  private readonly executor: Executor;
  private readonly retain: number;
  private readonly maxQueue: number;
  readonly maxScriptBytes: number;
  private readonly ids: IdSource;
  private readonly retryAfterSeconds: number;
  private readonly now: () => number;
  private readonly idempotency: Idempotency;
  /** Every task held (queued, running, retained), in id (= arrival) order. */
  private readonly tasks = new Map<number, Task>();
  private readonly waiting = new Fifo<Task>();
  /** Ended task ids, oldest first: beyond `retain` they are evicted. */
  private readonly ended = new Fifo<number>();
  private running: Task | undefined;
  private pump: Promise<void> | undefined;
  private draining = false;
  private abort = new AbortController();
  private stopped = true;
  private readonly endWaiters = new EndWaiters();

  constructor(options: TaskQueueOptions) {
    super(options.onListenerError);
    this.executor = options.executor;
    this.retain = options.retain;
    this.maxQueue = options.maxQueue;
    this.maxScriptBytes = options.maxScriptBytes ?? DEFAULT_MAX_SCRIPT_BYTES;
    this.idempotency = new Idempotency(options.requestIdMemory ?? DEFAULT_REQUEST_ID_MEMORY);
    this.ids = options.idSource ?? new IdSource();
    this.retryAfterSeconds = options.retryAfterSeconds ?? DEFAULT_RETRY_AFTER_SECONDS;
    this.now = options.now ?? Date.now;
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
    this.endWaiters.wakeAll();
  }

  get executorName(): string {
    return this.executor.name;
  }

  get queuedCount(): number {
    return this.waiting.size;
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

  /** Admits a script or refuses it with a DomainError (see the class comment). */
  submit(script: string, options: SubmitOptions): SubmitResult {
    const { idempotencyKey, requestId, notAfter } = options;
    checkScript(script, this.maxScriptBytes, options.subject ?? 'the script');
    // Only a key (REST Idempotency-Key, MQTT requestId) is ever compared by script: a plain
    // submission does not pay for the hash.
    const keyed = idempotencyKey !== undefined || requestId !== undefined;
    const scriptHash = keyed ? hashScript(script) : undefined;
    const replay = this.idempotency.replay(options, scriptHash);
    if (replay) return { ...replay, created: false };
    const expired = notAfter !== undefined && notAfter < this.now();
    // An expired task never waits, so it is accepted even when the queue is full.
    if (!expired && this.queuedCount >= this.maxQueue) {
      throw new DomainError('QUEUE_FULL', `The queue holds ${this.maxQueue} tasks; try again later`, {
        retryAfterSeconds: this.retryAfterSeconds,
      });
    }
    const task: Task = {
      id: this.ids.next(),
      script,
      ...(scriptHash !== undefined && { scriptHash }),
      source: options.source,
      state: 'queued',
      queuedAt: new Date(),
      ...(requestId !== undefined && { requestId }),
      ...(idempotencyKey !== undefined && { idempotencyKey }),
    };
    this.tasks.set(task.id, task);
    this.idempotency.created(task);
    this.notify('queued', task);
    if (expired) {
      const when = new Date(notAfter).toISOString();
      this.end(task, {
        ok: false,
        error: coded('EXPIRED', `notAfter ${when} passed before the device received the script`),
      });
    } else {
      this.waiting.push(task);
      this.kick();
    }
    return { task, created: true };
  }

  /** True while the queue holds this task (queued, running or retained), not a copy of it. */
  isHeld(task: Readonly<Task>): boolean {
    return this.tasks.get(task.id) === task;
  }

  /**
   * docs/api.md: a queued task ends FAILURE with `CANCELLED: <reason>`, mirrored like
   * any end; a running script is never cut (TASK_RUNNING: a half-printed receipt is worse than a
   * late one); an ended task is TASK_ENDED, an unknown one TASK_DOES_NOT_EXIST.
   */
  cancel(id: number, reason: string): Readonly<Task> {
    const task = this.tasks.get(id);
    if (!task) throw taskDoesNotExist(id);
    if (task.state === 'running') {
      throw new DomainError('TASK_RUNNING', `Task ${id} is running; a running script is never cut`);
    }
    if (task.state !== 'queued') throw taskEnded(task);
    this.waiting.remove(task);
    this.end(task, { ok: false, error: coded('CANCELLED', reason) });
    return task;
  }

  /**
   * Cancels the task a requestId names; an unseen requestId is remembered, so its script, arriving
   * later, is refused CANCELLED.
   */
  cancelRequest(requestId: string, reason: string): CancelResult {
    const record = this.idempotency.requestRecord(requestId);
    if (record === undefined) this.idempotency.cancelUnseen(requestId, new Date(this.now()));
    if (record === undefined || record.kind === 'cancelled') return { remembered: true };
    // An evicted task's copy: it had ended.
    if (!this.isHeld(record.task)) throw taskEnded(record.task);
    return { task: this.cancel(record.task.id, reason) };
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
    await this.endWaiters.wait(id, ms, signal);
    return this.tasks.get(id);
  }

  /**
   * Starts the drain loop unless it runs; `draining` is cleared in the same turn as the last check,
   * so a re-entrant submit neither starts a second loop nor is left waiting.
   */
  private kick(): void {
    if (this.stopped || this.draining) return;
    this.draining = true;
    this.pump = this.drain();
  }

  private async drain(): Promise<void> {
    let sliceStart = performance.now();
    let first = true;
    try {
      while (!this.stopped && this.queuedCount > 0) {
        // Instant scripts resolve in microtasks, so a long queue would run to its end in one
        // event-loop turn and starve HTTP and MQTT; give them a turn every DRAIN_SLICE_MS.
        if (performance.now() - sliceStart >= DRAIN_SLICE_MS) {
          await yieldTurn();
          sliceStart = performance.now();
          if (this.stopped || this.queuedCount === 0) break;
        }
        const task = this.waiting.shift()!;
        task.state = 'running';
        task.startedAt = new Date();
        this.running = task;
        this.notify('started', task);
        if (first) {
          // The first task starts here (running, `started`), but its script runs in the event
          // loop's check phase (setImmediate): the requests read in the same I/O phase are all
          // answered first, then their scripts run back to back
          // (docs/decisions/scripts-run-after-io.md).
          first = false;
          await yieldTurn();
          sliceStart = performance.now();
        }
        let result: Awaited<ReturnType<Executor['execute']>>;
        try {
          const signal = this.abort.signal;
          // Stopped during that turn: the script never started, as `stop()` would have cut it.
          result = signal.aborted
            ? { ok: false, error: `aborted before it ran (${(signal.reason as Error).message})` }
            : await this.executor.execute(task.script, signal);
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
    this.endWaiters.wake(task.id);
    this.ended.push(task.id);
    while (this.ended.size > this.retain) this.evict(this.ended.shift()!);
  }

  private evict(id: number): void {
    const task = this.tasks.get(id);
    if (!task) return;
    this.tasks.delete(id);
    this.idempotency.evicted(task);
    this.endWaiters.wake(id);
    this.notify('evicted', task);
  }
}
