/**
 * Scenario: unauthenticated CPU. A 2 MB JSON body nested ~1,000,000 levels
 * deep is sent to `POST /api/authenticate` (no login needed) and to `GET /health`; the device
 * runs in its own process (bench/serve-device.ts), so its CPU is read from /proc and the
 * latency of `/health` is measured from here: alone (baseline) and while 4 such bodies are in
 * flight at a time. Figures: device CPU per deep body, /health p50/p95 with and without.
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { request } from 'undici';
import { ROOT } from '../lib/proc.ts';
import { round, runScenario, withTimeout } from '../lib/scenario.ts';

const DEPTH = 1_000_000;
const deepBody = '['.repeat(DEPTH) + ']'.repeat(DEPTH);
const TICKS = 100; // USER_HZ on Linux

function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / TICKS;
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))] ?? Number.NaN;
}

runScenario('deep-body', async (ctx) => {
  const child = spawn(
    process.execPath,
    ['bin/run-ts.js', 'bench/serve-device.ts', JSON.stringify({ mqtt: false, logLevel: 'silent' })],
    { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] },
  );
  ctx.defer(() => {
    child.kill('SIGKILL');
  });
  const firstLine = await withTimeout(
    'device start',
    30_000,
    new Promise<string>((resolve) => createInterface({ input: child.stdout }).once('line', resolve)),
  );
  const { httpPort } = JSON.parse(firstLine) as { httpPort: number };
  const base = `http://127.0.0.1:${httpPort}`;
  const pid = child.pid!;

  // The device may answer (413) and close while the 2 MB body is still being written: the write
  // then fails (EPIPE, ECONNRESET). That is the defence working, so it counts as an answer.
  const deep = async (path: string, method: 'GET' | 'POST'): Promise<number | 'closed'> => {
    try {
      const response = await request(`${base}${path}`, {
        method,
        headers: { 'content-type': 'application/json' },
        body: deepBody,
      });
      await response.body.dump();
      return response.statusCode;
    } catch (error) {
      const code = (error as { code?: string }).code;
      if (code === 'EPIPE' || code === 'ECONNRESET' || code === 'UND_ERR_SOCKET') return 'closed';
      throw error;
    }
  };
  const health = async (): Promise<number> => {
    const started = performance.now();
    const response = await request(`${base}/health`);
    await response.body.dump();
    return performance.now() - started;
  };
  const healthSeries = async (count: number): Promise<number[]> => {
    const times: number[] = [];
    for (let i = 0; i < count; i += 1) times.push(await health());
    return times.sort((a, b) => a - b);
  };

  await healthSeries(20); // warm up
  const samples = ctx.quick ? 8 : 24;
  for (const [path, method] of [
    ['/api/authenticate', 'POST'],
    ['/health', 'GET'],
  ] as const) {
    const before = cpuSeconds(pid);
    const statuses = new Set<number | 'closed'>();
    for (let i = 0; i < samples; i += 1) statuses.add(await deep(path, method));
    const perBody = ((cpuSeconds(pid) - before) / samples) * 1000;
    ctx.log(`${method} ${path}: ${samples} deep bodies answered ${[...statuses].join(',')}`);
    ctx.report({
      figure: `device CPU per 2 MB deep body, ${method} ${path}`,
      value: round(perBody, 1),
      unit: 'ms',
    });
  }

  const alone = await healthSeries(ctx.quick ? 40 : 100);
  let loading = true;
  const attackers = Array.from({ length: 4 }, async () => {
    while (loading) await deep('/api/authenticate', 'POST');
  });
  const loaded = await healthSeries(ctx.quick ? 40 : 100);
  loading = false;
  await Promise.all(attackers);
  for (const p of [50, 95]) {
    const baseline = round(percentile(alone, p), 1);
    const value = round(percentile(loaded, p), 1);
    ctx.report({ figure: `/health p${p} alone`, value: baseline, unit: 'ms' });
    ctx.report({
      figure: `/health p${p} under 4 concurrent deep bodies`,
      value,
      unit: 'ms',
      baseline,
      baselineLabel: `/health p${p} alone`,
      ratio: round(baseline / value, 3),
    });
  }
});
