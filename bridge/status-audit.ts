/**
 * Makes sure the broker stored the device's end statuses (docs/mqtt.md, "Several brokers"): a
 * clustered broker may acknowledge a retained status it failed to store. Shortly after tasks end
 * the device reads its retained statuses back and republishes every held, ended task whose status
 * is missing or stale. On by default with several broker URLs (`auditRetained`).
 */
import type { IPublishPacket } from 'mqtt';
import type { Logger } from 'pino';
import type { Task } from '../src/tasks/task.ts';
import { toTaskBody } from '../src/tasks/task.ts';
import { BRIDGE_DEFAULTS } from './bridge-options.ts';

const ENDED = new Set(['FINISHED', 'FAILURE']);
const MAX_ROUNDS = 10;

export interface StatusAuditOptions {
  bootId: string;
  filter: string;
  logger: Logger;
  /** Held tasks, newest first (the queue's list). */
  held: () => readonly Readonly<Task>[];
  online: () => boolean;
  /** The stale-status sweep holds the same filter: the audit waits for it to end. */
  busy: () => boolean;
  subscribe(filter: string, done: (error?: Error) => void): void;
  unsubscribe(filter: string): void;
  republish(task: Readonly<Task>): void;
  delayMs?: number;
  quietMs?: number;
  maxMs?: number;
}

export class RetainedStatusAudit {
  readonly #o: StatusAuditOptions;
  #timer: NodeJS.Timeout | undefined;
  #quiet: NodeJS.Timeout | undefined;
  #max: NodeJS.Timeout | undefined;
  #active = false;
  #again = false;
  #stopped = false;
  /** Audits in a row that found statuses missing: bounded, in case a broker never stores them. */
  #rounds = 0;
  /** Tasks checked by the running audit: ended before it started. */
  #checking = new Map<number, string>();
  #seen = new Map<number, string>();
  /** Statuses published again because the broker had not stored them (tests, logs). */
  republished = 0;

  constructor(options: StatusAuditOptions) {
    this.#o = options;
  }

  /** A task ended: audit a moment later (once per burst). */
  noteEnded(): void {
    if (this.#stopped) return;
    if (this.#active) {
      this.#again = true;
      return;
    }
    if (!this.#timer)
      this.#timer = setTimeout(() => this.#run(), this.#o.delayMs ?? BRIDGE_DEFAULTS.auditDelayMs);
  }

  /** A message on the device's own status filter. */
  handle(taskId: number, payload: Buffer, packet: IPublishPacket): void {
    if (!this.#active || !packet.retain || payload.length === 0) return;
    try {
      const body = JSON.parse(payload.toString('utf8')) as { bootId?: unknown; status?: unknown };
      if (body.bootId === this.#o.bootId && typeof body.status === 'string')
        this.#seen.set(taskId, body.status);
    } catch {
      return;
    }
    this.#armQuiet();
  }

  /** stop(): clears every timer; a running audit's subscription goes with the connection. */
  end(): void {
    this.#stopped = true;
    this.#clear();
    this.#active = false;
  }

  #run(): void {
    this.#timer = undefined;
    if (this.#stopped || !this.#o.online()) return;
    if (this.#o.busy()) {
      this.noteEnded();
      return;
    }
    this.#checking = new Map(
      this.#o
        .held()
        .map((task) => [task.id, toTaskBody(task).status] as const)
        .filter(([, status]) => ENDED.has(status)),
    );
    if (this.#checking.size === 0) return;
    this.#active = true;
    this.#again = false;
    this.#seen = new Map();
    this.#o.subscribe(this.#o.filter, (error) => {
      if (!this.#active) return;
      if (error) {
        this.#active = false;
        this.#o.logger.warn({ err: error.message }, 'could not read retained statuses back');
        return;
      }
      this.#max = setTimeout(() => this.#finish(), this.#o.maxMs ?? BRIDGE_DEFAULTS.auditMaxMs);
      this.#armQuiet();
    });
  }

  #armQuiet(): void {
    clearTimeout(this.#quiet);
    this.#quiet = setTimeout(() => this.#finish(), this.#o.quietMs ?? BRIDGE_DEFAULTS.auditQuietMs);
  }

  #finish(): void {
    if (!this.#active) return;
    this.#clear();
    this.#active = false;
    this.#o.unsubscribe(this.#o.filter);
    if (!this.#o.online()) return;
    let missing = 0;
    for (const task of this.#o.held()) {
      const expected = this.#checking.get(task.id);
      if (expected === undefined || this.#seen.get(task.id) === expected) continue;
      missing += 1;
      this.#o.republish(task);
    }
    if (missing === 0) this.#rounds = 0;
    else {
      this.republished += missing;
      this.#rounds += 1;
      this.#o.logger.warn(
        { missing },
        'end statuses acknowledged but not stored by the broker; published again',
      );
      // Check those again (the broker may still be electing), up to MAX_ROUNDS audits in a row.
      if (this.#rounds < MAX_ROUNDS) this.#again = true;
      else
        this.#o.logger.error(
          { missing },
          'the broker keeps not storing end statuses; audits stop until the next task ends',
        );
    }
    if (this.#again) this.noteEnded();
  }

  #clear(): void {
    for (const timer of [this.#timer, this.#quiet, this.#max]) clearTimeout(timer);
    this.#timer = undefined;
    this.#quiet = undefined;
    this.#max = undefined;
  }
}
