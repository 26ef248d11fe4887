/**
 * Executor `command` (docs/simulator.md) with real child processes: report from stdout,
 * failures with the stderr tail, time-out, output cap, spawn errors, programs that ignore stdin
 * or leave children behind; and createExecutor / splitCommandLine.
 */
import { chmodSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/config.ts';
import {
  CommandExecutor,
  type CommandExecutorOptions,
  childEnvironment,
} from '../../src/executors/command.ts';
import { splitCommandLine } from '../../src/executors/command-args.ts';
import type { ExecutionResult } from '../../src/executors/executor.ts';
import { createExecutor } from '../../src/executors/index.ts';
import { SimulatorExecutor } from '../../src/executors/simulator.ts';
import { until } from '../support/waits.ts';

const never = new AbortController().signal;

function nodeProgram(code: string, options: Partial<CommandExecutorOptions> = {}): CommandExecutor {
  return new CommandExecutor({
    program: process.execPath,
    args: ['-e', code],
    timeoutMs: 20_000,
    outputCap: 1024 * 1024,
    killGraceMs: 300,
    ...options,
  });
}

function shellProgram(script: string, options: Partial<CommandExecutorOptions> = {}): CommandExecutor {
  return nodeProgram('', { program: '/bin/sh', args: ['-c', script], ...options });
}

function errorOf(result: ExecutionResult): string {
  if (result.ok) throw new Error(`expected FAILURE, got FINISHED: ${result.report}`);
  return result.error;
}

function reportOf(result: ExecutionResult): string {
  if (!result.ok) throw new Error(`expected FINISHED, got FAILURE: ${result.error}`);
  return result.report;
}

/** Gone, or a zombie nobody reaps yet (containers may lack an init that reaps orphans). */
function processGone(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return true;
  }
  try {
    return /^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return true;
  }
}

const echoStdin = "process.stdin.on('data', (c) => process.stdout.write(c))";

describe('command executor', () => {
  it('writes the script to stdin; stdout without one trailing newline is the report', async () => {
    const upper = nodeProgram(
      "let s = ''; process.stdin.on('data', (c) => (s += c)).on('end', () => console.log(s.toUpperCase()))",
    );
    expect(await upper.execute('print a\nprint é', never)).toEqual({ ok: true, report: 'PRINT A\nPRINT É' });
    const echo = nodeProgram(echoStdin);
    expect(reportOf(await echo.execute('a\r\n', never))).toBe('a');
    expect(reportOf(await echo.execute('a\n\n', never))).toBe('a\n');
    expect(reportOf(await echo.execute('no newline', never))).toBe('no newline');
    expect(reportOf(await nodeProgram('').execute('ignored', never))).toBe('');
  });

  it('fails a non-zero exit with the code and the end of stderr', async () => {
    const result = await nodeProgram(
      "process.stderr.write('x'.repeat(5000) + 'é\\nprinter offline\\n'); process.exit(3)",
    ).execute('PRINT a', never);
    const error = errorOf(result);
    expect(error.startsWith('exit code 3; stderr: ...x')).toBe(true);
    expect(error.endsWith('é\nprinter offline')).toBe(true);
    expect(Buffer.byteLength(error)).toBeLessThan(2048 + 40);
    expect(errorOf(await nodeProgram('process.exit(1)').execute('', never))).toBe('exit code 1');
  });

  it('reports a program killed by a signal', async () => {
    const result = await nodeProgram("process.kill(process.pid, 'SIGKILL')").execute('', never);
    expect(errorOf(result)).toBe('killed by SIGKILL');
  });

  // The time limits leave a slow machine time to start node and reach the first line.
  it('times out: SIGTERM, then SIGKILL for a program that ignores it', async () => {
    // Shell programs: a node child can take longer than the 1 s time-out just to start on a
    // loaded machine, and would then be killed before printing what this test expects.
    const hangs = shellProgram("echo 'waiting for the printer' >&2; while :; do sleep 0.05; done", {
      timeoutMs: 1000,
    });
    expect(errorOf(await hangs.execute('', never))).toBe(
      'timed out after 1000 ms; stderr: waiting for the printer',
    );
    const stubborn = shellProgram(
      // `trap '' TERM` ignores SIGTERM in the shell and in the sleeps it starts (they inherit it).
      "trap '' TERM; echo 'started, ignoring SIGTERM' >&2; while :; do sleep 0.05; done",
      { timeoutMs: 1000, killGraceMs: 500 },
    );
    expect(errorOf(await stubborn.execute('', never))).toBe(
      'timed out after 1000 ms; stderr: started, ignoring SIGTERM',
    );
  });

  it('kills the program when the service stops', async () => {
    const aborter = new AbortController();
    const running = nodeProgram(`${echoStdin}; setInterval(() => {}, 1000)`).execute('x', aborter.signal);
    setTimeout(() => aborter.abort(new Error('service stopping')), 200);
    expect(errorOf(await running)).toBe('aborted (service stopping)');
    expect(errorOf(await nodeProgram('').execute('x', aborter.signal))).toBe('aborted (service stopping)');
  });

  it('keeps the first outputCap bytes of a flood, draining the rest', async () => {
    // 12.5 MiB, written with back-pressure: it only ends if the executor keeps reading.
    const flood =
      "const b = Buffer.alloc(65536, 'é'); let n = 0; const w = () => { while (n < 200) { n += 1; if (!process.stdout.write(b)) return process.stdout.once('drain', w); } }; w()";
    const report = reportOf(await nodeProgram(flood, { outputCap: 1001 }).execute('', never));
    expect(Buffer.byteLength(report)).toBeLessThanOrEqual(1001);
    expect(report).toBe('é'.repeat(500));
    const exact = reportOf(
      await nodeProgram("process.stdout.write('abcdef\\n')", { outputCap: 3 }).execute('', never),
    );
    expect(exact).toBe('abc');
  });

  it('fails with spawn failed for a program that does not exist', async () => {
    const missing = new CommandExecutor({ program: '/nonexistent/program', timeoutMs: 5000, outputCap: 100 });
    expect(errorOf(await missing.execute('x', never))).toBe(
      'spawn failed: ENOENT (program "/nonexistent/program" not found)',
    );
  });

  it('finishes when the program ignores or closes its stdin, whatever the script size', async () => {
    const large = 'PRINT 0123456789abcdef\n'.repeat(400_000); // 8.8 MB, more than any pipe buffer
    expect(await nodeProgram("console.log('done')").execute(large, never)).toEqual({
      ok: true,
      report: 'done',
    });
    const closes = nodeProgram("process.stdin.destroy(); setTimeout(() => console.log('closed'), 50)");
    expect(await closes.execute(large, never)).toEqual({ ok: true, report: 'closed' });
  });

  it('kills what the program left running in its process group', async () => {
    const sh = new CommandExecutor({
      program: 'sh',
      args: ['-c', 'sleep 30 & echo $!'],
      timeoutMs: 10_000,
      outputCap: 100,
    });
    const pid = Number(reportOf(await sh.execute('', never)));
    expect(pid).toBeGreaterThan(0);
    await until(() => processGone(pid));
  });

  it('does not hand the service settings (REGBRIDGE_*) to the program', () => {
    expect(childEnvironment({ PATH: '/bin', REGBRIDGE_USER: 'admin:secret', regbridge_token: 'x' })).toEqual({
      PATH: '/bin',
    });
  });
});

describe('createExecutor', () => {
  const base = { scriptTimeout: 10_000, outputCap: 1024 } as const;

  it('makes the simulator by default and the command executor from a command line', async () => {
    expect(createExecutor({ ...base, executor: 'simulator' })).toBeInstanceOf(SimulatorExecutor);
    const executor = createExecutor({
      ...base,
      executor: 'command',
      command: `sh -c 'tr a-z A-Z; echo "$0" >&2; exit 2' "quoted arg"`,
    });
    expect(executor.name).toBe('command');
    expect(await executor.execute('print a', never)).toEqual({
      ok: false,
      error: 'exit code 2; stderr: quoted arg',
    });
  });

  it('refuses a command line it cannot split, or none', () => {
    expect(() => createExecutor({ ...base, executor: 'command', command: 'sh -c "unterminated' })).toThrow(
      ConfigError,
    );
    expect(() => createExecutor({ ...base, executor: 'command' })).toThrow(/--command/);
  });

  it('refuses at start a program that does not exist or cannot be executed, instead of failing every task', () => {
    const problems = (command: string): string[] => {
      try {
        createExecutor({ ...base, executor: 'command', command });
        return [];
      } catch (error) {
        expect(error).toBeInstanceOf(ConfigError);
        return (error as ConfigError).problems;
      }
    };
    expect(problems('/opt/x --flag')).toEqual(['--command: program /opt/x does not exist']);
    const plain = join(mkdtempSync(join(tmpdir(), 'regbridge-prog-')), 'plain.sh');
    writeFileSync(plain, '#!/bin/sh\necho hi\n', { mode: 0o644 });
    expect(problems(plain)).toEqual([`--command: program ${plain} is not an executable file (chmod +x?)`]);
    chmodSync(plain, 0o755);
    expect(problems(plain)).toEqual([]);
    expect(problems('/tmp')).toEqual(['--command: program /tmp is not an executable file (chmod +x?)']);
    expect(problems('no-such-program-xyz')).toEqual([
      '--command: program no-such-program-xyz not found on PATH (give its full path)',
    ]);
    expect(problems('sh -c true')).toEqual([]);
    expect(problems(`${process.execPath} -e 1`)).toEqual([]);
  });
});

describe('splitCommandLine', () => {
  it.each([
    ['prog', ['prog']],
    ['  prog  a\tb  ', ['prog', 'a', 'b']],
    [`sh -c 'echo "$X" | cat'`, ['sh', '-c', 'echo "$X" | cat']],
    [`prog "a \\"b\\" \\$c \\n" d`, ['prog', 'a "b" $c \\n', 'd']],
    [`prog a\\ b 'it'\\''s' "" ''`, ['prog', 'a b', "it's", '', '']],
    ['prog pre"mid"post', ['prog', 'premidpost']],
    ['prog > out.txt *', ['prog', '>', 'out.txt', '*']],
  ])('%s', (line, words) => {
    expect(splitCommandLine(line)).toEqual(words);
  });

  it.each([
    ["prog 'open", /unterminated ' quote at character 6/],
    ['prog "open', /unterminated " quote at character 6/],
    ['prog \\', /backslash at the end/],
    ['   ', /no program/],
    ["'' arg", /no program/],
  ])('refuses %s', (line, message) => {
    expect(() => splitCommandLine(line)).toThrow(message);
  });
});
