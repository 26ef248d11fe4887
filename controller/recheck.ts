/**
 * The controller's second look before NO_ANSWER. A broker may drop messages to a subscriber that
 * falls behind (mosquitto's default `max_queued_messages 1000` does, with hundreds of registers
 * answering at once), but the device's statuses are retained (docs/mqtt.md), so the result
 * is still on the broker. Shortly before a submission's deadline the controller subscribes afresh
 * to `<ns>/devices/<id>/tasks/+/status` of each device still missing: a new subscription, or one
 * replacing an identical filter, makes the broker send the matching retained messages again
 * ([MQTT-3.3.1-6], [MQTT-3.8.4-3]), and they are handled like live ones. docs/controller.md.
 *
 * Filters are reference-counted over the submissions that asked for them and unsubscribed when
 * the last one ends; meanwhile a live status may arrive twice (once per matching subscription),
 * which the directory ignores (same seq).
 */
import type { ISubscriptionMap, MqttClient } from 'mqtt';
import { topics } from '../bridge/contract/topics.ts';
import type { Logger } from '../src/logger.ts';
import { topicPartsOf } from './store-keys.ts';
import { CONTROLLER_SUBSCRIBE_QOS } from './types.ts';

/** Filters per SUBSCRIBE packet: keeps one packet small with hundreds of devices missing. */
const FILTERS_PER_SUBSCRIBE = 100;

export class RetainedRecheck {
  private readonly ns: string;
  private readonly logger: Logger;
  private readonly holders = new Map<string, number>();

  constructor(ns: string, logger: Logger) {
    this.ns = ns;
    this.logger = logger;
  }

  /** Subscribes afresh to the status topics of `deviceIds`; returns the filters to release later. */
  request(client: MqttClient, deviceIds: readonly string[]): string[] {
    const filters = [...new Set(deviceIds)].map((id) => {
      const parts = topicPartsOf(this.ns, id);
      return topics.deviceTaskStatuses(parts.ns, parts.deviceId);
    });
    for (const filter of filters) this.holders.set(filter, (this.holders.get(filter) ?? 0) + 1);
    for (let i = 0; i < filters.length; i += FILTERS_PER_SUBSCRIBE) {
      const chunk = filters.slice(i, i + FILTERS_PER_SUBSCRIBE);
      // `resubscribe: true` makes mqtt.js send the SUBSCRIBE even for a filter it already holds
      // (another submission's recheck): the broker then replaces it and resends the retained.
      const request = Object.assign(
        Object.fromEntries(chunk.map((filter) => [filter, { qos: CONTROLLER_SUBSCRIBE_QOS }])),
        { resubscribe: true },
      ) as ISubscriptionMap;
      client.subscribe(request, (error) => {
        if (error)
          this.logger.warn({ err: error.message, filters: chunk.length }, 'recheck subscription failed');
      });
    }
    this.logger.debug({ devices: filters.length }, 'rechecking retained statuses before the deadline');
    return filters;
  }

  /** The submission ended: unsubscribes the filters no other submission still holds. */
  release(client: MqttClient | undefined, filters: readonly string[]): void {
    const drop: string[] = [];
    for (const filter of filters) {
      const count = (this.holders.get(filter) ?? 0) - 1;
      if (count > 0) this.holders.set(filter, count);
      else {
        this.holders.delete(filter);
        drop.push(filter);
      }
    }
    if (client && drop.length > 0) client.unsubscribe(drop);
  }

  clear(): void {
    this.holders.clear();
  }
}
