/**
 * Instructions per request of scenario 1's servers, counted by valgrind's callgrind: unlike
 * requests/s or CPU time on a shared machine, an instruction count does not include the time
 * other processes take, so a change to the device's request path can be judged while others run
 * their benchmarks (docs/benchmarks.md, "Issue 14", point 1). It is not exact from run to run:
 * when V8 compiles and collects (a major collection in the counted window or not) and how many
 * requests one event-loop turn reads move it by up to ~10 %; compare several runs.
 *
 *   node bin/run-ts.js bench/rest-instructions.ts [bare|device|paused ...] [--warm N] [--count N]
 *
 * Each server (bench/workers/rest-server.ts) runs under `valgrind --tool=callgrind` with
 * collection off; autocannon (10 connections, its own process) sends `--warm` requests so V8 has
 * optimised the hot path, then instrumentation is switched on (`callgrind_control -i on`) for
 * `--count` requests, and the dump's total of instructions (Ir) is divided by the count. Under
 * valgrind a server runs some 50 times slower, so more requests arrive per event-loop turn than
 * on a real machine: compare devices with each other and with the bare app in the same run, not
 * with another tool's figures. `--out DIR` keeps the dumps (`callgrind_annotate` reads them).
 */
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { startWorker, type WorkerMessage } from './lib/proc.ts';

const run = promisify(execFile);

interface Options {
  kinds: Array<'bare' | 'device' | 'paused'>;
  warm: number;
  count: number;
  out: string;
}

function parseArgs(argv: string[]): Options {
  const kinds: Options['kinds'] = [];
  let warm = 8000;
  let count = 4000;
  let out = '';
  for (let i = 0; i < argv.length; i += 1) {
    const arg = argv[i]!;
    const value = (): number => {
      const n = Number(argv[++i]);
      if (!Number.isInteger(n) || n <= 0) throw new Error(`${arg} needs a positive integer`);
      return n;
    };
    if (arg === '--warm') warm = value();
    else if (arg === '--count') count = value();
    else if (arg === '--out') out = argv[++i] ?? '';
    else if (arg === 'bare' || arg === 'device' || arg === 'paused') kinds.push(arg);
    else throw new Error(`unknown argument ${arg}`);
  }
  return {
    kinds: kinds.length > 0 ? kinds : ['bare', 'device'],
    warm,
    count,
    out: out || mkdtempSync(join(tmpdir(), 'rest-instructions-')),
  };
}

/** Total Ir of a callgrind dump (its `totals:` line). */
function totalInstructions(file: string): number {
  const text = readFileSync(file, 'utf8');
  const match = /^totals:\s+(\d+)/m.exec(text);
  if (!match) throw new Error(`no totals in ${file}`);
  return Number(match[1]);
}

/**
 * Ir spent in node's platform worker threads: TurboFan's background compile jobs (even after tens
 * of thousands of requests, 25-40 % of the counted instructions, about as many in the bare app as
 * in the device, and changing from one run to the next: warm-up that never ends under valgrind),
 * concurrent marking and sweeping, parallel scavenging. What is left is the main thread: the
 * request path itself and the collections it runs.
 */
async function workerThreadInstructions(file: string): Promise<number> {
  const { stdout } = await run('callgrind_annotate', ['--inclusive=yes', file], { maxBuffer: 64 << 20 });
  const line = stdout.split('\n').find((l) => l.includes('PlatformWorkerThread'));
  return line ? Number(line.trim().split(/\s+/)[0]!.replaceAll(',', '')) : 0;
}

interface Count {
  /** Ir per request, all threads. */
  all: number;
  /** The main thread's. */
  main: number;
}

async function measure(kind: Options['kinds'][number], options: Options): Promise<Count> {
  const outFile = join(options.out, `callgrind.${kind}.out`);
  const server = startWorker('bench/workers/rest-server.ts', [kind], {
    wrapper: ['valgrind', '--tool=callgrind', '--instr-atstart=no', `--callgrind-out-file=${outFile}`],
  });
  const cannon = startWorker('bench/workers/autocannon.ts');
  try {
    const ready = await server.next<WorkerMessage & { port: number; token: string }>('ready', 600_000);
    await cannon.next('ready', 60_000);
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (kind !== 'bare') headers.authorization = `Bearer ${ready.token}`;
    const fire = async (amount: number): Promise<WorkerMessage & { ok2xx: number; total: number }> => {
      cannon.send({
        type: 'run',
        url: `http://127.0.0.1:${ready.port}/api/vendor-script`,
        method: 'POST',
        headers,
        body: JSON.stringify({ vendorScript: 'PRINT x' }),
        connections: 10,
        durationS: 3600,
        amount,
      });
      return await cannon.next('result', 1_800_000);
    };
    await fire(options.warm);
    const pid = String(server.pid);
    await run('callgrind_control', ['-i', 'on', pid]);
    const result = await fire(options.count);
    await run('callgrind_control', ['-i', 'off', pid]);
    await run('callgrind_control', ['-d', pid]);
    if (result.ok2xx !== options.count) {
      throw new Error(`${kind}: ${result.ok2xx} of ${options.count} requests answered 2xx`);
    }
    // The dump requested by `-d` is the file name with a sequence number (the first one).
    const file = `${outFile}.1`;
    const all = totalInstructions(file);
    const workers = await workerThreadInstructions(file);
    return { all: all / options.count, main: (all - workers) / options.count };
  } finally {
    await cannon.stop();
    await server.stop(60_000);
  }
}

const options = parseArgs(process.argv.slice(2));
mkdirSync(options.out, { recursive: true });
const { stdout: load } = await run('cat', ['/proc/loadavg']);
console.log(
  `${new Date().toISOString()} load ${load.trim()}; warm ${options.warm}, counted ${options.count}`,
);
const perRequest: Record<string, Count> = {};
const thousands = (n: number): string => Math.round(n).toLocaleString('en');
for (const kind of options.kinds) {
  const count = await measure(kind, options);
  perRequest[kind] = count;
  console.log(
    `${kind}: ${thousands(count.main)} instructions per request on the main thread (${thousands(count.all)} with node's worker threads)`,
  );
}
const bare = perRequest.bare;
if (bare !== undefined) {
  for (const kind of options.kinds.filter((k) => k !== 'bare')) {
    const count = perRequest[kind]!;
    console.log(
      `bare / ${kind}: ${(bare.main / count.main).toFixed(3)} on the main thread (${(bare.all / count.all).toFixed(3)} with worker threads)`,
    );
  }
}
console.log(`dumps in ${options.out}`);
process.exit(0);
