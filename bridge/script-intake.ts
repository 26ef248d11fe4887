/**
 * Scripts on `<ns>/devices/<id>/scripts` and `<ns>/groups/<g>/scripts` (docs/mqtt.md): the engine's
 * one admission path decides (TaskQueue.submit); only the retain flag and JSON shape are decided
 * here. Refusals are answered on the reply topic as `"<CODE>: <message>"`. Nothing here throws.
 */
import type { IPublishPacket } from 'mqtt';
import { coded, DomainError } from '../src/errors.ts';
import { decodeUtf8 } from '../src/tasks/script-text.ts';
import { statusOf } from '../src/tasks/task.ts';
import type { SubmitResult } from '../src/tasks/task-queue.ts';
import type { DevicePartOptions } from './bridge-link.ts';
import { decodePayload, type ScriptSubmission, scriptSubmissionSchema } from './contract/topics.ts';
import { looseRequestId, Replier } from './replies.ts';
import type { StatusPublisher } from './status-publisher.ts';

export type IntakeResult = 'accepted' | 'duplicate' | 'refused';

export interface ScriptIntakeOptions extends DevicePartOptions {
  statuses: StatusPublisher;
}

export class ScriptIntake {
  private readonly options: ScriptIntakeOptions;

  private readonly replies: Replier;

  constructor(options: ScriptIntakeOptions) {
    this.options = options;
    this.replies = new Replier(options.ns, options.deviceId, options.link, options.logger);
  }

  handle(topic: string, payload: Buffer, packet: IPublishPacket): IntakeResult {
    const { logger } = this.options;
    // What a refusal echoes: the decoded submission's requestId once it is valid, read leniently
    // from the payload only for a refusal before that.
    let submission: ScriptSubmission | undefined;
    const refuse = (error: string): IntakeResult => {
      const requestId = submission ? submission.requestId : looseRequestId(payload);
      logger.warn({ topic, requestId, error }, 'script submission refused');
      this.replies.refused(requestId, error);
      return 'refused';
    };

    // [MQTT-3.3.1-8]/[MQTT-3.3.1-9]: the retain flag is set only on messages the broker stored
    // earlier and hands to a new subscription, i.e. a submission from the past: never run it.
    if (packet.retain) {
      return refuse(
        coded(
          'RETAINED_SUBMISSION',
          'retained scripts are refused (the broker stored it earlier); publish scripts with retain=false',
        ),
      );
    }
    let result: SubmitResult;
    try {
      const decoded = decodePayload(scriptSubmissionSchema, decodeUtf8(payload, 'the payload'));
      if (!decoded.ok) return refuse(coded('INVALID_REQUEST', decoded.error));
      submission = decoded.value;
      result = this.options.queue.submit(submission.script, {
        source: 'mqtt',
        ...(submission.requestId !== undefined && { requestId: submission.requestId }),
        ...(submission.notAfter !== undefined && { notAfter: submission.notAfter }),
      });
    } catch (error) {
      if (error instanceof DomainError) return refuse(error.coded);
      logger.error({ err: error }, 'queue refused a script unexpectedly');
      return refuse(coded('INTERNAL_ERROR', (error as Error).message));
    }
    const { task, created } = result;
    const { requestId } = submission;
    if (!created) {
      // docs/mqtt.md: a requestId seen before executes nothing; republish and answer again.
      const held = this.options.queue.isHeld(task);
      this.options.logger[result.otherScript ? 'warn' : 'info'](
        { requestId, taskId: task.id, held, sameScript: !result.otherScript },
        'repeated requestId: nothing executed, answering with the first task',
      );
      if (held) this.options.statuses.publish(task);
      this.replies.accepted(requestId, task.id, statusOf(task.state));
      return 'duplicate';
    }
    logger.info(
      { topic, taskId: task.id, requestId, expired: task.state === 'failed' },
      'script queued from MQTT',
    );
    this.replies.accepted(requestId, task.id, statusOf(task.state));
    return 'accepted';
  }
}
