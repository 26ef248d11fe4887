/**
 * The engine's two idempotency rules, in one place: REST `Idempotency-Key` (docs/api.md: same key
 * and script is the same task while held, another script IDEMPOTENCY_CONFLICT) and MQTT `requestId`
 * (docs/mqtt.md: a repeat runs nothing; one cancelled before its script arrived is refused CANCELLED).
 */
import { DomainError } from '../errors.ts';
import { RequestIdMemory, type RequestRecord } from './request-ids.ts';
import type { Task } from './task.ts';

export interface Keys {
  idempotencyKey?: string | undefined;
  requestId?: string | undefined;
}

export interface Replay {
  task: Readonly<Task>;
  /** A repeated requestId came with another script than the first time. */
  otherScript?: boolean;
}

export class Idempotency {
  private readonly byIdempotencyKey = new Map<string, Readonly<Task>>();
  private readonly requestIds: RequestIdMemory;

  constructor(requestIdMemory: number) {
    this.requestIds = new RequestIdMemory(requestIdMemory);
  }

  /** The earlier task these keys name, if any; throws IDEMPOTENCY_CONFLICT. */
  replay(keys: Keys, scriptHash: string | undefined): Replay | undefined {
    if (keys.idempotencyKey !== undefined) {
      const existing = this.byIdempotencyKey.get(keys.idempotencyKey);
      if (existing) {
        if (existing.scriptHash !== scriptHash) {
          throw new DomainError(
            'IDEMPOTENCY_CONFLICT',
            `Idempotency-Key was first used for task ${existing.id} with a different script`,
            { details: { id: existing.id } },
          );
        }
        return { task: existing };
      }
    }
    if (keys.requestId !== undefined) {
      const record = this.requestIds.get(keys.requestId);
      if (record?.kind === 'cancelled') {
        throw new DomainError(
          'CANCELLED',
          `requestId ${keys.requestId} was cancelled before its script arrived; nothing runs`,
        );
      }
      if (record) {
        return { task: record.task, ...(record.scriptHash !== scriptHash && { otherScript: true }) };
      }
    }
    return undefined;
  }

  /** The task a requestId names (maybe an evicted copy), or that it was cancelled unseen. */
  requestRecord(requestId: string): RequestRecord | undefined {
    return this.requestIds.get(requestId);
  }

  /** A cancel for a requestId not seen yet: remember it, so its script never runs. */
  cancelUnseen(requestId: string, at: Date): void {
    this.requestIds.remember(requestId, { kind: 'cancelled', at });
  }

  /** A new task was created with these keys (its own `scriptHash` is set when it has any). */
  created(task: Readonly<Task>): void {
    if (task.idempotencyKey !== undefined) this.byIdempotencyKey.set(task.idempotencyKey, task);
    if (task.requestId !== undefined) {
      this.requestIds.remember(task.requestId, { kind: 'task', task, scriptHash: task.scriptHash ?? '' });
    }
  }

  /** The task left the queue: its Idempotency-Key is free again; its requestId is still remembered. */
  evicted(task: Readonly<Task>): void {
    const key = task.idempotencyKey;
    if (key !== undefined && this.byIdempotencyKey.get(key) === task) this.byIdempotencyKey.delete(key);
    this.requestIds.evicted(task);
  }
}
