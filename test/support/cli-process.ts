/**
 * A long-running `regbridge <command>` child process (`node bin/regbridge.js`), its output
 * collected; waitForOutput reads what it prints (ports, generated passwords). stopAll() kills
 * whatever a test left running (afterEach).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { cleanEnv, ROOT } from './controller-cli.ts';

export interface CliProcess {
  child: ChildProcess;
  stdout: () => string;
  stderr: () => string;
  exit: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** `serve` with the device and its embedded broker on free loopback ports (add flags after it). */
export const SERVE_ON_FREE_PORTS = ['serve', '--port', '0', '--broker-port', '0', '--host', '127.0.0.1'];
/** `serve` on a free loopback port with REST auth off (add flags after it). */
export const SERVE_WITHOUT_AUTH = ['serve', '--port', '0', '--host', '127.0.0.1', '--auth', 'off'];
/** `regbridge controller` with its embedded broker, both on free loopback ports, history in memory. */
export const CONTROLLER_ON_FREE_PORTS = [
  'controller',
  '--port',
  '0',
  '--host',
  '127.0.0.1',
  '--broker-port',
  '0',
  '--broker-host',
  '127.0.0.1',
  '--db',
  ':memory:',
];

const running = new Set<ChildProcess>();

/** `nodeArgs`: node's own flags before the script (V8 tracing flags, `--import` of a probe). */
export function startCli(
  args: string[],
  env: Record<string, string> = {},
  nodeArgs: string[] = [],
): CliProcess {
  const child = spawn(process.execPath, [...nodeArgs, 'bin/regbridge.js', ...args], {
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

/** Polls until `printed` holds for what the process printed; fails, with its output, if it exits first. */
export async function waitForPrinted(
  started: CliProcess,
  printed: () => boolean,
  what: string,
  timeoutMs = 20_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!printed()) {
    if (started.child.exitCode !== null || started.child.signalCode !== null || Date.now() > deadline)
      throw new Error(`no ${what}:\n${started.stdout()}\n${started.stderr()}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** SIGTERM, as a service manager stops it; resolves to its exit code. */
export async function stopCli(started: CliProcess): Promise<number | null> {
  started.child.kill('SIGTERM');
  return (await started.exit).code;
}

/** The ports and generated admin password `serve` with the embedded broker prints. */
export async function serveBanner(
  serve: CliProcess,
): Promise<{ httpPort: string; brokerPort: string; password: string }> {
  return {
    httpPort: await waitForOutput(serve, /listening on http:\/\/127\.0\.0\.1:(\d+)/),
    brokerPort: await waitForOutput(serve, /embedded MQTT broker on mqtt:\/\/127\.0\.0\.1:(\d+)/),
    password: await waitForOutput(serve, /created user admin with password (\S+)/),
  };
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
