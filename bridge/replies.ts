/**
 * Answers to scripts and cancels (docs/mqtt.md) go to the device's own
 * `<ns>/devices/<deviceId>/replies/<requestId>` (QoS 1, not retained), so no register answers for
 * another; `replyTo` and MQTT 5 response topics are ignored. A refusal's payload may be invalid,
 * so its requestId is read leniently.
 */
import type { Logger } from 'pino';
import type { TaskStatus } from '../src/tasks/task.ts';
import type { BridgeLink } from './bridge-link.ts';
import {
  isReplyLevel,
  type ReplyAccepted,
  type ReplyRefused,
  requestIdSchema,
  topics,
} from './contract/topics.ts';

/** Best effort from a payload that may be invalid: the requestId to echo in a refusal. */
export function looseRequestId(payload: Buffer): string | undefined {
  let raw: unknown;
  try {
    raw = JSON.parse(payload.toString('utf8'));
  } catch {
    return undefined;
  }
  if (typeof raw !== 'object' || raw === null) return undefined;
  const { requestId } = raw as Record<string, unknown>;
  return requestIdSchema.safeParse(requestId).success ? (requestId as string) : undefined;
}

/** Publishes replies of one device. */
export class Replier {
  private readonly ns: string;
  private readonly deviceId: string;
  private readonly link: BridgeLink;
  private readonly logger: Logger;

  constructor(ns: string, deviceId: string, link: BridgeLink, logger: Logger) {
    this.ns = ns;
    this.deviceId = deviceId;
    this.link = link;
    this.logger = logger;
  }

  accepted(requestId: string | undefined, id: number, status: TaskStatus): void {
    if (requestId === undefined) return;
    const body: ReplyAccepted = { requestId, deviceId: this.deviceId, id, status };
    this.send(requestId, body);
  }

  /** `error` starts with its registered code: `"<CODE>: <message>"`. */
  refused(requestId: string | undefined, error: string): void {
    if (requestId === undefined) return;
    const body: ReplyRefused = { requestId, deviceId: this.deviceId, error };
    this.send(requestId, body);
  }

  private send(requestId: string, body: ReplyAccepted | ReplyRefused): void {
    if (!isReplyLevel(requestId)) {
      this.logger.warn({ requestId }, 'no reply: the requestId cannot be a topic level (/, +, # or NUL)');
      return;
    }
    this.link.publish(
      topics.deviceReply(this.ns, this.deviceId, requestId),
      JSON.stringify(body),
      { retain: false },
      'reply',
    );
  }
}
