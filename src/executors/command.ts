/**
 * Executor `command` (docs/simulator.md, "Command executor"): the script on stdin, the capped
 * stdout is the report, exit 0 is FINISHED, anything else FAILURE with the end of stderr. Whatever
 * the program does, the service neither crashes, hangs nor holds more than the cap.
 */
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import type { Logger } from '../logger.ts';
import { EXECUTOR_DEFAULTS, type ExecutionResult, type Executor } from './executor.ts';
import {
  Descendants,
  ensureWatchdog,
  MARK_VARIABLE,
  newRunMark,
  SEEN_EVERY_MS,
  signalTree,
} from './process-tree.ts';
import { utf8Prefix } from './report-cap.ts';
import { cgroupPids, JOIN_SCRIPT, killCgroup, type TaskCgroups } from './task-cgroup.ts';

export interface CommandExecutorOptions {
  program: string;
  args?: readonly string[];
  /** `--script-timeout` in ms; 0 or less: none. */
  timeoutMs: number;
  /** `--output-cap`: bytes of stdout kept as the report. */
  outputCap: number;
  /** Wait between SIGTERM and SIGKILL, and for the pipes to close after exit. Default 2000 ms. */
  killGraceMs?: number;
  /** How much of the end of stderr goes into `error`. Default 2048 bytes. */
  stderrTailBytes?: number;
  /** The program's environment; default: this process's, without REGBRIDGE_* (they may hold passwords). */
  env?: NodeJS.ProcessEnv;
  /** A cgroup per program (`--command-cgroup`, task-cgroup.ts); without: the process scan only. */
  cgroups?: TaskCgroups;
  logger?: Logger;
}

/** This process's environment minus the service's own settings (`REGBRIDGE_USER` holds passwords). */
export function childEnvironment(env: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  return Object.fromEntries(
    Object.entries(env).filter(([name]) => !name.toUpperCase().startsWith('REGBRIDGE_')),
  );
}

export class CommandExecutor implements Executor {
  readonly name = 'command';

  constructor(private readonly options: CommandExecutorOptions) {}

  execute(script: string, signal: AbortSignal): Promise<ExecutionResult> {
    return new Promise((resolve) => new CommandRun(this.options, resolve).start(script, signal));
  }
}

function sendSignal(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(pid, signal);
  } catch {
    // gone meanwhile
  }
}

function reasonText(reason: unknown): string {
  return reason instanceof Error ? reason.message : String(reason ?? 'aborted');
}

function spawnFailure(program: string, error: unknown): string {
  const code = (error as NodeJS.ErrnoException).code;
  if (code === 'ENOENT') return `spawn failed: ENOENT (program "${program}" not found)`;
  if (code === 'EACCES') return `spawn failed: EACCES (program "${program}" is not executable)`;
  return `spawn failed: ${code ? `${code} ` : ''}(${reasonText(error)})`;
}

/** One execution: a child process, its pipes and timers, settled exactly once. */
class CommandRun {
  private child: ChildProcessWithoutNullStreams | undefined;
  private readonly stdout: Buffer[] = [];
  private stdoutKept = 0;
  private stdoutSeen = 0;
  private stderrTail = Buffer.alloc(0);
  private stderrSeen = 0;
  private exit: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  /** Why we are killing the program (time-out, service stopping); that is then the error. */
  private cutShort: string | undefined;
  private readonly timers = new Set<NodeJS.Timeout>();
  private signal: AbortSignal | undefined;
  private settled = false;
  private readonly grace: number;
  private readonly tailBytes: number;
  /** Carried by the program and every descendant (src/executors/process-tree.ts). */
  private readonly mark = newRunMark();
  /** Followed by parent links too (a descendant may drop the mark). */
  private descendants: Descendants | undefined;
  private watching: NodeJS.Timeout | undefined;
  /** The run's cgroup, when the executor has them: holds every process the program starts. */
  private cgroup: string | undefined;

  constructor(
    private readonly options: CommandExecutorOptions,
    private readonly resolve: (result: ExecutionResult) => void,
  ) {
    this.grace = options.killGraceMs ?? EXECUTOR_DEFAULTS.killGraceMs;
    this.tailBytes = options.stderrTailBytes ?? EXECUTOR_DEFAULTS.stderrTailBytes;
  }

  start(script: string, signal: AbortSignal): void {
    const { program, args = [], timeoutMs } = this.options;
    if (signal.aborted) {
      this.settle({ ok: false, error: `aborted (${reasonText(signal.reason)})` });
      return;
    }
    let child: ChildProcessWithoutNullStreams;
    const { cgroups } = this.options;
    ensureWatchdog();
    try {
      this.cgroup = cgroups?.create(this.mark);
    } catch (error) {
      this.settle({ ok: false, error: `no cgroup for the program: ${(error as Error).message}` });
      return;
    }
    try {
      // detached: the program leads its own process group, so a time-out kills what it forked
      // too; the mark reaches what left the group (setsid) and what the watchdog must end. With
      // a cgroup, a shell joins it and then execs the program (task-cgroup.ts).
      const [file, argv] =
        this.cgroup === undefined
          ? [program, [...args]]
          : ['sh', ['-c', JOIN_SCRIPT, 'regbridge-task', this.cgroup, program, ...args]];
      child = spawn(file, argv, {
        stdio: 'pipe',
        detached: true,
        env: { ...(this.options.env ?? childEnvironment()), [MARK_VARIABLE]: this.mark },
      });
    } catch (error) {
      if (this.cgroup !== undefined) void cgroups?.end(this.cgroup);
      this.settle({ ok: false, error: spawnFailure(program, error) });
      return;
    }
    this.child = child;
    // These listeners stay for the child's whole life: an 'error' event without a listener would
    // crash the service. EPIPE on stdin is normal when the program does not read its input.
    child.on('error', (error) => this.onError(error));
    child.on('exit', (code, exitSignal) => this.onExit(code, exitSignal));
    child.on('close', () => this.finish());
    for (const stream of [child.stdin, child.stdout, child.stderr]) stream.on('error', () => {});
    child.stdout.on('data', (chunk: Buffer) => this.onStdout(chunk));
    child.stderr.on('data', (chunk: Buffer) => this.onStderr(chunk));
    this.signal = signal;
    signal.addEventListener('abort', this.onAbort, { once: true });
    if (child.pid === undefined) return; // spawn failed: 'error' follows on the next tick
    const descendants = new Descendants(child.pid);
    this.descendants = descendants;
    // A cgroup holds every descendant: no need to look for them while the program runs.
    if (this.cgroup === undefined) {
      this.watching = setInterval(() => void descendants.remember(), SEEN_EVERY_MS);
      this.watching.unref();
    }
    child.stdin.end(script);
    if (timeoutMs > 0) this.later(timeoutMs, () => this.cut(`timed out after ${timeoutMs} ms`));
  }

  private readonly onAbort = (): void => {
    this.cut(`aborted (${reasonText(this.signal?.reason)})`);
  };

  private later(ms: number, action: () => void): void {
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      action();
    }, ms);
    this.timers.add(timer);
  }

  private onError(error: Error): void {
    if (this.settled) return;
    if (this.child?.pid === undefined) {
      this.settle({ ok: false, error: spawnFailure(this.options.program, error) });
      return;
    }
    this.options.logger?.warn(
      { err: error, program: this.options.program },
      'command executor: child process error',
    );
  }

  private onStdout(chunk: Buffer): void {
    this.stdoutSeen += chunk.length;
    // Keep one byte past the cap: it tells whether the cap splits a character (utf8Prefix).
    const room = this.options.outputCap + 1 - this.stdoutKept;
    if (room <= 0) return; // keep draining, so the program is never blocked on a full pipe
    const kept = chunk.length <= room ? chunk : Buffer.from(chunk.subarray(0, room));
    this.stdout.push(kept);
    this.stdoutKept += kept.length;
  }

  private onStderr(chunk: Buffer): void {
    this.stderrSeen += chunk.length;
    const tail = chunk.length >= this.tailBytes ? chunk : Buffer.concat([this.stderrTail, chunk]);
    this.stderrTail = Buffer.from(tail.subarray(Math.max(0, tail.length - this.tailBytes)));
  }

  private onExit(code: number | null, exitSignal: NodeJS.Signals | null): void {
    this.exit = { code, signal: exitSignal };
    clearInterval(this.watching);
    // Whatever the program left running (in its group, or in a session of its own) would hold
    // our pipes open and outlive its task: it goes too.
    this.killGroup('SIGKILL');
    // A descendant that still holds the pipes after that is not ours to wait for forever.
    this.later(this.grace, () => this.finish());
  }

  /** Time-out or service stopping: SIGTERM to the group, SIGKILL after the grace period. */
  private cut(reason: string): void {
    if (this.settled || this.cutShort !== undefined || this.exit) return;
    this.cutShort = reason;
    this.killGroup('SIGTERM');
    this.later(this.grace, () => {
      this.killGroup('SIGKILL');
      this.later(this.grace, () => {
        this.settle(this.failure(`${reason} (the program did not exit after SIGKILL)`));
      });
    });
  }

  /** The program's process group, every process carrying its mark, and its cgroup. */
  private killGroup(signal: NodeJS.Signals): void {
    const pid = this.child?.pid;
    if (pid === undefined) return;
    if (this.cgroup !== undefined) {
      if (signal === 'SIGKILL') killCgroup(this.cgroup);
      else for (const member of cgroupPids(this.cgroup)) sendSignal(member, signal);
    }
    void signalTree(pid, this.mark, signal, undefined, this.descendants);
  }

  /** The program has exited and its output is read (or we stopped waiting for it). */
  private finish(): void {
    if (this.settled || !this.exit) return;
    const { code, signal } = this.exit;
    if (this.cutShort !== undefined) this.settle(this.failure(this.cutShort));
    else if (code === 0) this.settle({ ok: true, report: this.report() });
    else if (code !== null) this.settle(this.failure(`exit code ${code}`));
    else this.settle(this.failure(`killed by ${signal ?? 'a signal'}`));
  }

  private report(): string {
    const cap = this.options.outputCap;
    const bytes = Buffer.concat(this.stdout, this.stdoutKept);
    if (this.stdoutSeen > cap) {
      this.options.logger?.warn(
        { program: this.options.program, bytes: this.stdoutSeen, outputCap: cap },
        'command executor: report truncated to the output cap',
      );
      return utf8Prefix(bytes, cap).toString('utf8');
    }
    // The vendor's reports have no trailing newline; most programs end their output with one.
    const text = bytes.toString('utf8');
    if (text.endsWith('\r\n')) return text.slice(0, -2);
    return text.endsWith('\n') ? text.slice(0, -1) : text;
  }

  private failure(what: string): ExecutionResult {
    let tail = this.stderrTail;
    if (this.stderrSeen > tail.length) {
      // The tail may start inside a character: skip its continuation bytes.
      let start = 0;
      while (start < 3 && start < tail.length && (tail[start]! & 0xc0) === 0x80) start += 1;
      tail = tail.subarray(start);
    }
    const text = tail.toString('utf8').trimEnd();
    if (text === '') return { ok: false, error: what };
    return {
      ok: false,
      error: `${what}; stderr: ${this.stderrSeen > this.stderrTail.length ? '...' : ''}${text}`,
    };
  }

  private settle(result: ExecutionResult): void {
    if (this.settled) return;
    this.settled = true;
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
    clearInterval(this.watching);
    this.signal?.removeEventListener('abort', this.onAbort);
    const child = this.child;
    if (child) {
      // Drop what is still buffered (an unread script, output after we stopped waiting).
      child.stdin.destroy();
      child.stdout.destroy();
      child.stderr.destroy();
    }
    this.stdout.length = 0;
    // The task ends only once nothing of its tree is left (a last sweep: a descendant may have
    // been forked after the first kill).
    const cgroup = this.cgroup;
    void Promise.all([
      cgroup === undefined ? undefined : this.options.cgroups?.end(cgroup),
      signalTree(child?.pid, this.mark, 'SIGKILL', undefined, this.descendants),
    ]).finally(() => this.resolve(result));
  }
}
