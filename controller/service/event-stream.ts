/**
 * `GET /api/events`: Server-Sent Events for the dashboard and integrators
 * (docs/controller.md, "Events"). `event: device` carries a register as GET /api/devices lists
 * it, whenever its state changes; `event: job` carries a job without its results (as GET
 * /api/jobs lists it) whenever it changes, plus `result`: the one result that changed, if one
 * did. A comment line every 15 s keeps proxies from closing an idle stream. A client that reads
 * too slowly (its socket buffer full) is disconnected rather than buffered without bound; it
 * reconnects and reads the current state over GET.
 */
import type { ServerResponse } from 'node:http';
import type { Logger } from '../../src/logger.ts';
import type { JobEngine } from '../job-engine.ts';
import type { JobResult, JobSummary } from '../job-types.ts';
import type { DeviceEntry } from '../types.ts';
import { deviceBody } from './device-body.ts';
import type { DirectoryView } from './service-app.ts';

const HEARTBEAT_MS = 15_000;
/** Bytes waiting in one client's socket before it is dropped as too slow. */
const MAX_BUFFERED = 4 * 1024 * 1024;

export class EventStream {
  private readonly clients = new Set<ServerResponse>();
  private readonly heartbeat: NodeJS.Timeout;
  private closed = false;
  private readonly onJob = (job: JobSummary, result: JobResult | undefined): void => {
    this.broadcast('job', result ? { ...job, result } : job);
  };
  private readonly onDevice = (entry: DeviceEntry): void => {
    this.broadcast('device', deviceBody(entry, this.directory.tasks(entry.deviceId)));
  };

  constructor(
    private readonly engine: JobEngine,
    private readonly directory: DirectoryView,
    private readonly logger: Logger,
  ) {
    engine.on('job', this.onJob);
    directory.on('device', this.onDevice);
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
    for (const client of this.clients) client.end();
    this.clients.clear();
  }

  private broadcast(event: string, data: unknown): void {
    if (this.clients.size === 0) return;
    this.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
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
