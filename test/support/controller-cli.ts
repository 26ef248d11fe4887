/** Runs `node bin/regbridge.js ...` as a child process and collects its output and exit code. */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

export const ROOT = fileURLToPath(new URL('../../', import.meta.url));

export interface CliOutcome {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** The parent's environment without any REGBRIDGE_* variable, plus `env`. */
export function cleanEnv(env: Record<string, string> = {}): NodeJS.ProcessEnv {
  const base = Object.fromEntries(
    Object.entries(process.env).filter(([key]) => !key.startsWith('REGBRIDGE_')),
  );
  return { ...base, ...env };
}

export function runCli(
  args: string[],
  options: { env?: Record<string, string>; timeoutMs?: number; input?: string; cwd?: string } = {},
): Promise<CliOutcome> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [`${ROOT}bin/regbridge.js`, ...args], {
      cwd: options.cwd ?? ROOT,
      env: cleanEnv(options.env),
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(
        new Error(`regbridge ${args.join(' ')} did not exit in time\nstdout: ${stdout}\nstderr: ${stderr}`),
      );
    }, options.timeoutMs ?? 25_000);
    child.on('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
    child.stdin.end(options.input ?? '');
  });
}
