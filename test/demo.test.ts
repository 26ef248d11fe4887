/** `regbridge demo` as a child process: a whole store in one command, 5 registers FINISHED, exit 0. */
import { describe, expect, it } from 'vitest';
import { runCli } from './helpers/controller-cli.ts';

describe('regbridge demo', () => {
  it('starts a broker, 5 registers and a controller; every register FINISHED its X report; exit 0', async () => {
    const run = await runCli(['demo'], { timeoutMs: 30_000 });
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    const rows = run.stdout.split('\n').filter((line) => /^reg\d\s/.test(line));
    expect(rows.map((row) => row.split(/\s+/).slice(0, 2))).toEqual(
      ['reg1', 'reg2', 'reg3', 'reg4', 'reg5'].map((id) => [id, 'FINISHED']),
    );
    // The first line of each report is the simulator's X report header.
    for (const row of rows) expect(row).toMatch(/X REPORT$/);
    expect(run.stdout.trim().split('\n').at(-1)).toBe(
      '5 devices: 5 finished, 0 failed, 0 offline, 0 no answer',
    );
  });

  it('--devices and --json', async () => {
    const run = await runCli(['demo', '--devices', '2', '--json'], { timeoutMs: 30_000 });
    expect(run.code).toBe(0);
    const doc = JSON.parse(run.stdout) as {
      results: { deviceId: string; status: string }[];
      summary: unknown;
    };
    expect(doc.results.map((r) => [r.deviceId, r.status])).toEqual([
      ['reg1', 'FINISHED'],
      ['reg2', 'FINISHED'],
    ]);
    expect(doc.summary).toEqual({ finished: 2, failed: 0, offline: 0, noAnswer: 0 });
  });

  it('a bad --devices is a usage error: exit 2', async () => {
    const run = await runCli(['demo', '--devices', '0']);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/--devices/);
  });
});
