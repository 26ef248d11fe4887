/**
 * The wait of DeviceBridge.start() (bridge/device-bridge.ts) for its first connection: ready,
 * given up for now (the broker stays unreachable; mqtt.js keeps retrying), or refused for good.
 */
import { ErrorWithReasonCode, type MqttClient } from 'mqtt';

/** CONNACK refusals that retrying cannot fix: start() fails with them (3.1.1 codes 1, 2, 4, 5; MQTT 5 0x84-0x87, 0x8C). */
const FATAL_CONNACK_CODES = new Set([1, 2, 4, 5, 0x84, 0x85, 0x86, 0x87, 0x8c]);

export interface FirstConnectInput {
  /** Resolves once the first connection is usable (its script subscriptions acknowledged). */
  ready: () => Promise<void>;
  timeoutMs: number;
  /** A refusal the bridge answers itself (`--mqtt-protocol auto` falling back to 3.1.1): not fatal. */
  recoverable?: (error: Error) => boolean;
  /** The broker still unreachable after `timeoutMs`: start() resolves anyway. */
  onTimeout: () => void;
  /** A refusal retrying cannot fix: give up the client; returns the error start() rejects with. */
  onFatal: (error: Error) => Error;
}

export interface FirstConnectWait {
  done: Promise<void>;
  /** Clears the time-out (the bridge stopped, or gave up, before it fired). */
  cancelTimer: () => void;
}

/**
 * Listens for the first CONNACK or a fatal refusal. Add the bridge's own connect handler before
 * calling this: it subscribes, and `ready` waits for that.
 */
export function waitForFirstConnect(client: MqttClient, input: FirstConnectInput): FirstConnectWait {
  let timer: NodeJS.Timeout | undefined;
  const cancelTimer = (): void => {
    clearTimeout(timer);
    timer = undefined;
  };
  const done = new Promise<void>((resolve, reject) => {
    const settle = (error?: Error): void => {
      cancelTimer();
      client.removeListener('connect', onFirstConnect);
      client.removeListener('error', onFirstError);
      if (error) reject(error);
      else resolve();
    };
    const onFirstConnect = (): void => {
      // wire()'s connect handler ran first and subscribed: ready means scripts can arrive.
      void input.ready().then(() => settle());
    };
    const onFirstError = (error: Error): void => {
      if (!(error instanceof ErrorWithReasonCode) || !FATAL_CONNACK_CODES.has(error.code)) return;
      if (input.recoverable?.(error)) return;
      settle(input.onFatal(error));
    };
    timer = setTimeout(() => {
      input.onTimeout();
      settle();
    }, input.timeoutMs);
    client.on('connect', onFirstConnect);
    client.on('error', onFirstError);
  });
  return { done, cancelTimer };
}
