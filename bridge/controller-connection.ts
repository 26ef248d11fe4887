/** Connection helpers of the store controller: the first connect, and URLs safe to log. */
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
