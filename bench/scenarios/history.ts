/**
 * The controller's history at scale (issue 31): the bench writes a history of 10,000 jobs x 100
 * registers (1,000,000 results with Z-report-sized reports; quick: 200 x 20) through the real
 * migrations and triggers, starts `regbridge controller` on it and on an empty file, and measures
 * over HTTP:
 * - p95 of each search filter of GET /api/results and GET /api/jobs (goal < 100 ms), with the
 *   plan SQLite chose;
 * - a CSV export of 100,000 results (quick: 2,000): rows per second and the RSS growth of the
 *   controller while it streams (goal < 64 MiB);
 * - the controller's idle RSS with that history against an empty one (goal < 1.25x) and its
 *   start-up time to the first /health 200 (goal < 2 s).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openHistory, prepare } from '../../controller/history-db.ts';
import { type ResultQuery, ResultSearch } from '../../controller/result-search.ts';
import { terminate } from '../../test/support/processes.ts';
import { ROOT } from '../lib/proc.ts';
import { round, runScenario, type ScenarioContext, sleep } from '../lib/scenario.ts';

const MiB = 2 ** 20;
const USER = 'bench:bench-pw';

function zReport(rng: () => number, n: number): string {
  const lines = [`Z-BERICHT Nr. ${n}`, `Kasse ${Math.floor(rng() * 100) + 1} Filiale Köln-Süd`];
  for (let group = 1; group <= 12; group++) {
    lines.push(`Warengruppe ${group}: ${(rng() * 5000).toFixed(2)} EUR, ${Math.floor(rng() * 300)} Stk`);
  }
  lines.push(`MwSt 19%: ${(rng() * 900).toFixed(2)}`, `MwSt 7%: ${(rng() * 200).toFixed(2)}`);
  lines.push(`Bar: ${(rng() * 9000).toFixed(2)}`, `Karte: ${(rng() * 12000).toFixed(2)}`, 'TSE-Signatur ok');
  return lines.join('\n');
}

const ERRORS = ['printer paper out', 'fiscal memory full', 'TSE not reachable', 'drawer open', 'timeout'];

/** Writes `jobs` x `registers` ended results straight into a migrated file. */
export function buildHistory(file: string, jobs: number, registers: number): void {
  let seed = 42;
  const rng = (): number => {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    return seed / 2 ** 31;
  };
  const db = openHistory(file);
  const insertJob = prepare(
    db,
    `INSERT INTO jobs (job_id, name, created_by, created_at, ended_at, status, script, target, deadline_at)
     VALUES (?, ?, ?, ?, ?, 'COMPLETED', 'Z REPORT', '{"group":"all"}', ?)`,
  );
  const insertResult = prepare(
    db,
    `INSERT INTO results (job_seq, position, device_id, status, task_id, report, error, sent_at, ended_at)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  );
  // Reports of realistic size and vocabulary, generated once (building 1,000,000 took minutes).
  const reports = Array.from({ length: 512 }, (_, n) => zReport(rng, n));
  const start = Date.parse('2025-01-01T00:00:00Z');
  const perBatch = 50;
  for (let first = 0; first < jobs; first += perBatch) {
    db.transaction(() => {
      for (let j = first; j < Math.min(jobs, first + perBatch); j++) {
        const created = new Date(start + j * 3_600_000).toISOString();
        const ended = new Date(start + j * 3_600_000 + 60_000).toISOString();
        const seq = Number(
          insertJob.run(
            `job-${j}`,
            j % 10 === 0 ? `Z report ${j}` : `Price update ${j}`,
            j % 3 ? 'admin' : 'alice',
            created,
            ended,
            created,
          ).lastInsertRowid,
        );
        for (let p = 0; p < registers; p++) {
          const roll = rng();
          const status = roll < 0.04 ? 'FAILURE' : roll < 0.05 ? 'OFFLINE' : 'FINISHED';
          const sent = status !== 'OFFLINE';
          insertResult.run(
            seq,
            p,
            `reg${p}`,
            status,
            sent ? j * 1000 + p : null,
            status === 'FINISHED' ? reports[(j * registers + p) % reports.length]! : null,
            status === 'FAILURE' ? ERRORS[Math.floor(rng() * ERRORS.length)]! : null,
            sent ? created : null,
            sent ? ended : null,
          );
        }
      }
    })();
  }
  db.close();
}

interface Controller {
  child: ChildProcess;
  url: string;
  startMs: number;
}

async function startController(file: string): Promise<Controller> {
  const started = performance.now();
  const child = spawn(
    process.execPath,
    [
      'bin/regbridge.js',
      'controller',
      '--db',
      file,
      '--broker-port',
      '0',
      '--port',
      '0',
      '--host',
      '127.0.0.1',
      '--user',
      USER,
      '--log-level',
      'warn',
    ],
    { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] },
  );
  let out = '';
  const url = await new Promise<string>((resolve, reject) => {
    child.stdout!.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const match = /listening on (http:\/\/[^\s]+)/.exec(out);
      if (match) resolve(match[1]!);
    });
    child.once('exit', (code) => reject(new Error(`controller exited (${code}): ${out}`)));
  });
  for (let i = 0; i < 400; i++) {
    const ok = await fetch(`${url}/health`).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) return { child, url, startMs: performance.now() - started };
    await sleep(5);
  }
  throw new Error('controller /health never answered');
}

function rssOf(pid: number): number {
  const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Number(match![1]) * 1024;
}

async function tokenOf(url: string): Promise<string> {
  const response = await fetch(`${url}/api/authenticate`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ userName: 'bench', password: 'bench-pw' }),
  });
  return ((await response.json()) as { token: string }).token;
}

function p95(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil(sorted.length * 0.95) - 1)]!;
}

runScenario('history', async (ctx: ScenarioContext) => {
  const jobs = ctx.quick ? 200 : 10_000;
  const registers = ctx.quick ? 20 : 100;
  const exportRows = ctx.quick ? 2_000 : 100_000;
  const runs = ctx.quick ? 5 : 40;
  const dir = mkdtempSync(join(tmpdir(), 'regbridge-bench-history-'));
  ctx.defer(() => rmSync(dir, { recursive: true, force: true }));
  const full = join(dir, 'full.db');
  const built = performance.now();
  buildHistory(full, jobs, registers);
  const setup = `${jobs} jobs x ${registers} registers`;
  ctx.log(
    `built ${setup} in ${round((performance.now() - built) / 1000, 1)} s, ${round(statSync(full).size / MiB, 0)} MiB`,
  );

  // The plans, from the file itself (the same SQL the service runs).
  const db = openHistory(full);
  const search = new ResultSearch(db);
  const day = (j: number): string =>
    new Date(Date.parse('2025-01-01T00:00:00Z') + j * 3_600_000).toISOString().slice(0, 10);
  const mid = Math.floor(jobs / 2);
  const resultFilters: [string, (i: number) => ResultQuery][] = [
    ['none', () => ({})],
    ['deviceId', (i) => ({ deviceId: `reg${i % registers}` })],
    ['status=FAILURE', () => ({ status: 'FAILURE' })],
    ['status=OFFLINE, old', () => ({ status: 'OFFLINE', to: day(mid) })],
    ['jobId', (i) => ({ jobId: `job-${(i * 7919) % jobs}` })],
    ['from/to (a day)', (i) => ({ from: day((i * 97) % jobs), to: day(((i * 97) % jobs) + 24) })],
    ['deviceId+status', (i) => ({ deviceId: `reg${i % registers}`, status: 'FAILURE' })],
    ['q (rare word)', () => ({ q: 'drawer' })],
    ['q (common word)', () => ({ q: 'Warengruppe' })],
    ['q+deviceId', (i) => ({ q: 'paper', deviceId: `reg${i % registers}` })],
  ];
  for (const [label, query] of resultFilters) ctx.log(`plan ${label}: ${search.plan(query(1)).join(' | ')}`);
  db.close();

  const empty = join(dir, 'empty.db');
  const none = await startController(empty);
  await sleep(2000);
  const noneRss = rssOf(none.child.pid!);
  await terminate(none.child);

  const service = await startController(full);
  ctx.defer(() => terminate(service.child));
  await sleep(2000);
  const fullRss = rssOf(service.child.pid!);
  const token = await tokenOf(service.url);
  const headers = { authorization: `Bearer ${token}` };
  const toParams = (query: object): string => new URLSearchParams(query as Record<string, string>).toString();

  const timeIt = async (path: string): Promise<number> => {
    const t0 = performance.now();
    const response = await fetch(`${service.url}${path}`, { headers });
    await response.arrayBuffer();
    if (!response.ok) throw new Error(`${path}: ${response.status}`);
    return performance.now() - t0;
  };
  const worst: string[] = [];
  const jobFilters: [string, (i: number) => Record<string, string>][] = [
    ['jobs: status', () => ({ status: 'COMPLETED' })],
    ['jobs: outcome=SUCCEEDED', () => ({ outcome: 'SUCCEEDED' })],
    ['jobs: outcome=FAILED', () => ({ outcome: 'FAILED' })],
    ['jobs: name', (i) => ({ name: `report ${i * 10}` })],
    ['jobs: createdBy', () => ({ createdBy: 'alice' })],
    ['jobs: from/to', (i) => ({ from: day((i * 50) % jobs), to: day(((i * 50) % jobs) + 72) })],
  ];
  const searches: [string, (i: number) => string][] = [
    ...resultFilters.map(
      ([label, query]) =>
        [`results: ${label}`, (i: number) => `/api/results?${toParams(query(i))}`] as [
          string,
          (i: number) => string,
        ],
    ),
    ...jobFilters.map(
      ([label, query]) =>
        [label, (i: number) => `/api/jobs?${toParams(query(i))}`] as [string, (i: number) => string],
    ),
  ];
  for (const [label, path] of searches) {
    await timeIt(path(0)); // warm the statement
    const times: number[] = [];
    for (let i = 1; i <= runs; i++) times.push(await timeIt(path(i)));
    const value = p95(times);
    if (value >= 100) worst.push(label);
    ctx.report({
      figure: `search p95, ${label}`,
      value: round(value, 1),
      unit: 'ms',
      goal: '< 100 ms',
      met: value < 100,
      note: `${setup}; ${runs} searches of 50 over HTTP`,
    });
  }

  // CSV export: RSS sampled while the export streams.
  const before = rssOf(service.child.pid!);
  let peak = before;
  const sampler = setInterval(() => {
    peak = Math.max(peak, rssOf(service.child.pid!));
  }, 20);
  const t0 = performance.now();
  // The results of exportRows / registers consecutive jobs, by their creation times.
  const jobAt = (j: number): string =>
    new Date(Date.parse('2025-01-01T00:00:00Z') + j * 3_600_000).toISOString();
  const span = toParams({ from: jobAt(mid), to: jobAt(mid + exportRows / registers) });
  const response = await fetch(`${service.url}/api/results?format=csv&${span}`, { headers });
  if (!response.ok) throw new Error(`export: ${response.status} ${await response.text()}`);
  let crlf = 0;
  let carry = false; // the last chunk ended with CR
  for await (const chunk of response.body!) {
    const bytes = Buffer.from(chunk as Uint8Array);
    if (carry && bytes[0] === 10) crlf++;
    for (let at = bytes.indexOf('\r\n'); at >= 0; at = bytes.indexOf('\r\n', at + 2)) crlf++;
    carry = bytes[bytes.length - 1] === 13;
  }
  // A record ends with CRLF (a report's own line breaks are LF, inside quotes); one is the header.
  const records = crlf - 1;
  const exportMs = performance.now() - t0;
  clearInterval(sampler);
  ctx.report({
    figure: `CSV export of ${exportRows} results: rows/s`,
    value: round(records / (exportMs / 1000), 0),
    unit: 'rows/s',
    note: `${setup}; ${records} records in ${round(exportMs, 0)} ms`,
    ...(records !== exportRows && { met: false, goal: `${exportRows} records` }),
  });
  ctx.report({
    figure: `CSV export of ${exportRows} results: controller RSS growth`,
    value: round((peak - before) / MiB, 1),
    unit: 'MiB',
    goal: '< 64 MiB',
    met: peak - before < 64 * MiB,
    note: `${setup}; VmRSS sampled every 20 ms, ${round(before / MiB, 0)} -> ${round(peak / MiB, 0)} MiB`,
  });
  ctx.report({
    figure: 'controller idle RSS with the history',
    value: round(fullRss / MiB, 1),
    unit: 'MiB',
    baseline: round(noneRss / MiB, 1),
    baselineLabel: 'empty history',
    ratio: round(fullRss / noneRss, 3),
    goal: '< 1.25x an empty history',
    met: fullRss < 1.25 * noneRss,
    note: `${setup}; 2 s after /health answered`,
  });
  ctx.report({
    figure: 'controller start-up with the history',
    value: round(service.startMs, 0),
    unit: 'ms',
    baseline: round(none.startMs, 0),
    baselineLabel: 'empty history',
    ratio: round(service.startMs / none.startMs, 3),
    goal: '< 2000 ms',
    met: service.startMs < 2000,
    note: `${setup}; spawn to the first /health 200`,
  });
  if (worst.length > 0) ctx.log(`searches over 100 ms: ${worst.join(', ')}`);
});
