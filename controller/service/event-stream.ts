/**
 * `GET /api/events`: Server-Sent Events for the dashboard and integrators (docs/controller.md,
 * "Events"). A heartbeat comment keeps proxies from closing an idle stream; a client that reads
 * too slowly is disconnected rather than buffered without bound (it reloads over GET).
 */
import type { ServerResponse } from 'node:http';
import type { TokenSession } from '../../src/auth/token-store.ts';
import type { Logger } from '../../src/logger.ts';
import type { JobEngine } from '../job-engine.ts';
import type { JobResult, JobSummary } from '../job-types.ts';
import { storeInsideScope } from '../permissions.ts';
import type { DeviceEntry, TaskView } from '../types.ts';
import type { Scope } from '../users.ts';
import { type DeviceBody, deviceBody } from './device-body.ts';
import { SECURITY_HEADERS } from './security-headers.ts';
import type { DirectoryView } from './service-app.ts';
import { splitResult } from './store-bodies.ts';

const HEARTBEAT_MS = 15_000;

/** An event for every client, one about a store's register, or a job's changes of the turn. */
type Queued = string | { text: string; store: string } | JobChanges;

interface JobChanges {
  /** The newest of the turn. */
  job: JobSummary;
  results: JobResult[];
  statusChanged: boolean;
}

/**
 * The events of one job's changes: the job without results, script and target (each event stays
 * O(1) in the job's size), plus `result` per changed result; the status change last.
 */
function jobEvents(
  { job, results, statusChanged }: JobChanges,
  write: (events: string, store?: string) => void,
): void {
  const { script: _script, target: _target, ...rest } = job;
  const head = JSON.stringify(rest);
  const open = head.slice(0, -1);
  for (const result of results) {
    const split = splitResult(result);
    write(`event: job\ndata: ${open},"result":${JSON.stringify(split)}}\n\n`, split.store);
  }
  if (statusChanged) write(`event: job\ndata: ${head}\n\n`);
  // Approvers' dashboards and integrators wait for this one (docs/controller.md, "Approval").
  if (statusChanged && job.status === 'WAITING_FOR_APPROVAL') {
    write(`event: job.waiting_for_approval\ndata: ${head}\n\n`);
  }
}

/** Events are written to the clients in pieces of about this many characters. */
const WRITE_PIECE = 64 * 1024;

/** Task statuses of one register within this interval make one `event: device`. */
const STATUS_COALESCE_MS = 100;
/** Bytes waiting in one client's socket before it is dropped as too slow. */
const MAX_BUFFERED = 4 * 1024 * 1024;
/** `--max-event-streams`: open streams per user. */
export const DEFAULT_MAX_EVENT_STREAMS = 8;
/** setTimeout's longest delay; a session that lasts longer is looked at again then. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/** The sessions streams belong to: a stream ends when its session does. */
export interface StreamSessions {
  isLive(key: string): boolean;
  /** Calls `listener` with the key of each session revoked (logout) or dropped; returns the way off. */
  onSessionEnd(listener: (key: string) => void): () => void;
}

export interface EventStreamOptions {
  sessions: StreamSessions;
  /** A user's scope: a store-scoped stream gets only its stores' registers and results. */
  scopeOf?: (userName: string) => Scope | undefined;
  /** Open streams per user (default DEFAULT_MAX_EVENT_STREAMS). */
  maxPerUser?: number;
}

interface Client {
  readonly session: TokenSession;
  readonly scope: Scope | undefined;
  timer?: NodeJS.Timeout;
}

export class EventStream {
  private readonly clients = new Map<ServerResponse, Client>();
  private readonly streamsPerUser = new Map<string, number>();
  private readonly maxPerUser: number;
  private readonly offSessionEnd: () => void;
  private readonly heartbeat: NodeJS.Timeout;
  private closed = false;
  private readonly jobChanges = new Map<string, JobChanges>();
  /**
   * A job's changes of this turn: one `event: job` per changed result (and one for a status
   * change), with the job's part serialized once per turn rather than per event.
   */
  private readonly onJob = (job: JobSummary, result: JobResult | undefined): void => {
    if (this.clients.size === 0 || this.closed) return;
    let changes = this.jobChanges.get(job.jobId);
    if (!changes) {
      changes = { job, results: [], statusChanged: false };
      this.jobChanges.set(job.jobId, changes);
      this.queue(changes);
    }
    changes.job = job;
    if (result) changes.results.push(result);
    else changes.statusChanged = true;
  };
  /** Registers whose task statuses changed, announced at most every STATUS_COALESCE_MS. */
  private readonly changedTasks = new Set<string>();
  private statusTimer: NodeJS.Timeout | undefined;
  /** Events of this turn, written to every client at its end. */
  private outbox: Queued[] = [];
  private outboxTimer: NodeJS.Immediate | undefined;
  private readonly onDevice = (entry: DeviceEntry): void => {
    this.changedTasks.delete(entry.deviceId);
    this.guard('device event', () => this.broadcast('device', this.body(entry), entry.store));
  };
  private readonly onStatus = (task: TaskView): void => {
    if (this.clients.size === 0) return;
    this.changedTasks.add(task.deviceId);
    this.statusTimer ??= setTimeout(() => this.flushStatuses(), STATUS_COALESCE_MS);
  };

  constructor(
    private readonly engine: JobEngine,
    private readonly directory: DirectoryView,
    private readonly logger: Logger,
    private readonly options: EventStreamOptions,
  ) {
    this.maxPerUser = options.maxPerUser ?? DEFAULT_MAX_EVENT_STREAMS;
    this.offSessionEnd = options.sessions.onSessionEnd((key) => {
      for (const [response, client] of this.clients) if (client.session.key === key) this.end(response);
    });
    engine.on('job', this.onJob);
    directory.on('device', this.onDevice);
    directory.on('status', this.onStatus);
    this.heartbeat = setInterval(() => this.write(': keep-alive\n\n'), HEARTBEAT_MS);
    this.heartbeat.unref();
  }

  get size(): number {
    return this.clients.size;
  }

  /** Whether `user` may open another stream (`--max-event-streams`). */
  admits(user: string): boolean {
    return (this.streamsPerUser.get(user) ?? 0) < this.maxPerUser;
  }

  /**
   * Takes over the response: headers, a first comment, then events until either side closes or
   * `session` ends (expires, logout). The caller checked admits().
   */
  add(response: ServerResponse, session: TokenSession): void {
    if (this.closed) {
      response.end();
      return;
    }
    response.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache',
      connection: 'keep-alive',
      'x-accel-buffering': 'no',
      ...SECURITY_HEADERS,
    });
    response.write('retry: 2000\n: connected\n\n');
    const client: Client = { session, scope: this.options.scopeOf?.(session.userName) };
    this.clients.set(response, client);
    const user = session.userName;
    this.streamsPerUser.set(user, (this.streamsPerUser.get(user) ?? 0) + 1);
    this.watchExpiry(response, client);
    response.on('close', () => this.forget(response));
    // A socket error is the client's loss, never the service's (an unhandled 'error' would be).
    response.on('error', () => this.forget(response));
  }

  /** Ends the stream when its session expires (a token's lifetime may exceed one timer's). */
  private watchExpiry(response: ServerResponse, client: Client): void {
    const left = client.session.expiresAt - Date.now();
    if (left === Number.POSITIVE_INFINITY) return;
    client.timer = setTimeout(
      () => {
        if (!this.options.sessions.isLive(client.session.key) || client.session.expiresAt <= Date.now())
          this.end(response);
        else this.watchExpiry(response, client);
      },
      Math.max(0, Math.min(left, MAX_TIMER_MS)),
    );
    client.timer.unref();
  }

  private end(response: ServerResponse): void {
    this.forget(response);
    response.end();
  }

  private forget(response: ServerResponse): void {
    const client = this.clients.get(response);
    if (!client) return;
    this.clients.delete(response);
    clearTimeout(client.timer);
    const user = client.session.userName;
    const left = (this.streamsPerUser.get(user) ?? 1) - 1;
    if (left > 0) this.streamsPerUser.set(user, left);
    else this.streamsPerUser.delete(user);
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.heartbeat);
    this.engine.off('job', this.onJob);
    this.directory.off('device', this.onDevice);
    this.directory.off('status', this.onStatus);
    clearTimeout(this.statusTimer);
    if (this.outboxTimer !== undefined) clearImmediate(this.outboxTimer);
    this.outbox = [];
    this.jobChanges.clear();
    this.offSessionEnd();
    for (const response of [...this.clients.keys()]) this.end(response);
  }

  private body(entry: DeviceEntry): DeviceBody {
    return deviceBody(entry, this.directory.taskSummary(entry.deviceId));
  }

  /** A register's last task and queue changed: one `event: device` per register per interval. */
  private flushStatuses(): void {
    this.statusTimer = undefined;
    this.guard('device event', () => {
      for (const deviceId of this.changedTasks) {
        const entry = this.directory.device(deviceId);
        if (entry) this.broadcast('device', this.body(entry), entry.store);
      }
    });
    this.changedTasks.clear();
  }

  /** An event of another component (e.g. `schedule.missed`), to every client. */
  announce(event: string, data: unknown): void {
    this.guard(event, () => this.broadcast(event, data));
  }

  /** Nothing in the event path takes the service down: a failure is logged, its events lost. */
  private guard(what: string, work: () => void): void {
    try {
      work();
    } catch (error) {
      this.logger.error({ err: (error as Error).message }, `${what} not sent`);
    }
  }

  /** `store`: the event concerns that store's register (only its scopes see it). */
  private broadcast(event: string, data: unknown, store?: string): void {
    if (this.clients.size === 0) return;
    const text = `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
    this.queue(store === undefined ? text : { text, store });
  }

  private queue(item: Queued): void {
    this.outbox.push(item);
    this.outboxTimer ??= setImmediate(() => {
      this.outboxTimer = undefined;
      const outbox = this.outbox;
      this.outbox = [];
      this.jobChanges.clear();
      this.guard('event', () => this.writeAll(outbox));
    });
  }

  /** The events of one turn, to the clients of each store scope what that scope may see. */
  private writeAll(outbox: readonly Queued[]): void {
    const views = new Map<string, { scope: Scope | undefined; clients: ServerResponse[] }>();
    for (const [response, { scope }] of this.clients) {
      const key = scope?.kind === 'store' ? scope.values.join(',') : '';
      const view = views.get(key) ?? { scope: key === '' ? undefined : scope, clients: [] };
      views.set(key, view);
      view.clients.push(response);
    }
    for (const { scope, clients } of views.values()) this.writeView(outbox, scope, clients);
  }

  /** The events `scope` may see, in pieces of about WRITE_PIECE characters. */
  private writeView(outbox: readonly Queued[], scope: Scope | undefined, clients: ServerResponse[]): void {
    let piece = '';
    const add = (events: string, store?: string): void => {
      if (store !== undefined && !storeInsideScope(scope, store)) return;
      piece += events;
      if (piece.length >= WRITE_PIECE) {
        this.write(piece, clients);
        piece = '';
      }
    };
    for (const each of outbox) {
      if (typeof each === 'string') add(each);
      else if ('text' in each) add(each.text, each.store);
      else jobEvents(each, add);
    }
    if (piece.length > 0) this.write(piece, clients);
  }

  private write(chunk: string, clients: readonly ServerResponse[] = [...this.clients.keys()]): void {
    for (const client of clients) {
      if (!this.clients.has(client)) continue;
      if (client.writableLength > MAX_BUFFERED) {
        this.logger.warn('event stream client too slow; disconnected');
        this.forget(client);
        client.destroy();
        continue;
      }
      client.write(chunk);
    }
  }
}
