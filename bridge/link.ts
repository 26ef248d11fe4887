/**
 * What the bridge's parts (status publisher, script intake, stale sweeper) need from the MQTT
 * connection: whether it is usable now, and a fire-and-forget QoS 1 publish. Kept apart from
 * mqtt.js so each part stays small and testable on its own.
 */
import type { IPublishPacket } from 'mqtt';

export type OutKind = 'state' | 'status' | 'clear' | 'reply';

export interface PublishOptions {
  retain: boolean;
  /** MQTT 5 only (correlation data of a reply); ignored on 3.1.1. */
  properties?: IPublishPacket['properties'];
}

export interface BridgeLink {
  /** True from the handling of CONNACK until the connection closes. */
  readonly online: boolean;
  /** QoS 1 publish; never throws: errors are logged by the bridge. */
  publish(topic: string, payload: string | Buffer, options: PublishOptions, kind: OutKind): void;
}
