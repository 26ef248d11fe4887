/**
 * The benchmarks' TypeScript workers (run through bin/run-ts.js, with an IPC channel). Every
 * child is tracked with the servers test/support starts (mosquitto, redis-server), so a scenario
 * can kill whatever is left when it ends or fails (killAllChildren), and nothing outlives a run.
 */
import { type ChildProcess, fork } from 'node:child_process';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { terminate, track, waitExit } from '../../test/support/processes.ts';

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const RUN_TS = resolve(ROOT, 'bin/run-ts.js');

export interface WorkerMessage {
  type: string;
  [key: string]: unknown;
}

/** A TypeScript worker process with a typed-enough IPC channel. */
export class Worker {
  readonly child: ChildProcess;
  readonly name: string;
  private readonly inbox: WorkerMessage[] = [];
  private readonly waiters = new Set<() => void>();
  private exitInfo: string | undefined;
  private listeners = new Set<(message: WorkerMessage) => void>();

  constructor(name: string, child: ChildProcess) {
    this.name = name;
    this.child = child;
    child.on('message', (message: WorkerMessage) => {
      for (const listener of this.listeners) listener(message);
      this.inbox.push(message);
      for (const wake of [...this.waiters]) wake();
    });
    child.once('exit', (code, signal) => {
      this.exitInfo = `worker ${name} exited (code ${code}, signal ${signal})`;
      for (const wake of [...this.waiters]) wake();
    });
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  /** Every message as it arrives (in addition to the inbox `next` reads from). */
  onMessage(listener: (message: WorkerMessage) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  send(message: WorkerMessage): void {
    if (this.child.connected) this.child.send(message);
  }

  /** The next message of that type (taken from the inbox), or an error on time-out or exit. */
  async next<T extends WorkerMessage = WorkerMessage>(type: string, timeoutMs: number): Promise<T> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const index = this.inbox.findIndex((m) => m.type === type || m.type === 'error');
      if (index >= 0) {
        const [message] = this.inbox.splice(index, 1);
        if (message!.type === 'error' && type !== 'error') {
          throw new Error(`worker ${this.name}: ${String(message!.message)}`);
        }
        return message as T;
      }
      if (this.exitInfo) throw new Error(`${this.exitInfo} while waiting for "${type}"`);
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`worker ${this.name}: no "${type}" message within ${timeoutMs} ms`);
      await new Promise<void>((wake) => {
        const done = (): void => {
          clearTimeout(timer);
          this.waiters.delete(done);
          wake();
        };
        const timer = setTimeout(done, left);
        this.waiters.add(done);
      });
    }
  }

  /** Asks the worker to stop (message "stop"), kills it if it does not exit in time. */
  async stop(graceMs = 5000): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    this.send({ type: 'stop' });
    if (!(await waitExit(this.child, graceMs))) await terminate(this.child, 1000);
  }
}

export interface WorkerOptions {
  /** Node flags, e.g. --expose-gc, --cpu-prof. */
  execArgv?: string[];
  env?: NodeJS.ProcessEnv;
  /** Start in a process group of its own (the orchestrator kills whole groups on time-out). */
  detached?: boolean;
  /** A program that runs node, e.g. valgrind: it is started as `wrapper... node bin/run-ts.js ...`. */
  wrapper?: string[];
}

/** Starts `node bin/run-ts.js <file> ...args` with an IPC channel. `file` is relative to the repo root. */
export function startWorker(file: string, args: string[] = [], options: WorkerOptions = {}): Worker {
  const [wrapper, ...wrapperArgs] = options.wrapper ?? [];
  const child = fork(RUN_TS, [resolve(ROOT, file), ...args], {
    cwd: ROOT,
    ...(wrapper !== undefined && { execPath: wrapper }),
    execArgv: [
      ...(wrapper !== undefined ? [...wrapperArgs, process.execPath] : []),
      ...(options.execArgv ?? []),
    ],
    env: { ...process.env, ...options.env },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    detached: options.detached ?? false,
  });
  track(child);
  return new Worker(file, child);
}
