/**
 * Answers to what controllers send a device (scripts, cancels; docs/mqtt.md, docs/api.md):
 * where they go (`replyTo` of the payload and, with MQTT 5, the response topic property with its
 * correlation data) and how they are published (QoS 1, not retained). A refusal is answered from
 * a payload that may be invalid, so the fields it needs are read leniently first.
 */
import type { IPublishPacket } from 'mqtt';
import type { TaskStatus } from '../src/tasks/task.ts';
import type { BridgeLink } from './bridge-link.ts';
import {
  type ReplyAccepted,
  type ReplyRefused,
  replyTopicProblem,
  replyTopicSchema,
  requestIdSchema,
} from './contract/topics.ts';

export interface ReplyTarget {
  topic: string;
  correlationData?: Buffer;
}

/**
 * Where answers go: `replyTo` of the payload and, with MQTT 5, the response topic property;
 * never a topic under `<ns>/devices/` or `<ns>/groups/` (replyTopicProblem: a reply there would
 * overwrite a state or status, or land on a script or cancel topic).
 */
export function replyTargets(
  ns: string,
  packet: IPublishPacket,
  replyTo: string | undefined,
  protocolVersion: 4 | 5,
): ReplyTarget[] {
  const targets: ReplyTarget[] = [];
  const properties = protocolVersion === 5 ? packet.properties : undefined;
  const correlationData = properties?.correlationData;
  const responseTopic = properties?.responseTopic;
  const validResponse =
    responseTopic !== undefined &&
    replyTopicSchema.safeParse(responseTopic).success &&
    replyTopicProblem(ns, responseTopic) === undefined;
  if (replyTo !== undefined && replyTopicProblem(ns, replyTo) === undefined) {
    targets.push({
      topic: replyTo,
      // [MQTT-3.3.2.3.6] correlation data travels with the answer to the response topic; when
      // replyTo is that same topic one answer carries it.
      ...(validResponse && responseTopic === replyTo && correlationData && { correlationData }),
    });
  }
  if (validResponse && responseTopic !== replyTo) {
    targets.push({ topic: responseTopic, ...(correlationData && { correlationData }) });
  }
  return targets;
}

/** Best effort from a payload that may be invalid: where to send the refusal, what to echo. */
export function looseFields(payload: Buffer): { requestId?: string; replyTo?: string } {
  let raw: unknown;
  try {
    raw = JSON.parse(payload.toString('utf8'));
  } catch {
    return {};
  }
  if (typeof raw !== 'object' || raw === null) return {};
  const { requestId, replyTo } = raw as Record<string, unknown>;
  const fields: { requestId?: string; replyTo?: string } = {};
  if (requestIdSchema.safeParse(requestId).success) fields.requestId = requestId as string;
  if (replyTopicSchema.safeParse(replyTo).success) fields.replyTo = replyTo as string;
  return fields;
}

/** Publishes replies of one device. */
export class Replier {
  private readonly deviceId: string;
  private readonly link: BridgeLink;

  constructor(deviceId: string, link: BridgeLink) {
    this.deviceId = deviceId;
    this.link = link;
  }

  accepted(
    targets: readonly ReplyTarget[],
    requestId: string | undefined,
    id: number,
    status: TaskStatus,
  ): void {
    const body: ReplyAccepted = {
      ...(requestId !== undefined && { requestId }),
      deviceId: this.deviceId,
      id,
      status,
    };
    this.send(targets, body);
  }

  /** `error` starts with its registered code: `"<CODE>: <message>"`. */
  refused(targets: readonly ReplyTarget[], requestId: string | undefined, error: string): void {
    const body: ReplyRefused = {
      ...(requestId !== undefined && { requestId }),
      deviceId: this.deviceId,
      error,
    };
    this.send(targets, body);
  }

  private send(targets: readonly ReplyTarget[], body: ReplyAccepted | ReplyRefused): void {
    if (targets.length === 0) return;
    const payload = JSON.stringify(body);
    for (const target of targets) {
      this.link.publish(
        target.topic,
        payload,
        {
          retain: false,
          ...(target.correlationData && { properties: { correlationData: target.correlationData } }),
        },
        'reply',
      );
    }
  }
}
