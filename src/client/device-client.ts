/**
 * DeviceClient: the TypeScript mirror of the device vendor's Java client class (docs/api.md).
 * Same constructors, same calls, same asynchronous flow (vendorScript, then poll the task until it
 * ends), same exceptions. Authentication is lazy and renewed once after a 401 (token expiry).
 */
import { errorFromResponse, HttpTransport, parseBody } from './http.ts';
import {
  InternalErrorException,
  TaskDoesNotExistException,
  TaskProcessingException,
  TimeoutException,
} from './rest-exception.ts';
import { type Credentials, TokenSession } from './token-session.ts';
import {
  acceptedSchema,
  type DeviceClientOptions,
  type GetTaskStatusOptions,
  MAX_WAIT_MS,
  type ProcessFmScriptOptions,
  type TasksResponse,
  taskBodySchema,
  taskListSchema,
  type WaitForTaskOptions,
} from './types.ts';

const DEFAULT_REQUEST_TIMEOUT_MS = 30_000;
/** Keep-alive connections to one device. */
const DEFAULT_CONNECTIONS = 4;
const DEFAULT_TASK_TIMEOUT_MS = 60_000;
const DEFAULT_INTERVAL_MS = 250;
/**
 * The longest the device is asked to hold `POST /api/fm-script` (the contract's default wait);
 * a longer `timeoutMs` continues with long polls, so no single exchange stays open for minutes
 * (proxies and load balancers cut idle requests).
 */
const MAX_FM_SCRIPT_WAIT_MS = 60_000;

export type { Credentials };

export class DeviceClient {
  /** `http://ip:port` (or https), without the base path. */
  readonly origin: string;
  private readonly http: HttpTransport;
  private readonly session: TokenSession;

  /** No credentials: no Authorization header is sent (a device started with `--auth off`). */
  constructor(ip: string, port: number, options?: DeviceClientOptions);
  constructor(ip: string, port: number, userName: string, password: string, options?: DeviceClientOptions);
  constructor(
    ip: string,
    port: number,
    userNameOrOptions?: string | DeviceClientOptions,
    password?: string,
    maybeOptions?: DeviceClientOptions,
  ) {
    if (!Number.isInteger(port) || port < 1 || port > 65535) throw new TypeError(`invalid port ${port}`);
    if (ip === '') throw new TypeError('ip must not be empty');
    let options: DeviceClientOptions;
    let credentials: Credentials | undefined;
    if (typeof userNameOrOptions === 'string') {
      if (userNameOrOptions === '' || typeof password !== 'string') {
        throw new TypeError('userName must be non-empty and come with a password');
      }
      credentials = { userName: userNameOrOptions, password };
      options = maybeOptions ?? {};
    } else {
      options = userNameOrOptions ?? {};
    }
    const host = ip.includes(':') && !ip.startsWith('[') ? `[${ip}]` : ip;
    this.origin = `${options.https ? 'https' : 'http'}://${host}:${port}`;
    this.http = new HttpTransport({
      origin: this.origin,
      basePath: (options.basePath ?? '').replace(/\/+$/, ''),
      requestTimeoutMs: options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS,
      connections: options.connections ?? DEFAULT_CONNECTIONS,
      dispatcher: options.dispatcher,
      ca: options.ca,
    });
    this.session = new TokenSession(this.http, credentials, options.authMethod ?? 'GET');
  }

  /**
   * `http(s)://[user:password@]host[:port][/base]`. Explicit credentials win over the URL's;
   * without either, the client is credential-less.
   */
  static fromUrl(
    url: string | URL,
    credentials?: Credentials,
    options: DeviceClientOptions = {},
  ): DeviceClient {
    const parsed = new URL(url);
    if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
      throw new TypeError(`unsupported protocol ${parsed.protocol} (expected http: or https:)`);
    }
    const https = parsed.protocol === 'https:';
    const port = parsed.port ? Number(parsed.port) : https ? 443 : 80;
    const opts: DeviceClientOptions = { ...options, https, basePath: options.basePath ?? parsed.pathname };
    const creds =
      credentials ??
      (parsed.username
        ? { userName: decodeURIComponent(parsed.username), password: decodeURIComponent(parsed.password) }
        : undefined);
    return creds
      ? new DeviceClient(parsed.hostname, port, creds.userName, creds.password, opts)
      : new DeviceClient(parsed.hostname, port, opts);
  }

  /** Fetches a fresh token now (otherwise the first call does). No-op without credentials. */
  async authenticate(): Promise<void> {
    await this.session.renew();
  }

  /** `POST /api/vendor-script`: queues the script, resolves to the task id at once. */
  async vendorScript(script: string, idempotencyKey?: string): Promise<number> {
    const res = await this.session.send({
      method: 'POST',
      path: '/api/vendor-script',
      body: { vendorScript: script },
      headers: idempotencyKey === undefined ? undefined : { 'idempotency-key': idempotencyKey },
    });
    // 202 for a new task, 200 when an Idempotency-Key matched an existing one.
    if (res.statusCode !== 200 && res.statusCode !== 202) throw errorFromResponse(res);
    return parseBody(acceptedSchema, res).id;
  }

  /**
   * `GET /api/tasks/{id}`: the task as the device holds it. An unknown or evicted id resolves to
   * `{id, status: 'TASK_DOES_NOT_EXIST'}` instead of throwing, like the vendor's status enum.
   */
  async getTaskStatus(id: number, options: GetTaskStatusOptions = {}): Promise<TasksResponse> {
    const waitMs =
      options.waitMs === undefined ? 0 : Math.max(0, Math.min(MAX_WAIT_MS, Math.floor(options.waitMs)));
    const res = await this.session.send({
      method: 'GET',
      path: `/api/tasks/${encodeURIComponent(String(id))}${waitMs > 0 ? `?waitMs=${waitMs}` : ''}`,
      extraTimeoutMs: waitMs,
    });
    if (res.statusCode === 200) return parseBody(taskBodySchema, res);
    const error = errorFromResponse(res);
    if (error.statusCode === 404 && error.code === 'TASK_DOES_NOT_EXIST')
      return { id, status: 'TASK_DOES_NOT_EXIST' };
    throw error;
  }

  /**
   * `DELETE /api/tasks/{id}`: cancels a queued task, which ends FAILURE with an error starting
   * `CANCELLED`; resolves to that task. A task that has started (409 `TASK_RUNNING`: a running
   * script is never cut) or ended (409 `TASK_ENDED`, `body` carries its `id` and `status`) throws
   * a RestException with that `code`; an unknown or evicted id throws TaskDoesNotExistException.
   */
  async cancelTask(id: number): Promise<TasksResponse> {
    const res = await this.session.send({
      method: 'DELETE',
      path: `/api/tasks/${encodeURIComponent(String(id))}`,
    });
    if (res.statusCode === 200) return parseBody(taskBodySchema, res);
    const error = errorFromResponse(res);
    if (error.statusCode === 404 && error.code === 'TASK_DOES_NOT_EXIST') {
      throw new TaskDoesNotExistException(id, error.serverMessage);
    }
    throw error;
  }

  /** `GET /api/tasks`: queued, running and retained tasks, newest first. */
  async listTasks(status?: string): Promise<TasksResponse[]> {
    const query = status === undefined ? '' : `?status=${encodeURIComponent(status)}`;
    const res = await this.session.send({ method: 'GET', path: `/api/tasks${query}` });
    if (res.statusCode !== 200) throw errorFromResponse(res);
    return parseBody(taskListSchema, res).tasks;
  }

  /**
   * The vendor's asynchronous flow: polls until the task ends. Resolves to the report (FINISHED);
   * throws TaskProcessingException, TaskDoesNotExistException, InternalErrorException or TimeoutException.
   */
  async waitForTask(id: number, options: WaitForTaskOptions = {}): Promise<string | null> {
    const timeoutMs = options.timeoutMs ?? DEFAULT_TASK_TIMEOUT_MS;
    return this.pollUntilEnd(id, Date.now() + timeoutMs, timeoutMs, options);
  }

  /** `timeoutMs` is the caller's whole allowance, only for the TimeoutException's message. */
  private async pollUntilEnd(
    id: number,
    deadline: number,
    timeoutMs: number,
    options: WaitForTaskOptions,
  ): Promise<string | null> {
    const intervalMs = options.intervalMs ?? DEFAULT_INTERVAL_MS;
    const longPoll = options.longPoll ?? true;
    for (;;) {
      const left = deadline - Date.now();
      const task = await this.getTaskStatus(id, { waitMs: longPoll ? Math.max(0, left) : 0 });
      if (task.status !== 'RUNNING') return outcome(task);
      const now = Date.now();
      if (now >= deadline) {
        throw new TimeoutException(`Task ${id} still RUNNING after ${timeoutMs} ms`, { taskId: id });
      }
      await delay(Math.min(intervalMs, deadline - now));
    }
  }

  /**
   * `POST /api/fm-script`: runs the script and resolves to its report. When the device answers
   * 202 (not ended within its wait), continues with waitForTask for the time left.
   */
  async processFmScript(script: string, options: ProcessFmScriptOptions = {}): Promise<string | null> {
    const timeoutMs = options.timeoutMs ?? DEFAULT_TASK_TIMEOUT_MS;
    const deadline = Date.now() + timeoutMs;
    const serverWait = Math.floor(
      Math.max(0, Math.min(timeoutMs, options.serverWaitMs ?? MAX_FM_SCRIPT_WAIT_MS, MAX_FM_SCRIPT_WAIT_MS)),
    );
    const res = await this.session.send({
      method: 'POST',
      path: `/api/fm-script?timeoutMs=${serverWait}`,
      body: { fmScript: script },
      headers:
        options.idempotencyKey === undefined ? undefined : { 'idempotency-key': options.idempotencyKey },
      extraTimeoutMs: serverWait,
    });
    if (res.statusCode === 200) {
      const task = parseBody(taskBodySchema, res);
      if (task.status !== 'RUNNING') return outcome(task);
    } else if (res.statusCode !== 202) {
      throw errorFromResponse(res);
    }
    const { id } = parseBody(acceptedSchema, res);
    return this.pollUntilEnd(id, deadline, timeoutMs, { intervalMs: options.intervalMs });
  }

  /** Releases the client's connections. Later calls throw ConnectionException. */
  async close(): Promise<void> {
    await this.http.close();
  }
}

function outcome(task: TasksResponse): string | null {
  switch (task.status) {
    case 'FINISHED':
      return task.report ?? null;
    case 'FAILURE':
      throw new TaskProcessingException(task.id, task.error ?? '');
    case 'TASK_DOES_NOT_EXIST':
      throw new TaskDoesNotExistException(task.id);
    default:
      throw new InternalErrorException(task.id, task.status);
  }
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
