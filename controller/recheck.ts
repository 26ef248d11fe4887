/**
 * The controller's second look before NO_ANSWER: a broker may drop messages to a slow subscriber,
 * but statuses are retained, so shortly before the deadline it subscribes afresh to the missing
 * devices' status topics and the broker resends them ([MQTT-3.3.1-6], [MQTT-3.8.4-3]).
 * Filters are reference-counted over submissions; a duplicate live status is ignored (same seq).
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
