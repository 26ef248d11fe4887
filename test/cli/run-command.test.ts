/**
 * `regbridge run` as a child process (`node bin/regbridge.js run ...`) against a real device
 * started here: the report on stdout, exit 0 FINISHED / 1 FAILURE / 2 error.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningDevice, startDevice } from '../../cli/device.ts';
import { parseServeConfig } from '../../cli/serve-config.ts';
import { silent } from '../support/loggers.ts';
import { freePort } from '../support/ports.ts';

const bin = join(import.meta.dirname, '..', '..', 'bin', 'regbridge.js');

interface Result {
  code: number | null;
  stdout: string;
  stderr: string;
}

const children = new Set<ReturnType<typeof spawn>>();

/** Runs the CLI; REGBRIDGE_* variables of the parent are dropped so only `env` counts. */
function cli(
  args: string[],
  options: { stdin?: string; env?: Record<string, string> } = {},
): Promise<Result> {
  const env: Record<string, string> = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (value !== undefined && !key.startsWith('REGBRIDGE_')) env[key] = value;
  }
  const child = spawn(process.execPath, [bin, 'run', ...args], {
    env: { ...env, ...options.env },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  children.add(child);
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    stdout += chunk;
  });
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
    stderr += chunk;
  });
  child.stdin.end(options.stdin ?? '');
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code) => {
      children.delete(child);
      resolve({ code, stdout, stderr });
    });
  });
}

let device: RunningDevice;
let url: string;
let dir: string;

async function script(name: string, text: string): Promise<string> {
  const file = join(dir, name);
  await writeFile(file, text);
  return file;
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'regbridge-run-'));
  device = await startDevice(parseServeConfig({ port: 0, host: '127.0.0.1', mqtt: false, users: ['u:p'] }), {
    logger: silent,
  });
  url = `http://127.0.0.1:${device.httpPort}`;
});

afterAll(async () => {
  for (const child of children) child.kill();
  await device?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('regbridge run', () => {
  it('prints the report and exits 0 when the script finishes', async () => {
    const file = await script('ok.txt', 'PRINT receipt 1\nPRINT total 9.90\n');
    const result = await cli([file, '--url', url, '--user', 'u:p']);
    expect(result).toMatchObject({ code: 0, stdout: 'receipt 1\ntotal 9.90\n', stderr: '' });
  });

  it('neutralises terminal escapes in a report (clipboard write, clear-screen) as fanout does', async () => {
    const file = await script(
      'escapes.txt',
      'PRINT copy \u001b]52;c;cm0gLXJmIH4=\u0007 this\nPRINT \u001b[2J\u001b[Hcleared\tcolumn\n',
    );
    const result = await cli([file, '--url', url, '--user', 'u:p']);
    expect(result).toMatchObject({
      code: 0,
      stdout: 'copy ?]52;c;cm0gLXJmIH4=? this\n?[2J?[Hcleared\tcolumn\n',
      stderr: '',
    });
  });

  it('reads stdin for -, takes --user from REGBRIDGE_USER, and runs the asynchronous flow with --async', async () => {
    const result = await cli(['-', '--url', url, '--async', '--timeout', '20s'], {
      stdin: 'SLEEP 100\nPRINT from stdin',
      env: { REGBRIDGE_USER: 'u:p' },
    });
    expect(result).toMatchObject({ code: 0, stdout: 'from stdin\n' });
  });

  it('exits 1 with the task error on stderr when the script fails', async () => {
    const file = await script('fail.txt', 'PRINT start\nFAIL printer offline');
    const result = await cli([file, '--url', url, '--user', 'u:p']);
    expect(result.code).toBe(1);
    expect(result.stdout).toBe('');
    expect(result.stderr).toContain('printer offline');
  });

  it("neutralises terminal escapes in a failed task's error too", async () => {
    const file = await script('fail-escapes.txt', 'FAIL \u001b]52;c;cm0gLXJmIH4=\u0007 \u001b[2Jgone');
    const result = await cli([file, '--url', url, '--user', 'u:p']);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/FAILURE: \?\]52;c;cm0gLXJmIH4=\? \?\[2Jgone\n$/);
    expect(result.stderr).not.toContain('\u001b');
  });

  it('exits 2 on wrong credentials, naming --user', async () => {
    const file = await script('cred.txt', 'PRINT x');
    const result = await cli([file, '--url', url, '--user', 'u:nope']);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('wrong user name or password in --user');
    expect(result.stderr).not.toContain('nope');
  });

  it('exits 2 when the device cannot be reached', async () => {
    const file = await script('conn.txt', 'PRINT x');
    const result = await cli([file, '--url', `http://127.0.0.1:${await freePort()}`, '--user', 'u:p']);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/ECONNREFUSED|connect/i);
  });

  it('exits 2 on a time-out, naming the task that may still end', async () => {
    const file = await script('slow.txt', 'SLEEP 2000\nPRINT late');
    const result = await cli([file, '--url', url, '--user', 'u:p', '--timeout', '300ms']);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/\/api\/tasks\/\d+/);
  });

  it('exits 2 on usage and configuration errors', async () => {
    const file = await script('usage.txt', 'PRINT x');
    const [missing, bad, noFile] = await Promise.all([
      cli(['--url', url]),
      cli([file, '--url', 'ftp://x', '--user', 'nocolon', '--timeout', 'soon']),
      cli([join(dir, 'does-not-exist.txt'), '--url', url, '--user', 'u:p']),
    ]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/missing required argument/i);

    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('--url');
    expect(bad.stderr).toContain('--user');
    expect(bad.stderr).toContain('--timeout');

    expect(noFile.code).toBe(2);
    expect(noFile.stderr).toContain('cannot read');
  });
});
