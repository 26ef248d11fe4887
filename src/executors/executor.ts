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

/** The executors' optional settings, defaulted here (`serve`'s flags read them too). */
export const EXECUTOR_DEFAULTS = Object.freeze({
  /** Largest report kept, in bytes. */
  outputCap: 1024 * 1024,
  /** Longest a script may run in the simulator when no timeout is given (0: none). */
  timeoutMs: 0,
  /** Command executor: wait between SIGTERM and SIGKILL, and for the pipes to close after exit. */
  killGraceMs: 2000,
  /** Command executor: how much of the end of stderr goes into `error`. */
  stderrTailBytes: 2048,
});
