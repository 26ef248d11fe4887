/**
 * A private redis-server for a test: its own free port on 127.0.0.1, no persistence, stopped by
 * stop(). Never the shared instance on the standard port.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import { freePort } from './ports.ts';
import { track } from './processes.ts';

export interface RunningRedis {
  url: string;
  port: number;
  stop(): Promise<void>;
}

/** Whether the redis-server binary exists here (the cluster tests skip only when it does not). */
export function redisServerAvailable(): boolean {
  const result = spawnSync('redis-server', ['--version'], { stdio: 'ignore' });
  return result.error === undefined && result.status === 0;
}

function exited(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => child.once('exit', () => resolve()));
}

/** Resolves once redis logs that it accepts connections; rejects with its output if it exits. */
function ready(child: ChildProcess, timeoutMs: number): Promise<void> {
  return new Promise((resolve, reject) => {
    let output = '';
    const timer = setTimeout(
      () => finish(new Error(`redis-server not ready after ${timeoutMs} ms:\n${output}`)),
      timeoutMs,
    );
    const onData = (chunk: Buffer): void => {
      output += chunk.toString();
      if (output.includes('Ready to accept connections')) finish();
    };
    const onExit = (code: number | null): void =>
      finish(new Error(`redis-server exited (${code}):\n${output}`));
    const onError = (error: Error): void => finish(error);
    function finish(error?: Error): void {
      clearTimeout(timer);
      child.stdout?.off('data', onData);
      child.off('exit', onExit);
      child.off('error', onError);
      if (error) reject(error);
      else resolve();
    }
    child.stdout?.on('data', onData);
    child.once('exit', onExit);
    child.once('error', onError);
  });
}

async function stopChild(child: ChildProcess): Promise<void> {
  const gone = exited(child);
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
  await gone;
  clearTimeout(timer);
}

/** Starts `redis-server --port P --save '' --appendonly no` on a free port (retried if taken meanwhile). */
export async function startRedisServer(): Promise<RunningRedis> {
  let lastError: unknown;
  for (let attempt = 0; attempt < 3; attempt++) {
    const port = await freePort();
    const child = spawn(
      'redis-server',
      ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', tmpdir()],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    track(child);
    try {
      await ready(child, 10_000);
    } catch (error) {
      lastError = error;
      await stopChild(child);
      continue;
    }
    // Keep reading so a chatty redis never blocks on a full pipe.
    child.stdout?.resume();
    child.stderr?.resume();
    return { url: `redis://127.0.0.1:${port}`, port, stop: () => stopChild(child) };
  }
  throw lastError;
}
