/**
 * What the task engine (TaskQueue) is built from and what its calls take and give back: its
 * options, a submission's options and result, a cancel's result.
 */
import type { Executor } from '../executors/executor.ts';
import type { IdSource } from './id-source.ts';
import type { Task, TaskSource } from './task.ts';
import type { ListenerErrorHandler } from './task-events.ts';

export interface TaskQueueOptions {
  executor: Executor;
  /** How many ended tasks are kept (contract: 128). */
  retain: number;
  /** How many queued tasks (not yet started) are accepted before QUEUE_FULL (contract: 1000). */
  maxQueue: number;
  /** Scripts over this many bytes of UTF-8 are refused with SCRIPT_TOO_LARGE (default 1 MiB). */
  maxScriptBytes?: number;
  /** How many submissions' requestIds are remembered (docs/mqtt.md: 1000). */
  requestIdMemory?: number;
  idSource?: IdSource;
  /** When to try again after QUEUE_FULL, in seconds (REST sends it as Retry-After). */
  retryAfterSeconds?: number;
  /** Clock of `notAfter`, ms since the epoch. */
  now?: () => number;
  /** Where a throwing event listener is reported; default: stderr. It never stops the engine. */
  onListenerError?: ListenerErrorHandler;
}

export interface SubmitOptions {
  source: TaskSource;
  /**
   * How refusals name the script, the way the caller knows it: REST "body field 'vendorScript'";
   * default "the script".
   */
  subject?: string;
  /** REST `Idempotency-Key`: the same key and script again is the first task, for as long as it is held. */
  idempotencyKey?: string;
  /** MQTT `requestId`: seen in the last `requestIdMemory` submissions, nothing new runs. */
  requestId?: string;
  /** Epoch ms. Already passed: the task is created and ends FAILURE `EXPIRED` without running. */
  notAfter?: number;
}

/** A cancel by requestId: the task it cancelled, or remembered for a script still to come. */
export type CancelResult =
  | { task: Readonly<Task>; remembered?: undefined }
  | { remembered: true; task?: undefined };

export interface SubmitResult {
  /**
   * The new task, or the one the Idempotency-Key or requestId named first. A requestId's task
   * may have been evicted since: then this is a copy of it without report or error, and
   * `isHeld()` says false.
   */
  task: Readonly<Task>;
  /** False when an Idempotency-Key or a requestId named an earlier task: nothing new was queued. */
  created: boolean;
  /** A repeated requestId came with another script than the first time (still nothing runs). */
  otherScript?: boolean;
}
