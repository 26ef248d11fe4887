/**
 * Cancels on `<ns>/devices/<id>/cancel` and `<ns>/groups/<g>/cancel` (docs/api.md, "Cancel"):
 * read the payload, let the engine cancel (a running task is never cut), and answer on the
 * device's reply topic (replies.ts). A cancel for an unseen requestId is remembered by the engine
 * and answered `TASK_DOES_NOT_EXIST`. Nothing here throws.
 */
import type { IPublishPacket } from 'mqtt';
import { coded, DomainError } from '../src/errors.ts';
import { decodeUtf8 } from '../src/tasks/script-text.ts';
import { statusOf, type Task } from '../src/tasks/task.ts';
import type { DevicePartOptions } from './bridge-link.ts';
import { decodePayload, deviceCancelSchema, groupCancelSchema } from './contract/topics.ts';
import { looseRequestId, Replier } from './replies.ts';

export type CancelResult = 'accepted' | 'remembered' | 'refused';

export type CancelIntakeOptions = DevicePartOptions;

export class CancelIntake {
  private readonly options: CancelIntakeOptions;
  private readonly replies: Replier;

  constructor(options: CancelIntakeOptions) {
    this.options = options;
    this.replies = new Replier(options.ns, options.deviceId, options.link, options.logger);
  }

  /** `scope`: the device's own cancel topic, or one of its groups'. */
  handle(topic: string, scope: 'device' | 'group', payload: Buffer, packet: IPublishPacket): CancelResult {
    const { logger, queue } = this.options;
    const looseId = looseRequestId(payload);
    const refuse = (error: string, level: 'info' | 'warn' = 'warn'): CancelResult => {
      logger[level]({ topic, requestId: looseId, error }, 'cancel refused');
      this.replies.refused(looseId, error);
      return 'refused';
    };

    // As for scripts: a retained delivery is a cancel from the past (the broker stored it).
    if (packet.retain) {
      return refuse(
        coded(
          'RETAINED_SUBMISSION',
          'retained cancels are refused (the broker stored it earlier); publish cancels with retain=false',
        ),
      );
    }
    const reason = `cancelled over MQTT (${topic}) before it started`;
    let task: Readonly<Task>;
    let requestId: string | undefined;
    try {
      const text = decodeUtf8(payload, 'the payload');
      const decoded =
        scope === 'device' ? decodePayload(deviceCancelSchema, text) : decodePayload(groupCancelSchema, text);
      if (!decoded.ok) return refuse(coded('INVALID_REQUEST', decoded.error));
      requestId = decoded.value.requestId;
      if (requestId === undefined) {
        task = queue.cancel(decoded.value.id!, reason);
      } else {
        const result = queue.cancelRequest(requestId, reason);
        if (result.remembered) {
          const error = coded(
            'TASK_DOES_NOT_EXIST',
            `no task has requestId ${requestId} yet; the cancel is remembered, so a script arriving with it will not run`,
          );
          logger.info({ topic, requestId }, 'cancel remembered for a requestId not seen yet');
          this.replies.refused(requestId, error);
          return 'remembered';
        }
        task = result.task;
      }
    } catch (error) {
      // TASK_RUNNING / TASK_ENDED / TASK_DOES_NOT_EXIST are ordinary answers to a controller's abort.
      if (error instanceof DomainError)
        return refuse(error.coded, error.code.startsWith('TASK_') ? 'info' : 'warn');
      logger.error({ err: error }, 'cancel failed unexpectedly');
      return refuse(coded('INTERNAL_ERROR', (error as Error).message));
    }
    logger.info({ topic, taskId: task.id, requestId }, 'task cancelled over MQTT');
    this.replies.accepted(requestId, task.id, statusOf(task.state));
    return 'accepted';
  }
}
