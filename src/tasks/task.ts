/**
 * A task as the engine holds it, and the bodies the REST API and the bridge derive from it.
 * docs/api.md ("Task body") and docs/mqtt.md (status payload).
 */
export type TaskState = 'queued' | 'running' | 'finished' | 'failed';

/** The wire status: queued and running tasks both answer RUNNING (vendor interface). */
export type TaskStatus = 'RUNNING' | 'FINISHED' | 'FAILURE';

export type TaskSource = 'rest' | 'mqtt';

export interface Task {
  readonly id: number;
  /** Dropped (set to '') once the task ends, so retained tasks stay small. */
  script: string;
  /**
   * sha256 of the script (`hashScript`), kept for idempotency comparisons after the script is
   * dropped; computed only for submissions with an Idempotency-Key or a requestId.
   */
  readonly scriptHash?: string;
  readonly source: TaskSource;
  readonly requestId?: string;
  readonly idempotencyKey?: string;
  state: TaskState;
  report?: string;
  error?: string;
  readonly queuedAt: Date;
  startedAt?: Date;
  finishedAt?: Date;
}

export interface TaskBody {
  id: number;
  status: TaskStatus;
  report?: string;
  error?: string;
  queuedAt: string;
  startedAt?: string;
  finishedAt?: string;
}

export function statusOf(state: TaskState): TaskStatus {
  if (state === 'finished') return 'FINISHED';
  if (state === 'failed') return 'FAILURE';
  return 'RUNNING';
}

/**
 * docs/api.md: `report` exactly when FINISHED, `error` exactly when FAILURE; the keys in the
 * order of the API's Task schema, as the docs show them (REST writes the body as it is).
 */
export function toTaskBody(task: Task): TaskBody {
  return {
    id: task.id,
    status: statusOf(task.state),
    ...(task.state === 'finished' && { report: task.report ?? '' }),
    ...(task.state === 'failed' && { error: task.error ?? '' }),
    queuedAt: task.queuedAt.toISOString(),
    ...(task.startedAt && { startedAt: task.startedAt.toISOString() }),
    ...(task.finishedAt && { finishedAt: task.finishedAt.toISOString() }),
  };
}
