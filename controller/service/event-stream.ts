/**
 * `GET /api/events`: Server-Sent Events for the dashboard and integrators
 * (docs/controller.md, "Events"). `event: device` carries a register as GET /api/devices lists
 * it, whenever its state changes, and when its tasks changed (last task, queue; at most one per
 * register every 100 ms); `event: job` carries a job without its results and script
 * (as GET /api/jobs lists it, less the script) whenever it changes, plus `result`: the one result that changed, if one
 * did. A comment line every 15 s keeps proxies from closing an idle stream. A client that reads
 * too slowly (its socket buffer full) is disconnected rather than buffered without bound; it
 * reconnects and reads the current state over GET. The events of one event-loop turn go out in
 * one write per client (a job to 500 registers makes about 1,000 events).
 */
import type { ServerResponse } from 'node:http';
import type { Logger } from '../../src/logger.ts';
import type { JobEngine } from '../job-engine.ts';
import type { JobResult, JobSummary } from '../job-types.ts';
import type { DeviceEntry, TaskView } from '../types.ts';
import { type DeviceBody, deviceBody } from './device-body.ts';
import type { DirectoryView } from './service-app.ts';

const HEARTBEAT_MS = 15_000;

interface JobChanges {
  /** The newest of the turn. */
  job: JobSummary;
  results: JobResult[];
  statusChanged: boolean;
}

/**
 * The events of one job's changes: the job without its results and script (it may be 1 MiB), plus
 * `result` for each changed result; the job's own status change last.
 */
function jobEvents({ job, results, statusChanged }: JobChanges): string {
  const { script: _script, ...rest } = job;
  const head = JSON.stringify(rest);
  const open = head.slice(0, -1);
  let events = '';
  for (const result of results) events += `event: job\ndata: ${open},"result":${JSON.stringify(result)}}\n\n`;
  if (statusChanged) events += `event: job\ndata: ${head}\n\n`;
  // Approvers' dashboards and integrators wait for this one (docs/controller.md, "Approval").
  if (statusChanged && job.status === 'WAITING_FOR_APPROVAL') {
    events += `event: job.waiting_for_approval\ndata: ${head}\n\n`;
  }
  return events;
}

/** Task statuses of one register within this interval make one `event: device`. */
const STATUS_COALESCE_MS = 100;
/** Bytes waiting in one client's socket before it is dropped as too slow. */
const MAX_BUFFERED = 4 * 1024 * 1024;

export class EventStream {
  private readonly clients = new Set<ServerResponse>();
  private readonly heartbeat: NodeJS.Timeout;
  private closed = false;
  private readonly jobChanges = new Map<string, JobChanges>();
  /**
   * A job's changes of this turn: one `event: job` per changed result (and one for a change of
   * the job's own status), each carrying the job as it is when they are written. The job's part is
   * serialized once per turn instead of once per event: a job to 500 registers makes about 1,000
   * events, and serializing them was the service's largest cost of a job that the CLI fan-out
   * does not have (docs/benchmarks.md, scenario 7).
   */
  private readonly onJob = (job: JobSummary, result: JobResult | undefined): void => {
    if (this.clients.size === 0) return;
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
  private outbox: Array<string | JobChanges> = [];
  private outboxTimer: NodeJS.Immediate | undefined;
  private readonly onDevice = (entry: DeviceEntry): void => {
    this.changedTasks.delete(entry.deviceId);
    this.broadcast('device', this.body(entry));
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
  ) {
    engine.on('job', this.onJob);
    directory.on('device', this.onDevice);
    directory.on('status', this.onStatus);
    this.heartbeat = setInterval(() => this.write(': keep-alive\n\n'), HEARTBEAT_MS);
    this.heartbeat.unref();
  }

  get size(): number {
    return this.clients.size;
  }

  /** Takes over the response: headers, a first comment, then events until either side closes. */
  add(response: ServerResponse): void {
    if (this.closed) {
      response.end();
      return;
    }
    response.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache',
      connection: 'keep-alive',
      'x-accel-buffering': 'no',
    });
    response.write('retry: 2000\n: connected\n\n');
    this.clients.add(response);
    response.on('close', () => this.clients.delete(response));
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
    for (const client of this.clients) client.end();
    this.clients.clear();
  }

  private body(entry: DeviceEntry): DeviceBody {
    return deviceBody(entry, this.directory.taskSummary(entry.deviceId));
  }

  /** A register's last task and queue changed: one `event: device` per register per interval. */
  private flushStatuses(): void {
    this.statusTimer = undefined;
    for (const deviceId of this.changedTasks) {
      const entry = this.directory.device(deviceId);
      if (entry) this.broadcast('device', this.body(entry));
    }
    this.changedTasks.clear();
  }

  private broadcast(event: string, data: unknown): void {
    if (this.clients.size === 0) return;
    this.queue(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
  }

  private queue(item: string | JobChanges): void {
    this.outbox.push(item);
    this.outboxTimer ??= setImmediate(() => {
      this.outboxTimer = undefined;
      const chunk = this.outbox.map((each) => (typeof each === 'string' ? each : jobEvents(each))).join('');
      this.outbox = [];
      this.jobChanges.clear();
      this.write(chunk);
    });
  }

  private write(chunk: string): void {
    for (const client of this.clients) {
      if (client.writableLength > MAX_BUFFERED) {
        this.logger.warn('event stream client too slow; disconnected');
        client.destroy();
        this.clients.delete(client);
        continue;
      }
      client.write(chunk);
    }
  }
}
