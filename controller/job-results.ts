/**
 * From what the store controller learns to a job's result (pure): a submission's result, and
 * after a restart, what the retained statuses already say about a script sent before it.
 */
import type { JobResult, ResultStatus, StoredResult } from './job-types.ts';
import type { DeviceEntry, FanoutResult, TaskView } from './types.ts';

export type Outcome = Partial<StoredResult> & { status: ResultStatus };

/** A cancelled task ends FAILURE with an error starting `CANCELLED` (device cancel rule). */
function isCancelled(error: string): boolean {
  return /^CANCELLED\b/.test(error);
}

/** One register's submission result as the job's result. */
export function resultOf(fanout: FanoutResult): Outcome {
  switch (fanout.status) {
    case 'FINISHED':
      return { status: 'FINISHED', taskId: fanout.taskId, report: fanout.report };
    case 'FAILURE':
      return {
        status: isCancelled(fanout.error) ? 'CANCELLED' : 'FAILURE',
        error: fanout.error,
        ...(fanout.taskId !== undefined && { taskId: fanout.taskId }),
      };
    case 'NO_ANSWER':
      return {
        status: 'NO_ANSWER',
        error: fanout.detail,
        ...(fanout.taskId !== undefined && { taskId: fanout.taskId }),
      };
    case 'OFFLINE':
      return { status: 'OFFLINE', error: 'not online when sent' };
  }
}

function fromTask(view: TaskView): Outcome | undefined {
  if (view.status === 'FINISHED') return { status: 'FINISHED', taskId: view.id, report: view.report ?? '' };
  if (view.status === 'FAILURE') {
    const error = view.error ?? '';
    return { status: isCancelled(error) ? 'CANCELLED' : 'FAILURE', taskId: view.id, error };
  }
  return undefined;
}

/**
 * A result that was RUNNING when the controller stopped: settled by the retained status of its
 * task (matched by requestId) if that has ended, or FAILURE when the register has restarted
 * since it was sent (its task was lost with the old boot). undefined: still open, follow it.
 */
export function sentResultAfterRestart(
  result: StoredResult,
  link: { device(id: string): DeviceEntry | undefined; tasks(id: string): TaskView[] },
  requestId: string,
): Outcome | undefined {
  const views = link.tasks(result.deviceId).filter((view) => view.requestId === requestId);
  for (const view of views) {
    const outcome = fromTask(view);
    if (outcome) return outcome;
  }
  const entry = link.device(result.deviceId);
  if (entry && result.sentBoot !== undefined && entry.bootId !== result.sentBoot) {
    return { status: 'FAILURE', error: 'device restarted (new bootId)' };
  }
  return undefined;
}

/**
 * A job's result as `fanout` and `demo` print it (one table for both paths). A CANCELLED result
 * is shown as FAILURE with an error starting `CANCELLED`; a result still open as NO_ANSWER.
 */
export function asFanoutResult(result: JobResult): FanoutResult {
  const { deviceId } = result;
  const taskId = result.taskId !== undefined ? { taskId: result.taskId } : {};
  const durationMs =
    result.sentAt && result.endedAt ? Math.max(0, Date.parse(result.endedAt) - Date.parse(result.sentAt)) : 0;
  switch (result.status) {
    case 'FINISHED':
      return {
        deviceId,
        status: 'FINISHED',
        report: result.report ?? '',
        taskId: result.taskId ?? 0,
        durationMs,
      };
    case 'FAILURE':
      return { deviceId, status: 'FAILURE', error: result.error ?? '', ...taskId, durationMs };
    case 'CANCELLED': {
      const error = result.error ?? '';
      return {
        deviceId,
        status: 'FAILURE',
        error: isCancelled(error) ? error : `CANCELLED: ${error}`,
        ...taskId,
        durationMs,
      };
    }
    case 'OFFLINE':
      return { deviceId, status: 'OFFLINE' };
    default:
      return { deviceId, status: 'NO_ANSWER', ...taskId, detail: result.error ?? 'no end status' };
  }
}
