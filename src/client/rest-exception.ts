/**
 * The client's errors, named after the vendor's Java exceptions. Every one extends RestException,
 * so `catch (e) { if (e instanceof RestException) ... }` catches everything the client throws.
 */

/** Codes the client itself assigns when no server error body names one. */
export type ClientErrorCode =
  | 'CONNECTION_ERROR'
  | 'TIMEOUT'
  | 'INVALID_RESPONSE'
  | 'HTTP_ERROR'
  | 'TASK_FAILURE'
  | 'UNEXPECTED_STATUS';

export interface RestExceptionOptions {
  /** HTTP status of the answer; 0 when there was no answer (network error, time-out, task outcome). */
  statusCode?: number;
  /** The server's `code` (e.g. INVALID_CREDENTIALS), or a ClientErrorCode. */
  code?: string;
  /** The server's `message`, when it sent one. */
  serverMessage?: string;
  /** The parsed answer body (JSON), when there was one. */
  body?: unknown;
  /** Seconds from a Retry-After header (429 TOO_MANY_ATTEMPTS, 503 QUEUE_FULL). */
  retryAfterSeconds?: number;
  cause?: unknown;
}

export class RestException extends Error {
  readonly statusCode: number;
  readonly code: string;
  readonly serverMessage: string | undefined;
  readonly body: unknown;
  readonly retryAfterSeconds: number | undefined;

  constructor(message: string, options: RestExceptionOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'RestException';
    this.statusCode = options.statusCode ?? 0;
    this.code = options.code ?? 'HTTP_ERROR';
    this.serverMessage = options.serverMessage;
    this.body = options.body;
    this.retryAfterSeconds = options.retryAfterSeconds;
  }
}

/** No HTTP answer: refused or reset connection, DNS failure, TLS failure, closed client. */
export class ConnectionException extends RestException {
  constructor(message: string, cause?: unknown) {
    super(message, { code: 'CONNECTION_ERROR', cause });
    this.name = 'ConnectionException';
  }
}

/** An HTTP exchange, or waitForTask as a whole, took longer than allowed. */
export class TimeoutException extends RestException {
  /** The task waited for, when the time-out was waitForTask's (it may still be running). */
  readonly taskId: number | undefined;

  constructor(message: string, options: { taskId?: number; cause?: unknown } = {}) {
    super(message, { code: 'TIMEOUT', cause: options.cause });
    this.name = 'TimeoutException';
    this.taskId = options.taskId;
  }
}

/** The id is unknown or was evicted from the retention window (404 TASK_DOES_NOT_EXIST). */
export class TaskDoesNotExistException extends RestException {
  readonly taskId: number;

  constructor(taskId: number, serverMessage?: string) {
    super(serverMessage ?? `Task ${taskId} does not exist`, {
      statusCode: 404,
      code: 'TASK_DOES_NOT_EXIST',
      serverMessage,
    });
    this.name = 'TaskDoesNotExistException';
    this.taskId = taskId;
  }
}

/** The script ran and ended FAILURE; `taskError` is the task's `error` text. */
export class TaskProcessingException extends RestException {
  readonly taskId: number;
  readonly taskError: string;

  constructor(taskId: number, taskError: string) {
    super(`Task ${taskId} failed: ${taskError}`, { code: 'TASK_FAILURE' });
    this.name = 'TaskProcessingException';
    this.taskId = taskId;
    this.taskError = taskError;
  }
}

/** The device answered a task status this client does not know how to handle. */
export class InternalErrorException extends RestException {
  readonly taskId: number;
  readonly status: string;

  constructor(taskId: number, status: string) {
    super(`Task ${taskId} has unexpected status ${JSON.stringify(status)}`, { code: 'UNEXPECTED_STATUS' });
    this.name = 'InternalErrorException';
    this.taskId = taskId;
    this.status = status;
  }
}
