/**
 * Scripts arriving on `<ns>/devices/<id>/scripts` and `<ns>/groups/<g>/scripts` (contract
 * section 3): validate, refuse or submit to the queue, and answer on `replyTo` and/or the MQTT 5
 * response topic. Nothing here throws: a bad message is logged and answered, never a crash.
 *
 * Refusal errors start with a code, like the EXPIRED error of a stale script:
 * `RETAINED_SUBMISSION`, `INVALID_REQUEST`, `SCRIPT_TOO_LARGE`, `QUEUE_FULL`, `INTERNAL_ERROR`.
 */
import type { IPublishPacket } from 'mqtt';
import type { Logger } from 'pino';
import { ApiError } from '../src/errors.ts';
import { statusOf, type Task, type TaskStatus } from '../src/tasks/task.ts';
import { hashScript, type TaskQueue } from '../src/tasks/task-queue.ts';
import type { BridgeLink } from './bridge-link.ts';
import {
  decodePayload,
  type ReplyAccepted,
  type ReplyRefused,
  replyTopicSchema,
  requestIdSchema,
  scriptSubmissionSchema,
} from './contract/topics.ts';
import type { RequestIdMemory } from './request-ids.ts';
import type { StatusPublisher } from './status-publisher.ts';

export type IntakeResult = 'accepted' | 'duplicate' | 'refused';

export interface ScriptIntakeOptions {
  deviceId: string;
  queue: TaskQueue;
  requestIds: RequestIdMemory;
  statuses: StatusPublisher;
  link: BridgeLink;
  logger: Logger;
  maxScriptBytes: number;
  protocolVersion: 4 | 5;
}

interface ReplyTarget {
  topic: string;
  correlationData?: Buffer;
}

/** Where answers go: `replyTo` of the payload and, with MQTT 5, the response topic property. */
function replyTargets(
  packet: IPublishPacket,
  replyTo: string | undefined,
  protocolVersion: 4 | 5,
): ReplyTarget[] {
  const targets: ReplyTarget[] = [];
  const properties = protocolVersion === 5 ? packet.properties : undefined;
  const correlationData = properties?.correlationData;
  const responseTopic = properties?.responseTopic;
  const validResponse = responseTopic !== undefined && replyTopicSchema.safeParse(responseTopic).success;
  if (replyTo !== undefined) {
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
function looseFields(payload: Buffer): { requestId?: string; replyTo?: string } {
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

export class ScriptIntake {
  private readonly options: ScriptIntakeOptions;

  constructor(options: ScriptIntakeOptions) {
    this.options = options;
  }

  handle(topic: string, payload: Buffer, packet: IPublishPacket): IntakeResult {
    const { logger, maxScriptBytes, protocolVersion } = this.options;
    const loose = looseFields(payload);
    const targets = replyTargets(packet, loose.replyTo, protocolVersion);
    const refuse = (error: string, details: Record<string, unknown> = {}): IntakeResult => {
      logger.warn({ topic, requestId: loose.requestId, ...details, error }, 'script submission refused');
      this.reply(targets, {
        ...(loose.requestId !== undefined && { requestId: loose.requestId }),
        deviceId: this.options.deviceId,
        error,
      });
      return 'refused';
    };

    // [MQTT-3.3.1-8]/[MQTT-3.3.1-9]: the retain flag is set only on messages the broker stored
    // earlier and hands to a new subscription, i.e. a submission from the past: never run it.
    if (packet.retain) {
      return refuse(
        'RETAINED_SUBMISSION: retained scripts are refused (the broker stored it earlier); publish scripts with retain=false',
      );
    }
    const decoded = decodePayload(scriptSubmissionSchema, payload);
    if (!decoded.ok) return refuse(`INVALID_REQUEST: ${decoded.error}`);
    const submission = decoded.value;
    const bytes = Buffer.byteLength(submission.script, 'utf8');
    if (bytes > maxScriptBytes) {
      return refuse(`SCRIPT_TOO_LARGE: the script has ${bytes} bytes; the limit is ${maxScriptBytes}`);
    }
    const { requestId } = submission;
    if (requestId !== undefined) {
      const repeat = this.repeat(requestId, submission.script, targets);
      if (repeat) return repeat;
    }

    const notAfter = submission.notAfter;
    const failWith =
      notAfter !== undefined && notAfter < Date.now()
        ? `EXPIRED: notAfter ${new Date(notAfter).toISOString()} passed before the device received the script`
        : undefined;
    let task: Readonly<Task>;
    try {
      ({ task } = this.options.queue.submit(submission.script, {
        source: 'mqtt',
        ...(requestId !== undefined && { requestId }),
        ...(failWith !== undefined && { failWith }),
      }));
    } catch (error) {
      if (error instanceof ApiError) return refuse(`${error.code}: ${error.message}`);
      logger.error({ err: error }, 'queue refused a script unexpectedly');
      return refuse(`INTERNAL_ERROR: ${(error as Error).message}`);
    }
    const status = statusOf(task.state);
    if (requestId !== undefined) {
      this.options.requestIds.remember(requestId, {
        taskId: task.id,
        scriptHash: task.scriptHash ?? hashScript(submission.script),
        status,
      });
    }
    logger.info(
      { topic, taskId: task.id, requestId, expired: failWith !== undefined },
      'script queued from MQTT',
    );
    this.accept(targets, requestId, task.id, status);
    return 'accepted';
  }

  /** Contract section 3: a requestId seen before executes nothing; republish and answer again. */
  private repeat(requestId: string, script: string, targets: ReplyTarget[]): IntakeResult | undefined {
    const record = this.options.requestIds.get(requestId);
    if (!record) return undefined;
    const task = this.options.queue.get(record.taskId);
    const sameScript = hashScript(script) === record.scriptHash;
    this.options.logger[sameScript ? 'info' : 'warn'](
      { requestId, taskId: record.taskId, held: task !== undefined, sameScript },
      'repeated requestId: nothing executed, answering with the first task',
    );
    let status: TaskStatus = record.status;
    if (task) {
      status = statusOf(task.state);
      this.options.statuses.publish(task);
    }
    this.accept(targets, requestId, record.taskId, status);
    return 'duplicate';
  }

  private accept(
    targets: ReplyTarget[],
    requestId: string | undefined,
    id: number,
    status: TaskStatus,
  ): void {
    const body: ReplyAccepted = {
      ...(requestId !== undefined && { requestId }),
      deviceId: this.options.deviceId,
      id,
      status,
    };
    this.reply(targets, body);
  }

  private reply(targets: ReplyTarget[], body: ReplyAccepted | ReplyRefused): void {
    const payload = JSON.stringify(body);
    for (const target of targets) {
      this.options.link.publish(
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
