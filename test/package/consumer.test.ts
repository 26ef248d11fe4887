/**
 * The package as a user gets it: `npm pack`, the tarball installed into a temporary project, the
 * client imported from plain node (ESM, and CommonJS through require) and run against a real
 * device started from the installed package's own bin, and a consumer file type-checked by tsc
 * under nodenext. Prints the tarball's size and file count and the consumer's installed size.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { cp, mkdtemp, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import buildDistIfStale from '../setup/fresh-dist.ts';
import { ROOT } from '../support/controller-cli.ts';

const run = promisify(execFile);
const FIXTURES = join(ROOT, 'test', 'package', 'consumer');
const USER = 'consumer';
const PASSWORD = 'consumer-secret';

interface PackResult {
  filename: string;
  size: number;
  unpackedSize: number;
  entryCount: number;
  files: { path: string }[];
}

let work: string;
let project: string;
let packed: PackResult;
let device: ChildProcess | undefined;
let devicePort: number;
let deviceStderr = '';

async function diskUsage(dir: string): Promise<{ bytes: number; packages: number }> {
  let bytes = 0;
  let packages = 0;
  for (const entry of await readdir(dir, { withFileTypes: true, recursive: true })) {
    if (entry.isFile()) bytes += (await stat(join(entry.parentPath, entry.name))).size;
    if (
      entry.isFile() &&
      entry.name === 'package.json' &&
      /node_modules\/(@[^/]+\/)?[^/]+$/.test(entry.parentPath)
    )
      packages += 1;
  }
  return { bytes, packages };
}

/** Starts `regbridge serve` from the installed package and resolves with its HTTP port. */
function startInstalledDevice(): Promise<number> {
  const bin = join(project, 'node_modules', 'regbridge', 'bin', 'regbridge.js');
  const args = ['serve', '--port', '0', '--host', '127.0.0.1', '--no-mqtt', '--user', `${USER}:${PASSWORD}`];
  // NODE_DEBUG=regbridge: the bin says whether V8 took the code cache the package ships.
  const env: NodeJS.ProcessEnv = { ...process.env, NODE_DEBUG: 'regbridge' };
  delete env.NODE_OPTIONS;
  device = spawn(process.execPath, [bin, ...args], { cwd: project, env, stdio: ['ignore', 'pipe', 'pipe'] });
  const child = device;
  return new Promise((resolve, reject) => {
    let out = '';
    child.stderr?.on('data', (chunk: Buffer) => {
      deviceStderr += chunk.toString();
    });
    child.stdout?.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const match = /listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(out);
      if (match) resolve(Number(match[1]));
    });
    child.on('exit', (code) => reject(new Error(`device exited (${code}):\n${out}\n${deviceStderr}`)));
  });
}

async function node(args: string[]): Promise<{ stdout: string; stderr: string }> {
  return run(process.execPath, args, { cwd: project, timeout: 30_000 });
}

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), 'regbridge-consumer-'));
  // dist/ as `prepare` builds it (rebuilt here only when stale), so the pack need not run scripts.
  buildDistIfStale();
  const { stdout } = await run('npm', ['pack', '--json', '--ignore-scripts', '--pack-destination', work], {
    cwd: ROOT,
    maxBuffer: 16 * 1024 * 1024,
  });
  packed = (JSON.parse(stdout) as PackResult[])[0]!;
  console.log(
    `tarball ${packed.filename}: ${packed.size} bytes packed, ${packed.unpackedSize} unpacked, ${packed.entryCount} files`,
  );

  project = join(work, 'project');
  await cp(FIXTURES, project, { recursive: true });
  await writeFile(
    join(project, 'package.json'),
    `${JSON.stringify({ name: 'consumer', private: true, type: 'module' }, null, 2)}\n`,
  );
  await run('npm', ['install', '--no-audit', '--no-fund', '--loglevel=error', join(work, packed.filename)], {
    cwd: project,
  });
  const usage = await diskUsage(join(project, 'node_modules'));
  console.log(
    `client-only consumer: node_modules ${(usage.bytes / 1024 / 1024).toFixed(1)} MiB in ${usage.packages} packages`,
  );
  // Types for the consumer's own tsc run: what a TypeScript project has anyway.
  await run(
    'npm',
    ['install', '--no-audit', '--no-fund', '--loglevel=error', '--save-dev', '@types/node@20'],
    {
      cwd: project,
    },
  );
  devicePort = await startInstalledDevice();
});

afterAll(async () => {
  device?.kill('SIGTERM');
  if (work) await rm(work, { recursive: true, force: true });
});

describe('the packed tarball', () => {
  it('holds the built code, its declarations and the docs, and no sources, tests or CI', () => {
    const paths = packed.files.map((file) => file.path);
    for (const file of [
      'package.json',
      'README.md',
      'bin/regbridge.js',
      'dist/src/client/index.js',
      'dist/src/client/index.d.ts',
      'dist/src/client/index.js.map',
      'dist/cli/main.js',
      'dist/bundle/main.js',
      'dist/bundle/inputs.json',
      'dist/bundle/serve.cjs',
      'dist/bundle/serve.cjs.cache',
      'dist/controller/index.d.ts',
      'dist/controller/dashboard/index.html',
      'docs/client.md',
    ])
      expect(paths, file).toContain(file);
    const unwanted = paths.filter((path) =>
      /^(test|bench|\.ci|src|cli|bridge|broker|controller)\/|\.ts$(?<!\.d\.ts)|tsbuildinfo|Dockerfile/.test(
        path,
      ),
    );
    expect(unwanted).toEqual([]);
  });
});

describe('an installed package', () => {
  it('runs the client from plain node ESM, loading no server dependency', async () => {
    const { stdout, stderr } = await node([
      '--import',
      './loaded-packages.mjs',
      'client.mjs',
      String(devicePort),
      USER,
      PASSWORD,
    ]);
    expect(JSON.parse(stdout)).toEqual({
      report: expect.stringContaining('X REPORT'),
      missing: 'TASK_DOES_NOT_EXIST',
    });
    const loaded = JSON.parse(/LOADED_PACKAGES (.*)/.exec(stderr)![1]!) as string[];
    expect(loaded).toEqual(['regbridge', 'undici', 'zod']);
  });

  it('runs the client from CommonJS through require()', async () => {
    const { stdout } = await node(['client.cjs', String(devicePort), USER, PASSWORD]);
    expect(JSON.parse(stdout)).toEqual({ report: expect.stringContaining('from commonjs') });
  });

  it('installs no TypeScript tooling: tsx, esbuild and typescript are dev dependencies', () => {
    for (const tool of ['tsx', 'esbuild', 'typescript'])
      expect(existsSync(join(project, 'node_modules', tool)), tool).toBe(false);
  });

  it('runs its bin from the built JS: regbridge --help', async () => {
    const { stdout } = await run(join(project, 'node_modules', '.bin', 'regbridge'), ['--help'], {
      cwd: project,
    });
    expect(stdout).toMatch(/^Usage: regbridge/);
    for (const command of ['serve', 'broker', 'fanout', 'watch', 'run', 'demo'])
      expect(stdout).toContain(command);
  });

  it('starts `serve` from the code cache the package ships (built with this node)', () => {
    expect(/REGBRIDGE \d+: (.*code cache.*)/.exec(deviceStderr)?.[1]).toBe('code cache accepted');
  });

  it('type-checks a consumer of every entry point under nodenext (library types checked too)', async () => {
    const tsc = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
    const result = await node([tsc, '-p', 'tsconfig.json']).catch((error: { stdout: string }) => error);
    expect(result.stdout).toBe('');
  });
});
