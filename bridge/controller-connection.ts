/**
 * Connection helpers of the store controller: the first connect, the wait for retained
 * messages after subscribing, and URLs safe to log.
 */
import type { MqttClient } from 'mqtt';

/** The broker URL without credentials, for logs and messages (passwords never reach a log). */
export function redactUrl(url: string): string {
  try {
    const parsed = new URL(url);
    parsed.username = '';
    parsed.password = '';
    return parsed.toString();
  } catch {
    return '<invalid url>';
  }
}

/**
 * Resolves on the first CONNACK; rejects on an error (refused, bad credentials) or a close before
 * it. The client is created with reconnectPeriod 0, so a wrong URL fails fast instead of retrying.
 */
export function firstConnect(client: MqttClient): Promise<void> {
  return new Promise((resolve, reject) => {
    const done = (error?: Error): void => {
      client.off('connect', onConnect);
      client.off('error', onError);
      client.off('close', onClose);
      if (error) reject(error);
      else resolve();
    };
    const onConnect = (): void => done();
    const onError = (error: Error): void => done(error);
    const onClose = (): void => done(new Error('connection closed before CONNACK'));
    client.on('connect', onConnect);
    client.on('error', onError);
    client.on('close', onClose);
  });
}

/**
 * Waits until `lastActivity()` is at least `quietMs` old (no more retained messages coming), or
 * `maxMs` passed, or cancel() was called. One wait at a time; cancel() clears its timer.
 */
export class QuietWait {
  private timer: NodeJS.Timeout | undefined;
  private finish: (() => void) | undefined;

  wait(lastActivity: () => number, quietMs: number, maxMs: number): Promise<void> {
    const giveUpAt = Date.now() + maxMs;
    return new Promise((resolve) => {
      this.finish = () => {
        if (this.timer) clearTimeout(this.timer);
        this.timer = undefined;
        this.finish = undefined;
        resolve();
      };
      const check = (): void => {
        const quietFor = Date.now() - lastActivity();
        if (quietFor >= quietMs || Date.now() >= giveUpAt) this.finish?.();
        else this.timer = setTimeout(check, Math.min(quietMs - quietFor, giveUpAt - Date.now()));
      };
      this.timer = setTimeout(check, quietMs);
    });
  }

  cancel(): void {
    this.finish?.();
  }
}
