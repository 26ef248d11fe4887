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

export class TaskEventEmitter extends EventEmitter<TaskEvents> {}
