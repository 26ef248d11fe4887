/**
 * What the bridge's parts (status publisher, script intake, stale sweeper) need from the MQTT
 * connection: whether it is usable now, and a fire-and-forget QoS 1 publish. Kept apart from
 * mqtt.js so each part stays small and testable on its own.
 */
import type { IPublishPacket } from 'mqtt';
import type { Logger } from 'pino';
import type { TaskQueue } from '../src/tasks/task-queue.ts';

export type OutKind = 'state' | 'status' | 'clear' | 'reply';

export interface PublishOptions {
  retain: boolean;
  /** MQTT 5 only (correlation data of a reply); ignored on 3.1.1. */
  properties?: IPublishPacket['properties'];
}

export interface BridgeLink {
  /** True from the handling of CONNACK until the connection closes. */
  readonly online: boolean;
  /** QoS 1 messages handed over and not yet acknowledged by the broker (all kinds). */
  readonly inFlight: number;
  /**
   * QoS 1 publish; never throws: errors are logged by the bridge. `onDone` is called once, when
   * the broker acknowledged the message or it failed for good (its flow-control hook).
   */
  publish(
    topic: string,
    payload: string | Buffer,
    options: PublishOptions,
    kind: OutKind,
    onDone?: (error?: Error) => void,
  ): void;
}

/** What the device's intakes and stale sweeper share: the device, its queue, the link, the log. */
export interface DevicePartOptions {
  ns: string;
  deviceId: string;
  queue: TaskQueue;
  link: BridgeLink;
  logger: Logger;
}
