/**
 * Issue 10 item 10 (docs/simulator.md, "Command executor"): the whole tree of a command's
 * descendants ends with its task, also programs that call `setsid` (a session and process group
 * of their own), and nothing outlives the service, even one killed with SIGKILL. Real child
 * processes throughout; a process's death has no event to await, so it is polled, bounded.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { CommandExecutor } from '../../src/executors/command.ts';
import type { ExecutionResult } from '../../src/executors/executor.ts';
import { serviceMark } from '../../src/executors/process-tree.ts';
import { TaskCgroups } from '../../src/executors/task-cgroup.ts';
import { SERVE_WITHOUT_AUTH } from '../support/cli-process.ts';
import { until } from '../support/waits.ts';

const never = new AbortController().signal;
const dir = mkdtempSync(join(tmpdir(), 'regbridge-tree-'));
const leftovers: number[] = [];
const children: ChildProcess[] = [];

afterEach(() => {
  for (const child of children.splice(0)) if (child.exitCode === null) child.kill('SIGKILL');
  // Whatever a failing test left behind goes, so one failure does not leave sleepers around.
  for (const pid of leftovers.splice(0)) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // gone, as it should be
    }
  }
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function alive(pid: number): boolean {
  try {
    return !/^\d+ \(.*\) [ZX]/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
}

function readPids(file: string): number[] {
  try {
    return readFileSync(file, 'utf8').split(/\s+/).filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

/** sh that starts `sleep 300` in a new session (setsid, double fork) and records its pid in `file`. */
function escapee(file: string): string {
  return `setsid sh -c 'sleep 300 </dev/null >/dev/null 2>&1 & echo $! >> ${file}'`;
}

function sh(script: string, timeoutMs = 20_000, cgroups?: TaskCgroups): CommandExecutor {
  return new CommandExecutor({
    program: 'sh',
    args: ['-c', script],
    timeoutMs,
    outputCap: 1000,
    killGraceMs: 300,
    ...(cgroups && { cgroups }),
  });
}

/** Drops the mark, leaves the session and is orphaned at once: `sleep 300`'s pid goes to `file`. */
function hiddenEscapee(file: string): string {
  return `env -u RB_TASK_MARK setsid sh -c 'sleep 300 </dev/null >/dev/null 2>&1 & echo $! >> ${file}' </dev/null >/dev/null 2>&1`;
}

describe('the command executor ends the whole tree with the task', () => {
  it('a descendant in a session of its own is gone when the task finishes', async () => {
    const file = join(dir, 'finish.pids');
    const result: ExecutionResult = await sh(`${escapee(file)}; echo done`).execute('', never);
    expect(result).toEqual({ ok: true, report: 'done' });
    const [pid] = readPids(file);
    leftovers.push(pid!);
    expect(pid).toBeGreaterThan(0);
    await until(() => !alive(pid!), 'the setsid descendant to die');
  });

  it('a time-out takes the program and its setsid descendants', async () => {
    const file = join(dir, 'timeout.pids');
    const result = await sh(
      `${escapee(file)}; ${escapee(file)}; echo $$ >> ${file}; exec sleep 300`,
      500,
    ).execute('', never);
    expect(result).toEqual({ ok: false, error: 'timed out after 500 ms' });
    const pids = readPids(file);
    leftovers.push(...pids);
    expect(pids).toHaveLength(3);
    await until(() => pids.every((pid) => !alive(pid)), 'every process of the tree to die');
  });

  it('a time-out takes a descendant that dropped the mark and left the session (env -u RB_TASK_MARK setsid)', async () => {
    const file = join(dir, 'unmarked.pids');
    const result = await sh(
      `env -u RB_TASK_MARK setsid sleep 300 </dev/null >/dev/null 2>&1 & echo $! >> ${file}; echo $$ >> ${file}; exec sleep 300`,
      500,
    ).execute('', never);
    expect(result).toEqual({ ok: false, error: 'timed out after 500 ms' });
    const pids = readPids(file);
    leftovers.push(...pids);
    expect(pids).toHaveLength(2);
    await until(() => pids.every((pid) => !alive(pid)), 'every process of the tree to die');
  });

  it('the task end takes an unmarked descendant orphaned after it was seen', async () => {
    const file = join(dir, 'orphan.pids');
    // The middle shell lives 1 s, long enough to be followed, then leaves its sleep to init.
    const result = await sh(
      `env -u RB_TASK_MARK setsid sh -c 'sleep 300 </dev/null >/dev/null 2>&1 & echo $! >> ${file}; sleep 1' </dev/null >/dev/null 2>&1 & sleep 1.5; echo done`,
    ).execute('', never);
    expect(result).toEqual({ ok: true, report: 'done' });
    const pids = readPids(file);
    leftovers.push(...pids);
    expect(pids).toHaveLength(1);
    await until(() => pids.every((pid) => !alive(pid)), 'the orphaned sleep to die');
  });

  it('an abort (the service stopping) takes them too', async () => {
    const file = join(dir, 'abort.pids');
    const controller = new AbortController();
    const running = sh(`${escapee(file)}; echo $$ >> ${file}; exec sleep 300`).execute('', controller.signal);
    await until(() => readPids(file).length === 2, 'both pids recorded');
    controller.abort(new Error('service stopping'));
    expect(await running).toEqual({ ok: false, error: 'aborted (service stopping)' });
    const pids = readPids(file);
    leftovers.push(...pids);
    await until(() => pids.every((pid) => !alive(pid)), 'every process of the tree to die');
  });
});

describe('with a cgroup per program (--command-cgroup; this machine lets the tests create them)', () => {
  const probed = TaskCgroups.probe(serviceMark());
  const cgroups = (): TaskCgroups => {
    if (typeof probed === 'string') throw new Error(`no cgroup for the tests: ${probed}`);
    return probed;
  };

  it('a descendant that drops the mark, leaves the session and is orphaned at once ends with the time-out', async () => {
    const file = join(dir, 'cgroup-timeout.pids');
    const result = await sh(
      `${hiddenEscapee(file)}; ${hiddenEscapee(file)}; echo $$ >> ${file}; exec sleep 300`,
      500,
      cgroups(),
    ).execute('', never);
    expect(result).toEqual({ ok: false, error: 'timed out after 500 ms' });
    const pids = readPids(file);
    leftovers.push(...pids);
    expect(pids).toHaveLength(3);
    // endCgroup waited for the cgroup to empty before the task settled: no poll needed.
    expect(pids.filter(alive)).toEqual([]);
  });

  it('and with the end of a program that finished, leaving no cgroup behind', async () => {
    const file = join(dir, 'cgroup-finish.pids');
    const result = await sh(`${hiddenEscapee(file)}; echo done`, 20_000, cgroups()).execute('', never);
    expect(result).toEqual({ ok: true, report: 'done' });
    const pids = readPids(file);
    leftovers.push(...pids);
    expect(pids).toHaveLength(1);
    expect(pids.filter(alive)).toEqual([]);
    // The run's cgroup is gone, and so is the service's parent cgroup with no run left in it.
    expect(existsSync(cgroups().parent)).toBe(false);
  });

  it('a cgroup that cannot be created fails the task, saying so, and starts nothing', async () => {
    // A parent under a plain file (ENOTDIR), through the class's private constructor.
    const plainFile = join(dir, 'not-a-directory');
    writeFileSync(plainFile, '');
    const unusable = new (TaskCgroups as unknown as new (parent: string) => TaskCgroups)(plainFile);
    const file = join(dir, 'no-cgroup.pids');
    const result = await sh(`echo $$ >> ${file}`, 20_000, unusable).execute('', never);
    expect(result).toMatchObject({ ok: false, error: expect.stringMatching(/^no cgroup for the program: /) });
    expect(existsSync(file)).toBe(false);
  });

  it('an honest program sees the service as its parent and its own pid as $$', async () => {
    const result = await sh('echo "$PPID $$"; cat /proc/self/stat', 20_000, cgroups()).execute('', never);
    expect(result.ok).toBe(true);
    const [parent, self] = (result as { report: string }).report.split('\n')[0]!.split(' ');
    expect(Number(parent)).toBe(process.pid);
    expect(Number(self)).toBeGreaterThan(0);
  });
});

// Run as root (this machine), the service runs as nobody, as a hardened deployment would: the
// program is then the same user as the service, which is what /proc/$PPID/environ allows.
const asNobody = process.getuid?.() === 0 ? { uid: 65534, gid: 65534 } : {};

/** `serve` with the command executor on a free port, no broker, as nobody when run as root. */
function spawnServe(
  command: string,
  extra: string[] = [],
  env: NodeJS.ProcessEnv = process.env,
): ChildProcess {
  const serve = spawn(
    process.execPath,
    [
      'bin/regbridge.js',
      'serve',
      '--no-mqtt',
      '--port',
      '0',
      '--host',
      '127.0.0.1',
      '--executor',
      'command',
      '--command',
      command,
      ...extra,
    ],
    { stdio: ['ignore', 'pipe', 'pipe'], env, ...asNobody },
  );
  children.push(serve);
  return serve;
}

/** A child that could not start (nobody may not reach this Node, say) fails the test at once. */
function failureOf(child: ChildProcess): { check(): false } {
  let failed: Error | undefined;
  child.once('error', (error) => {
    failed = error;
  });
  return {
    check() {
      if (failed) throw new Error(`the service did not start: ${failed.message}`);
      return false;
    },
  };
}

it("the program cannot read the service's password through /proc/$PPID/environ (service as nobody when run as root)", async () => {
  const secret = `pw-${Date.now().toString(36)}-never-readable`;
  const serve = spawnServe('sh -c "cat /proc/$PPID/environ"', [], {
    ...process.env,
    REGBRIDGE_USER: `admin:${secret}`,
  });
  let out = '';
  serve.stdout!.on('data', (chunk: Buffer) => {
    out += chunk.toString();
  });
  serve.stderr!.resume();
  const spawnError = failureOf(serve);
  await until(
    () => spawnError.check() || /listening on http:\/\/127\.0\.0\.1:\d+/.test(out),
    'serve to listen',
    30_000,
  );
  const base = `http://127.0.0.1:${/listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(out)![1]}`;
  const auth = await fetch(`${base}/api/authenticate`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ userName: 'admin', password: secret }),
  });
  expect(auth.status).toBe(200);
  const { token } = (await auth.json()) as { token: string };
  const task = await fetch(`${base}/api/fm-script`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: JSON.stringify({ fmScript: 'anything' }),
  });
  const body = (await task.json()) as { status: string; report?: string; error?: string };
  expect(body.status, JSON.stringify(body)).toBe('FINISHED');
  // It did read the service's environment, and the password is not in it.
  expect(body.report).toContain('PATH=');
  if ('uid' in asNobody)
    expect(readFileSync(`/proc/${serve.pid}/status`, 'utf8')).toMatch(/^Uid:\s+65534\s/m);
  expect(body.report).not.toContain(secret);
  serve.kill('SIGTERM');
});

it('nothing outlives a service killed with SIGKILL (serve --executor command)', async () => {
  const file = join(dir, 'sigkill.pids');
  const script = `${escapee(file)}; echo $$ >> ${file}; exec sleep 300`;
  const serve = spawn(
    process.execPath,
    [
      'bin/regbridge.js',
      ...SERVE_WITHOUT_AUTH,
      '--no-mqtt',
      '--executor',
      'command',
      '--command',
      `sh -c "${script.replaceAll('"', '\\"').replaceAll('$', '\\$')}"`,
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  children.push(serve);
  let out = '';
  serve.stdout!.on('data', (chunk: Buffer) => {
    out += chunk.toString();
  });
  let err = '';
  serve.stderr!.on('data', (chunk: Buffer) => {
    err += chunk.toString();
  });
  await until(() => /listening on http:\/\/127\.0\.0\.1:\d+/.test(out), 'serve to listen', 30_000);
  const port = /listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(out)![1];
  const response = await fetch(`http://127.0.0.1:${port}/api/vendor-script`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ vendorScript: 'anything' }),
  });
  expect(response.status).toBe(202);
  await until(() => readPids(file).length === 2, 'the program and its descendant to start');
  const pids = readPids(file);
  leftovers.push(...pids);
  expect(pids.every(alive)).toBe(true);
  serve.kill('SIGKILL');
  await until(() => pids.every((pid) => !alive(pid)), 'every process of the tree to die after the service');
  // Run as root the service had cgroups (its log says where): the watchdog removes them too.
  const cgroup = /"cgroup":"([^"]+)"/.exec(err)?.[1];
  if (process.getuid?.() === 0) expect(cgroup, err).toBeDefined();
  if (cgroup) await until(() => !existsSync(cgroup), 'the watchdog to remove the cgroups');
});

it('--command-cgroup require refuses to start where the service may not create a cgroup (exit 2, naming the flag)', async () => {
  // As nobody (when the tests run as root) the service cannot write the cgroup tree.
  const serve = spawnServe('sh -c true', ['--command-cgroup', 'require']);
  let err = '';
  serve.stderr!.on('data', (chunk: Buffer) => {
    err += chunk.toString();
  });
  serve.stdout!.resume();
  const code = await new Promise<number | null>((resolve, reject) => {
    serve.on('exit', (exitCode) => resolve(exitCode));
    serve.once('error', (error) => reject(new Error(`the service did not start: ${error.message}`)));
  });
  expect(code, err).toBe(2);
  expect(err).toMatch(/--command-cgroup: require, but cannot create a cgroup under \S+ \(E[A-Z]+\)/);
});
