import { EventEmitter } from 'node:events';
import type { Task } from './task.ts';

/**
 * Every transition of the task engine, as typed events. The MQTT bridge and the metrics
 * subscribe to these and never reach into the queue's internals.
 */
export interface TaskEvents {
  queued: [task: Readonly<Task>];
  started: [task: Readonly<Task>];
  finished: [task: Readonly<Task>];
  failed: [task: Readonly<Task>];
  /** The task left the retention window; its id now answers TASK_DOES_NOT_EXIST. */
  evicted: [task: Readonly<Task>];
}

export type TaskEventName = keyof TaskEvents;

export type ListenerErrorHandler = (error: unknown, event: TaskEventName) => void;

export class TaskEventEmitter extends EventEmitter<TaskEvents> {
  private readonly onListenerError: ListenerErrorHandler;

  constructor(onListenerError?: ListenerErrorHandler) {
    super();
    this.onListenerError =
      onListenerError ?? ((error, event) => console.error(`task queue: a ${event} listener threw`, error));
  }

  /**
   * Calls every listener even when one throws: a broken subscriber (metrics, bridge) must not
   * stop the engine or leave a task half-transitioned.
   */
  protected notify<K extends TaskEventName>(event: K, ...args: TaskEvents[K]): void {
    // Nobody listening (often `evicted`, or every event without metrics and bridge): no copy of
    // an empty listener list for each task.
    if (this.listenerCount(event) === 0) return;
    for (const listener of this.rawListeners(event) as Array<(...a: TaskEvents[K]) => void>) {
      try {
        listener(...args);
      } catch (error) {
        this.onListenerError(error, event);
      }
    }
  }
}
