/**
 * Webhooks (docs/controller.md, "Webhooks"): subscriptions and deliveries stored in the history,
 * each delivery written before it is sent so a restart resumes it. Signed per Standard Webhooks
 * (`standardwebhooks`), retried with backoff for 24 hours; sends never hold the engine up.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import type { Logger } from '../src/logger.ts';
import { type HistoryDb, prepare } from './history-db.ts';
import type { PacingClock } from './rollout.ts';

export const WEBHOOK_EVENTS = [
  'job.created',
  'job.waiting_for_approval',
  'job.completed',
  'job.aborted',
  'job.cancelled',
  'schedule.missed',
  'device.offline',
  'device.online',
] as const;
export type WebhookEvent = (typeof WEBHOOK_EVENTS)[number];

export interface WebhookInfo {
  webhookId: string;
  url: string;
  events: WebhookEvent[];
  createdBy: string;
  createdAt: string;
}

export type DeliveryStatus = 'PENDING' | 'DELIVERED' | 'FAILED';

export interface DeliveryInfo {
  /** The `webhook-id` header, the same on every attempt. */
  messageId: string;
  event: WebhookEvent;
  status: DeliveryStatus;
  attempts: number;
  createdAt: string;
  lastAttemptAt?: string;
  /** The receiver's HTTP status of the last attempt, or its error (time-out, refused). */
  lastStatus?: number;
  lastError?: string;
  nextAttemptAt?: string;
}

export interface WebhookOptions {
  db: HistoryDb;
  clock: PacingClock;
  logger: Logger;
  /** An attempt without an answer by then fails (default 10 s). */
  timeoutMs?: number;
  /** Retries stop this long after the event (default 24 h). */
  retryForMs?: number;
  /** The first retry's wait, doubled each time up to maxBackoffMs (defaults 5 s, 1 h). */
  firstBackoffMs?: number;
  maxBackoffMs?: number;
  /** Attempts in flight at once, over every webhook. */
  concurrency?: number;
}

export const WEBHOOK_DEFAULTS = {
  timeoutMs: 10_000,
  retryForMs: 24 * 3_600_000,
  firstBackoffMs: 5_000,
  maxBackoffMs: 3_600_000,
  concurrency: 8,
};

/** The wait before retry `attempt` (1-based): first, doubling, capped. */
export function backoffMs(attempt: number, first: number, max: number): number {
  return Math.min(max, first * 2 ** Math.min(attempt - 1, 30));
}

interface DeliveryRow {
  seq: number;
  message_id: string;
  webhook_id: string;
  event: string;
  payload: string;
  created_at: number;
  status: string;
  attempts: number;
  next_at: number | null;
  last_status: number | null;
  last_error: string | null;
  last_attempt_at: number | null;
}

const iso = (ms: number): string => new Date(ms).toISOString();

export class Webhooks {
  private readonly options: Required<Omit<WebhookOptions, 'db' | 'clock' | 'logger'>> & WebhookOptions;
  private readonly statements;
  private readonly inFlight = new Set<number>();
  private timer: unknown;
  private timerAt = Number.POSITIVE_INFINITY;
  private running = false;
  private readonly aborts = new Set<AbortController>();

  constructor(options: WebhookOptions) {
    this.options = { ...WEBHOOK_DEFAULTS, ...options };
    const { db } = options;
    this.statements = {
      insert: prepare(
        db,
        `INSERT INTO webhooks (webhook_id, url, events, secret, created_by, created_at) VALUES (?, ?, ?, ?, ?, ?)`,
      ),
      list: prepare(db, `SELECT * FROM webhooks ORDER BY created_at, webhook_id`),
      one: prepare(db, `SELECT * FROM webhooks WHERE webhook_id = ?`),
      remove: prepare(db, `DELETE FROM webhooks WHERE webhook_id = ?`),
      addDelivery: prepare(
        db,
        `INSERT INTO webhook_deliveries (message_id, webhook_id, event, payload, created_at, status, next_at)
         VALUES (?, ?, ?, ?, ?, 'PENDING', ?)`,
      ),
      due: prepare(
        db,
        `SELECT d.*, w.url, w.secret FROM webhook_deliveries d JOIN webhooks w USING (webhook_id)
         WHERE d.next_at IS NOT NULL AND d.next_at <= ? ORDER BY d.next_at LIMIT ?`,
      ),
      // While an attempt runs its row is due again only after the time-out: a process that dies
      // mid-attempt resends it at the next start, and the timer does not spin on it meanwhile.
      lease: prepare(db, `UPDATE webhook_deliveries SET next_at = ? WHERE seq = ?`),
      nextDue: prepare(db, `SELECT min(next_at) FROM webhook_deliveries WHERE next_at IS NOT NULL`).pluck(),
      settle: prepare(
        db,
        `UPDATE webhook_deliveries SET status = ?, attempts = attempts + 1, next_at = ?, last_status = ?,
           last_error = ?, last_attempt_at = ? WHERE seq = ?`,
      ),
      deliveries: prepare(
        db,
        `SELECT * FROM webhook_deliveries WHERE webhook_id = ? ORDER BY seq DESC LIMIT ?`,
      ),
    };
  }

  start(): void {
    this.running = true;
    this.schedule();
  }

  stop(): void {
    this.running = false;
    if (this.timer !== undefined) this.options.clock.clearTimeout(this.timer);
    this.timer = undefined;
    this.timerAt = Number.POSITIVE_INFINITY;
    for (const abort of this.aborts) abort.abort();
  }

  /** A new subscription; the secret (given or generated, `whsec_...`) is returned only here. */
  create(
    spec: { url: string; events: WebhookEvent[]; secret?: string },
    createdBy: string,
  ): WebhookInfo & { secret: string } {
    const secret = spec.secret ?? `whsec_${randomBytes(32).toString('base64')}`;
    new Webhook(secret); // refuses a malformed secret before it is stored
    const info: WebhookInfo = {
      webhookId: randomUUID(),
      url: spec.url,
      events: [...new Set(spec.events)],
      createdBy,
      createdAt: iso(this.options.clock.now()),
    };
    this.statements.insert.run(
      info.webhookId,
      info.url,
      JSON.stringify(info.events),
      secret,
      createdBy,
      info.createdAt,
    );
    return { ...info, secret };
  }

  list(): WebhookInfo[] {
    return (this.statements.list.all() as Record<string, string>[]).map(toInfo);
  }

  get(webhookId: string): WebhookInfo | undefined {
    const row = this.statements.one.get(webhookId) as Record<string, string> | undefined;
    return row ? toInfo(row) : undefined;
  }

  /** Deletes a subscription and its deliveries (pending ones are not sent). */
  remove(webhookId: string): boolean {
    return this.statements.remove.run(webhookId).changes > 0;
  }

  /** Newest first. */
  deliveries(webhookId: string, limit: number): DeliveryInfo[] {
    return (this.statements.deliveries.all(webhookId, limit) as DeliveryRow[]).map(toDelivery);
  }

  /** Queues `event` for every webhook that subscribed to it; sends later, never here. */
  emit(event: WebhookEvent, data: Record<string, unknown>): void {
    const now = this.options.clock.now();
    const targets = this.list().filter((hook) => hook.events.includes(event));
    if (targets.length === 0) return;
    const payload = JSON.stringify({ type: event, timestamp: iso(now), data });
    for (const hook of targets) {
      this.statements.addDelivery.run(`msg_${randomUUID()}`, hook.webhookId, event, payload, now, now);
    }
    this.schedule(now);
  }

  /** Arms the timer for the earliest due delivery (or `at`, if sooner). */
  private schedule(at?: number): void {
    if (!this.running) return;
    const next = at ?? (this.statements.nextDue.get() as number | null);
    if (next === null || next === undefined || next >= this.timerAt) return;
    if (this.timer !== undefined) this.options.clock.clearTimeout(this.timer);
    this.timerAt = next;
    this.timer = this.options.clock.setTimeout(
      () => {
        this.timer = undefined;
        this.timerAt = Number.POSITIVE_INFINITY;
        this.sendDue();
      },
      Math.max(0, next - this.options.clock.now()),
    );
  }

  private sendDue(): void {
    if (!this.running) return;
    const room = this.options.concurrency - this.inFlight.size;
    if (room > 0) {
      const due = this.statements.due.all(
        this.options.clock.now(),
        room + this.inFlight.size,
      ) as (DeliveryRow & {
        url: string;
        secret: string;
      })[];
      for (const row of due) {
        if (this.inFlight.has(row.seq) || this.inFlight.size >= this.options.concurrency) continue;
        this.inFlight.add(row.seq);
        void this.attempt(row).finally(() => {
          this.inFlight.delete(row.seq);
          this.schedule();
        });
      }
    }
  }

  private async attempt(row: DeliveryRow & { url: string; secret: string }): Promise<void> {
    const { clock, logger } = this.options;
    const started = clock.now();
    const headers = {
      'content-type': 'application/json',
      'user-agent': 'regbridge-webhooks',
      'webhook-id': row.message_id,
      'webhook-timestamp': String(Math.floor(started / 1000)),
      'webhook-signature': new Webhook(row.secret).sign(row.message_id, new Date(started), row.payload),
    };
    this.statements.lease.run(started + this.options.timeoutMs + 1000, row.seq);
    const abort = new AbortController();
    this.aborts.add(abort);
    const timeout = setTimeout(() => abort.abort(), this.options.timeoutMs);
    let status: number | undefined;
    let error: string | undefined;
    try {
      // No redirects: requests go only to the URL an admin configured.
      const response = await fetch(row.url, {
        method: 'POST',
        headers,
        body: row.payload,
        redirect: 'manual',
        signal: abort.signal,
      });
      status = response.status;
      await response.body?.cancel();
    } catch (caught) {
      error = abort.signal.aborted ? `no answer within ${this.options.timeoutMs} ms` : describe(caught);
    } finally {
      clearTimeout(timeout);
      this.aborts.delete(abort);
    }
    if (!this.running) return; // stopped meanwhile: the row stays due, resumed at the next start
    const now = clock.now();
    const delivered = status !== undefined && status >= 200 && status < 300;
    let next: number | null = null;
    let outcome: DeliveryStatus = 'DELIVERED';
    if (!delivered) {
      const wait = backoffMs(row.attempts + 1, this.options.firstBackoffMs, this.options.maxBackoffMs);
      if (now + wait <= row.created_at + this.options.retryForMs) {
        next = now + wait;
        outcome = 'PENDING';
      } else {
        outcome = 'FAILED';
      }
      // The URL may carry credentials and the secret signs: neither is logged.
      logger.warn(
        {
          webhookId: row.webhook_id,
          messageId: row.message_id,
          status,
          error,
          attempt: row.attempts + 1,
          outcome,
        },
        'webhook delivery failed',
      );
    }
    this.statements.settle.run(outcome, next, status ?? null, error ?? null, now, row.seq);
  }
}

function describe(error: unknown): string {
  const cause = (error as { cause?: { code?: string; message?: string } }).cause;
  return cause?.code ?? cause?.message ?? (error as Error).message ?? 'request failed';
}

function toInfo(row: Record<string, string>): WebhookInfo {
  return {
    webhookId: row.webhook_id!,
    url: row.url!,
    events: JSON.parse(row.events!) as WebhookEvent[],
    createdBy: row.created_by!,
    createdAt: row.created_at!,
  };
}

function toDelivery(row: DeliveryRow): DeliveryInfo {
  return {
    messageId: row.message_id,
    event: row.event as WebhookEvent,
    status: row.status as DeliveryStatus,
    attempts: row.attempts,
    createdAt: iso(row.created_at),
    ...(row.last_attempt_at !== null && { lastAttemptAt: iso(row.last_attempt_at) }),
    ...(row.last_status !== null && { lastStatus: row.last_status }),
    ...(row.last_error !== null && { lastError: row.last_error }),
    ...(row.next_at !== null && { nextAttemptAt: iso(row.next_at) }),
  };
}
