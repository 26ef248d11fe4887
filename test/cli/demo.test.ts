/**
 * `regbridge demo` as a child process: a whole store in one command with the controller service:
 * the dashboard's URL and login printed and working; with --once, 5 registers FINISHED, exit 0.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { startCli, stopAll, waitForOutput } from '../support/cli-process.ts';
import { runCli } from '../support/controller-cli.ts';

afterEach(() => stopAll());

describe('regbridge demo', () => {
  it('serves the dashboard until stopped: the printed login works and the X report is job 1', async () => {
    const demo = startCli(['demo', '--devices', '2', '--port', '0']);
    // Start-up waits up to 10 s for the registers and 15 s for the X report's deadline.
    const url = await waitForOutput(demo, /dashboard on (http:\/\/127\.0\.0\.1:\d+\/)/, 50_000);
    const password = await waitForOutput(demo, /log in as admin, password (\S+)\)/);
    const login = await fetch(`${url}api/authenticate`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ userName: 'admin', password }),
    });
    expect(login.status).toBe(200);
    const { token } = (await login.json()) as { token: string };
    const jobs = (await (
      await fetch(`${url}api/jobs`, { headers: { authorization: `Bearer ${token}` } })
    ).json()) as {
      jobs: { name: string; status: string; counts: { finished: number } }[];
    };
    expect(jobs.jobs).toEqual([
      expect.objectContaining({
        name: 'demo: X report',
        status: 'COMPLETED',
        counts: expect.objectContaining({ finished: 2 }),
      }),
    ]);
    const page = await fetch(url);
    expect(page.headers.get('content-type')).toContain('text/html');
    demo.child.kill('SIGTERM');
    expect((await demo.exit).code).toBe(0);
  }, 90_000);

  it('starts a broker, 5 registers and a controller; every register FINISHED its X report; exit 0', async () => {
    const run = await runCli(['demo', '--once', '--port', '0'], { timeoutMs: 30_000 });
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
    const run = await runCli(['demo', '--devices', '2', '--json', '--once', '--port', '0'], {
      timeoutMs: 30_000,
    });
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
