/**
 * A long-running `regbridge <command>` child process (`node bin/regbridge.js`), its output
 * collected; waitForOutput reads what it prints (ports, generated passwords). stopAll() kills
 * whatever a test left running.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { cleanEnv, ROOT } from './controller-cli.ts';

export interface CliProcess {
  child: ChildProcess;
  stdout: () => string;
  stderr: () => string;
  exit: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

const running = new Set<ChildProcess>();

export function startCli(args: string[], env: Record<string, string> = {}): CliProcess {
  const child = spawn(process.execPath, ['bin/regbridge.js', ...args], {
    cwd: ROOT,
    env: cleanEnv(env),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  running.add(child);
  let out = '';
  let err = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    out += chunk.toString();
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    err += chunk.toString();
  });
  const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on('exit', (code, signal) => {
      running.delete(child);
      resolve({ code, signal });
    }),
  );
  return { child, stdout: () => out, stderr: () => err, exit };
}

/** The first group of `pattern` once the process printed it on stdout. */
export async function waitForOutput(
  started: CliProcess,
  pattern: RegExp,
  timeoutMs = 20_000,
): Promise<string> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const match = pattern.exec(started.stdout());
    if (match?.[1] !== undefined) return match[1];
    if (started.child.exitCode !== null || started.child.signalCode !== null)
      throw new Error(`exited early: ${started.stdout()}\n${started.stderr()}`);
    if (Date.now() > deadline) throw new Error(`no ${pattern} in:\n${started.stdout()}\n${started.stderr()}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

export function stopAll(): void {
  for (const child of running) child.kill('SIGKILL');
  running.clear();
}
