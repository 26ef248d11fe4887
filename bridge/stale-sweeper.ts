/**
 * Clears status topics left on the broker by earlier boots of this device (their tasks answer
 * TASK_DOES_NOT_EXIST, docs/api.md): once per boot it subscribes to its own `tasks/+/status`,
 * clears every retained status the queue does not hold, and unsubscribes once they stop coming.
 */
import type { IPublishPacket } from 'mqtt';
import type { DevicePartOptions } from './bridge-link.ts';
import { BRIDGE_DEFAULTS } from './bridge-options.ts';
import { topics } from './contract/topics.ts';

export interface StaleSweeperOptions extends DevicePartOptions {
  subscribe(filter: string, done: (error?: Error) => void): void;
  unsubscribe(filter: string): void;
  /** Unsubscribe after this long without a stale message (ms). */
  quietMs?: number;
  /** Unsubscribe at the latest this long after the subscription was granted (ms). */
  maxMs?: number;
}

export class StaleStatusSweeper {
  private readonly options: StaleSweeperOptions;
  private readonly filter: string;
  private quietTimer: NodeJS.Timeout | undefined;
  private maxTimer: NodeJS.Timeout | undefined;
  private active = false;
  private cleared = 0;

  constructor(options: StaleSweeperOptions) {
    this.options = options;
    this.filter = topics.deviceTaskStatuses(options.ns, options.deviceId);
  }

  get clearedCount(): number {
    return this.cleared;
  }

  get sweeping(): boolean {
    return this.active;
  }

  begin(): void {
    if (this.active) return;
    this.active = true;
    this.options.subscribe(this.filter, (error) => {
      if (!this.active) return;
      if (error) {
        // Not fatal: a broker may forbid the device to read its own topics.
        this.options.logger.warn({ err: error.message }, 'could not sweep stale status topics');
        this.active = false;
        return;
      }
      this.maxTimer = setTimeout(() => this.end(), this.options.maxMs ?? BRIDGE_DEFAULTS.sweepMaxMs);
      this.armQuietTimer();
    });
  }

  /** A message on this device's status filter; only retained ones are from the past. */
  handle(taskId: number, payload: Buffer, packet: IPublishPacket): void {
    if (!this.active || !packet.retain || payload.length === 0) return;
    if (this.options.queue.get(taskId)) return;
    this.cleared += 1;
    this.options.link.publish(
      topics.taskStatus(this.options.ns, this.options.deviceId, taskId),
      Buffer.alloc(0),
      { retain: true },
      'clear',
    );
    this.armQuietTimer();
  }

  /** Ends the sweep (also from stop()): clears both timers and drops the subscription. */
  end(): void {
    clearTimeout(this.quietTimer);
    clearTimeout(this.maxTimer);
    this.quietTimer = undefined;
    this.maxTimer = undefined;
    if (!this.active) return;
    this.active = false;
    if (this.cleared > 0)
      this.options.logger.info({ cleared: this.cleared }, 'cleared status topics of earlier boots');
    this.options.unsubscribe(this.filter);
  }

  private armQuietTimer(): void {
    clearTimeout(this.quietTimer);
    this.quietTimer = setTimeout(() => this.end(), this.options.quietMs ?? BRIDGE_DEFAULTS.sweepQuietMs);
  }
}
