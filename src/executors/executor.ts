/** What every executor (simulator, command) implements; the task engine runs one script at a time. */
export type ExecutionResult = { ok: true; report: string } | { ok: false; error: string };

export interface Executor {
  readonly name: string;
  /**
   * Runs one script. Must never reject: a crash, hang (abort) or bad script is `{ ok: false }`.
   * `signal` aborts when the service stops; the executor ends promptly with a failure.
   */
  execute(script: string, signal: AbortSignal): Promise<ExecutionResult>;
}
