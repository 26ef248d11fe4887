/**
 * Server programs (mosquitto, nats-server, redis-server) run as child processes for tests and
 * benchmarks. Every child is tracked, so a benchmark scenario that fails can kill whatever is left
 * (killAllChildren) and nothing outlives a run.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { waitForPort } from './ports.ts';

const live = new Set<ChildProcess>();

/** Remembers `child` until it exits, for killAllChildren. */
export function track(child: ChildProcess): void {
  live.add(child);
  child.once('exit', () => live.delete(child));
}

/** Kills every tracked child still running (SIGKILL): the last resort of a failing run. */
export function killAllChildren(): void {
  for (const child of live) {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  }
  live.clear();
}

/** Whether `child` exited within `timeoutMs`. */
export async function waitExit(child: ChildProcess, timeoutMs: number): Promise<boolean> {
  if (child.exitCode !== null || child.signalCode !== null) return true;
  return await new Promise<boolean>((done) => {
    const timer = setTimeout(() => {
      child.off('exit', onExit);
      done(false);
    }, timeoutMs);
    const onExit = (): void => {
      clearTimeout(timer);
      done(true);
    };
    child.once('exit', onExit);
  });
}

/** SIGTERM, then SIGKILL if the child has not gone within `graceMs`. */
export async function terminate(child: ChildProcess, graceMs = 3000): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  child.kill('SIGTERM');
  if (!(await waitExit(child, graceMs))) {
    child.kill('SIGKILL');
    await waitExit(child, 1000);
  }
}

/**
 * A server program that can be started, stopped and started again with the same arguments (a
 * broker "down" for a while), its recent output kept for error messages.
 */
export class ServerProcess {
  private child: ChildProcess | undefined;
  private recent = '';

  constructor(
    readonly command: string,
    readonly args: readonly string[],
  ) {}

  get pid(): number | undefined {
    return this.child?.pid;
  }

  /** The last few KiB it printed (stdout and stderr). */
  output(): string {
    return this.recent;
  }

  start(): ChildProcess {
    this.recent = '';
    const child = spawn(this.command, [...this.args], { stdio: ['ignore', 'pipe', 'pipe'] });
    track(child);
    const keep = (chunk: Buffer): void => {
      this.recent = (this.recent + chunk.toString('utf8')).slice(-4000);
    };
    child.stdout?.on('data', keep);
    child.stderr?.on('data', keep);
    child.on('error', (error) => keep(Buffer.from(`spawn error: ${error.message}\n`)));
    this.child = child;
    return child;
  }

  /** Resolves once it accepts connections on `port`; rejects with its output otherwise. */
  async ready(port: number, timeoutMs = 15_000): Promise<void> {
    try {
      await waitForPort(port, timeoutMs);
    } catch (error) {
      throw new Error(`${this.command} did not start: ${(error as Error).message}\n${this.recent}`);
    }
  }

  async stop(graceMs = 5000): Promise<void> {
    const child = this.child;
    this.child = undefined;
    if (child) await terminate(child, graceMs);
  }
}
