/**
 * The components of the device bridge (bridge/device-bridge.ts), built together by its
 * constructor and wired to one another: metrics, the MQTT link, status publisher, script and cancel
 * intakes, stale sweeper, presence guard, retained state check and status audit; and where an
 * incoming message goes (routeMessage: the component that handles it).
 */
import type { IPublishPacket, MqttClient } from 'mqtt';
import type { Logger } from 'pino';
import { type BridgeMetrics, bridgeMetrics } from './bridge-metrics.ts';
import type { DeviceBridgeOptions } from './bridge-options.ts';
import { subscribeEach } from './broker-session.ts';
import { CancelIntake } from './cancel-intake.ts';
import { parseTopic, topics } from './contract/topics.ts';
import { MqttLink } from './mqtt-link.ts';
import { PresenceGuard } from './presence-guard.ts';
import { ScriptIntake } from './script-intake.ts';
import { StaleStatusSweeper } from './stale-sweeper.ts';
import { RetainedStateCheck } from './state-check.ts';
import { RetainedStatusAudit } from './status-audit.ts';
import { StatusPublisher } from './status-publisher.ts';

export interface BridgeParts {
  metrics: BridgeMetrics;
  link: MqttLink;
  statuses: StatusPublisher;
  intake: ScriptIntake;
  cancels: CancelIntake;
  sweeper: StaleStatusSweeper;
  presence: PresenceGuard;
  stateCheck: RetainedStateCheck;
  /** Only when auditing retained statuses (several brokers, or `auditRetained`). */
  audit: RetainedStatusAudit | undefined;
}

export interface BridgePartsInput {
  options: DeviceBridgeOptions;
  bootId: string;
  logger: Logger;
  protocolVersion: () => 4 | 5;
  /** The bridge's client once connect() created it (the sweeper subscribes through it). */
  client: () => MqttClient | undefined;
  /** The bridge's phase is `connected` (the presence guard also asks the link). */
  connected: () => boolean;
  /** Publishes the bridge's online state again (the presence guard's answer to a stray offline); `onAck` at its PUBACK. */
  republish: (onAck?: () => void) => void;
  /** Audit the retained end statuses (status-audit.ts). */
  auditRetained: boolean;
}

export function createBridgeParts(input: BridgePartsInput): BridgeParts {
  const { options: o, bootId, logger, protocolVersion } = input;
  const metrics = bridgeMetrics(o.registry);
  const link = new MqttLink({ logger, metrics, protocolVersion });
  const statuses = new StatusPublisher({
    ns: o.ns,
    deviceId: o.deviceId,
    bootId,
    link,
    logger,
    getTask: (id) => o.queue.get(id),
    ...(o.maxStatusesInFlight !== undefined && { maxInFlight: o.maxStatusesInFlight }),
  });
  const own = { ns: o.ns, deviceId: o.deviceId, queue: o.queue, link, logger };
  const intake = new ScriptIntake({ ...own, statuses });
  const cancels = new CancelIntake(own);
  const ownStatuses = (filter: string, done: (error?: Error) => void): void => {
    const client = input.client();
    if (!client) return;
    // QoS 0: only the retained messages matter; nothing to acknowledge or keep in the session.
    void subscribeEach(client, [filter], logger, 0).then((refused) =>
      done(refused.length > 0 ? new Error(`subscription to ${filter} failed`) : undefined),
    );
  };
  const unsubscribe = (filter: string): void => void input.client()?.unsubscribe(filter);
  const sweeper = new StaleStatusSweeper({ ...own, subscribe: ownStatuses, unsubscribe });
  const presence = new PresenceGuard({
    bootId,
    online: () => input.connected() && link.online,
    republish: input.republish,
    logger,
  });
  const stateCheck = new RetainedStateCheck({
    bootId,
    logger,
    publishState: (onAck) => input.republish(onAck),
    republishStatuses: () => statuses.flush(o.queue.list()),
    readBack: () => {
      const client = input.client();
      // A fresh SUBSCRIBE (QoS 0) makes the broker send the topic's retained message.
      if (client) void subscribeEach(client, [topics.state(o.ns, o.deviceId)], logger, 0);
    },
  });
  const audit = input.auditRetained
    ? new RetainedStatusAudit({
        bootId,
        filter: topics.deviceTaskStatuses(o.ns, o.deviceId),
        logger,
        held: () => o.queue.list(),
        online: () => input.connected() && link.online,
        busy: () => sweeper.sweeping,
        subscribe: ownStatuses,
        unsubscribe,
        republish: (task) => statuses.publish(task),
      })
    : undefined;
  return { metrics, link, statuses, intake, cancels, sweeper, presence, stateCheck, audit };
}

/** Hands one incoming message to the part it is for (own statuses, own state, scripts, cancels). */
export function routeMessage(
  parts: BridgeParts,
  target: { ns: string; deviceId: string; groups: readonly string[] },
  client: MqttClient,
  logger: Logger,
  message: { topic: string; payload: Buffer; packet: IPublishPacket },
): void {
  const { topic, payload, packet } = message;
  const parsed = parseTopic(target.ns, topic);
  const metrics = parts.metrics;
  if (parsed?.kind === 'taskStatus' && parsed.deviceId === target.deviceId) {
    parts.sweeper.handle(parsed.taskId, payload, packet);
    parts.audit?.handle(parsed.taskId, payload, packet);
    return;
  }
  if (parsed?.kind === 'state' && parsed.deviceId === target.deviceId) {
    parts.presence.handle(payload);
    parts.stateCheck.handle(payload, packet.retain);
    return;
  }
  const ownScripts =
    (parsed?.kind === 'deviceScripts' && parsed.deviceId === target.deviceId) ||
    (parsed?.kind === 'groupScripts' && target.groups.includes(parsed.group));
  if (ownScripts) {
    metrics.countIn('script', parts.intake.handle(topic, payload, packet));
    return;
  }
  const cancelScope =
    parsed?.kind === 'deviceCancel' && parsed.deviceId === target.deviceId
      ? 'device'
      : parsed?.kind === 'groupCancel' && target.groups.includes(parsed.group)
        ? 'group'
        : undefined;
  if (cancelScope) {
    metrics.countIn('cancel', parts.cancels.handle(topic, cancelScope, payload, packet));
    return;
  }
  // A subscription left in the persistent session by an earlier configuration (other groups).
  metrics.countIn('other', 'ignored');
  logger.info({ topic }, 'message on a topic this device no longer uses; unsubscribing');
  if (parsed?.kind === 'groupScripts' || parsed?.kind === 'groupCancel') client.unsubscribe(topic);
}
