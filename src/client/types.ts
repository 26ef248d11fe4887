/**
 * Types of the TypeScript client that mirrors the device vendor's Java client class
 * (docs/api.md). The wire bodies are validated with zod, so a misbehaving server gives a
 * RestException, never an object of the wrong shape.
 */
import type { Dispatcher } from 'undici';
import * as z from 'zod';

/**
 * The vendor's status enum: the three wire statuses plus TASK_DOES_NOT_EXIST, which the device
 * answers with 404 (unknown or evicted id) and the client turns into a status rather than an error.
 */
export type TaskStatusName = 'RUNNING' | 'FINISHED' | 'FAILURE' | 'TASK_DOES_NOT_EXIST';

/**
 * What `getTaskStatus` resolves to: the task body of docs/api.md, or `{id, status:
 * 'TASK_DOES_NOT_EXIST'}`. `status` is typed open (`string`) on purpose: a status this client does
 * not know is passed through, and `waitForTask` reports it as an InternalErrorException.
 */
export interface TasksResponse {
  id: number;
  status: TaskStatusName | (string & Record<never, never>);
  /** Present exactly when FINISHED; may be ''. */
  report?: string;
  /** Present exactly when FAILURE. */
  error?: string;
  /** ISO-8601; absent only for TASK_DOES_NOT_EXIST. */
  queuedAt?: string;
  startedAt?: string;
  finishedAt?: string;
}

export interface DeviceClientOptions {
  /** Talk https instead of http (default false). */
  https?: boolean;
  /** PEM CA certificate(s) to trust for https besides the system's (a store's private CA). */
  ca?: string | Buffer;
  /** Path prefix in front of `/api/...`, e.g. behind a reverse proxy (default ''). */
  basePath?: string;
  /**
   * Time allowed for one HTTP exchange, in ms (default 30 000). A long poll or a synchronous
   * fm-script call gets its server-side wait added on top.
   */
  requestTimeoutMs?: number;
  /** An undici dispatcher (Agent, Pool, MockAgent...) to use instead of the client's own Pool. Not closed by close(). */
  dispatcher?: Dispatcher;
  /** Connections of the client's own Pool (default 4). */
  connections?: number;
  /** The method of the authenticate call (default 'GET' with a JSON body, as the vendor's client does). */
  authMethod?: 'GET' | 'POST';
}

export interface WaitForTaskOptions {
  /** Pause between two polls that found the task still RUNNING, in ms (default 250). */
  intervalMs?: number;
  /** Give up after this long, in ms, with a TimeoutException (default 60 000). */
  timeoutMs?: number;
  /**
   * Long-poll with `GET /api/tasks/{id}?waitMs=` (default true): the device answers as soon as
   * the task ends, so the end is seen at once without busy polling. The wait of one poll is
   * capped at 30 000 ms (the contract's maximum) and at the time left.
   */
  longPoll?: boolean;
}

export interface ProcessFmScriptOptions {
  /** Overall time allowed for the script to end, in ms (default 60 000). */
  timeoutMs?: number;
  /** Pause between polls when the device answered 202 (see WaitForTaskOptions). */
  intervalMs?: number;
  /**
   * How long the device is asked to hold the POST (`?timeoutMs=`) before answering 202; the rest
   * of `timeoutMs` is spent long-polling. Default and maximum: min(timeoutMs, 60 000).
   */
  serverWaitMs?: number;
  /** Sent as `Idempotency-Key`: a retry with the same key and script returns the first task. */
  idempotencyKey?: string;
}

export interface GetTaskStatusOptions {
  /** Long poll: the device holds the answer up to this many ms (0..30 000) until the task ends. */
  waitMs?: number;
}

/** The longest `waitMs` the contract allows on `GET /api/tasks/{id}`. */
export const MAX_WAIT_MS = 30_000;

export const taskBodySchema = z.object({
  id: z.number().int().positive(),
  status: z.string().min(1),
  report: z.string().optional(),
  error: z.string().optional(),
  queuedAt: z.string().optional(),
  startedAt: z.string().optional(),
  finishedAt: z.string().optional(),
});

export const acceptedSchema = z.object({ id: z.number().int().positive(), status: z.string() });

export const tokenSchema = z.object({
  token: z.string().min(1),
  tokenType: z.string().optional(),
  expiresIn: z.number().optional(),
});

export const taskListSchema = z.object({ tasks: z.array(taskBodySchema) });

/** The contract's error body; every field optional so a foreign 5xx page still parses into something. */
export const errorBodySchema = z
  .object({
    statusCode: z.number().optional(),
    error: z.string().optional(),
    code: z.string().optional(),
    message: z.string().optional(),
  })
  .loose();
