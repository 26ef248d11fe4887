/**
 * The task queue's events the bridge listens to, from start() to stop(): every transition and
 * eviction goes to the status publisher (docs/mqtt.md, "Task statuses"), every end to the
 * retained-status audit (status-audit.ts).
 */
import type { Task } from '../src/tasks/task.ts';
import type { TaskQueue } from '../src/tasks/task-queue.ts';
import type { BridgeParts } from './bridge-components.ts';

const TASK_EVENTS = ['queued', 'started', 'finished', 'failed'] as const;

export class TaskEventFeed {
  readonly #queue: TaskQueue;
  readonly #onTransition: (task: Readonly<Task>) => void;
  readonly #onEvicted: (task: Readonly<Task>) => void;
  readonly #onEnded: () => void;

  constructor(queue: TaskQueue, parts: Pick<BridgeParts, 'statuses' | 'audit'>) {
    this.#queue = queue;
    this.#onTransition = (task) => parts.statuses.publish(task);
    this.#onEvicted = (task) => parts.statuses.evicted(task);
    this.#onEnded = () => parts.audit?.noteEnded();
  }

  attach(): void {
    for (const event of TASK_EVENTS) this.#queue.on(event, this.#onTransition);
    this.#queue.on('evicted', this.#onEvicted);
    this.#queue.on('finished', this.#onEnded);
    this.#queue.on('failed', this.#onEnded);
  }

  detach(): void {
    for (const event of TASK_EVENTS) this.#queue.off(event, this.#onTransition);
    this.#queue.off('evicted', this.#onEvicted);
    this.#queue.off('finished', this.#onEnded);
    this.#queue.off('failed', this.#onEnded);
  }
}
