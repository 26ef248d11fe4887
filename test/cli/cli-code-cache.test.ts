/**
 * `regbridge serve` starts from V8's code cache (bin/regbridge.js, scripts/code-cache.mjs;
 * docs/decisions/serve-code-cache.md): the build writes a cache that a start
 * accepts; a cache that is missing, damaged or taken under other V8 flags is ignored and serve
 * answers as always; a start writes nothing, in the package or anywhere else. Whether V8 used
 * the cache is what the bin logs under NODE_DEBUG=regbridge. No timing here: the start-up time
 * is a figure of `npm run bench` (scenario footprint).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import {
  cpSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ROOT } from '../support/controller-cli.ts';

const SERVE = ['serve', '--port', '0', '--host', '127.0.0.1', '--broker-port', '0'];
const SERVE_FLAGS = [...SERVE, '--broker-host', '127.0.0.1', '--user', 'cache:test-password-1'];
const running = new Set<ChildProcess>();

interface Started {
  child: ChildProcess;
  port: number;
  stderr: () => string;
}

/** `node [nodeArgs] bin/regbridge.js serve ...` in `dir`, resolved once it printed its HTTP port. */
async function startServe(
  dir: string,
  options: { env?: Record<string, string>; nodeArgs?: string[]; ipc?: boolean } = {},
): Promise<Started> {
  const env: NodeJS.ProcessEnv = { ...process.env, NODE_DEBUG: 'regbridge', ...options.env };
  delete env.NODE_OPTIONS; // node's own V8 flags, as the build's start had them
  const child = spawn(process.execPath, [...(options.nodeArgs ?? []), 'bin/regbridge.js', ...SERVE_FLAGS], {
    cwd: dir,
    env,
    stdio: ['ignore', 'pipe', 'pipe', ...(options.ipc ? (['ipc'] as const) : [])],
  });
  running.add(child);
  child.once('exit', () => running.delete(child));
  let out = '';
  let err = '';
  child.stderr!.on('data', (chunk: Buffer) => {
    err += chunk.toString();
  });
  const port = await new Promise<number>((resolve, reject) => {
    child.stdout!.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const match = /listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(out);
      if (match) resolve(Number(match[1]));
    });
    child.once('exit', (code) => reject(new Error(`serve exited with ${code}:\n${out}\n${err}`)));
  });
  return { child, port, stderr: () => err };
}

async function stop(started: Started): Promise<void> {
  const exited = once(started.child, 'exit');
  started.child.kill('SIGTERM');
  await exited;
}

/** What a start logged about the cache (bin/regbridge.js, NODE_DEBUG=regbridge). */
function cacheLine(started: Started): string | undefined {
  return /REGBRIDGE \d+: (.*code cache.*)/.exec(started.stderr())?.[1];
}

/** /health and the OpenAPI description (loaded on first use through require in the script). */
async function expectAnswers(port: number): Promise<void> {
  const health = await fetch(`http://127.0.0.1:${port}/health`);
  expect(health.status).toBe(200);
  expect(((await health.json()) as { status: string }).status).toBe('ok');
  const openapi = await fetch(`http://127.0.0.1:${port}/openapi.json`);
  expect(openapi.status).toBe(200);
  expect(((await openapi.json()) as { openapi: string }).openapi).toBe('3.0.3');
}

/** Every file of the package copy (not its node_modules link) with size and time, to see that nothing changed. */
function listing(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .filter((name) => name !== 'node_modules' && !name.startsWith('node_modules/'))
    .map((name) => join(dir, name))
    .filter((path) => statSync(path).isFile())
    .map((path) => `${path} ${statSync(path).size} ${statSync(path).mtimeMs}`)
    .sort();
}

// Each test starts serve once (one test twice) and asks for its OpenAPI description, which builds
// swagger: up to 30 s on this 2-core machine at load 30, so twice vitest's default of the tier.
const START_TIMEOUT = 60_000;

afterEach(() => {
  for (const child of running) child.kill('SIGKILL');
});

describe('the code cache the build writes', { timeout: START_TIMEOUT }, () => {
  it('belongs to the built script, and a start accepts it and answers', async () => {
    const script = readFileSync(join(ROOT, 'dist/bundle/serve.cjs'), 'utf8');
    const buildId = /\/\/# regbridgeBuild=(\w+)\s*$/.exec(script)?.[1];
    expect(buildId).toMatch(/^[0-9a-f]{32}$/);
    const cache = readFileSync(join(ROOT, 'dist/bundle/serve.cjs.cache'));
    const header = cache.toString('latin1', 0, cache.indexOf(10)).split(' ');
    expect(header.slice(0, 3)).toEqual(['regbridge-code-cache', '1', buildId]);
    const serve = await startServe(ROOT);
    await expectAnswers(serve.port);
    expect(cacheLine(serve)).toBe('code cache accepted');
    await stop(serve);
  });

  it('is not used with --enable-source-maps: the script is required, so node maps its stack traces', async () => {
    const serve = await startServe(ROOT, { nodeArgs: ['--enable-source-maps'] });
    await expectAnswers(serve.port);
    expect(cacheLine(serve)).toBe('source maps on: the script is required, without the code cache');
    await stop(serve);
  });
});

describe('a cache serve cannot use', { timeout: START_TIMEOUT }, () => {
  // A copy of the package's run-time files: the bin, the serve script, package.json, and the
  // dependencies the script requires from node_modules (swagger on the first /openapi.json).
  let pkg: string;
  let home: string;
  let cacheFile: string;
  let goodCache: Buffer;
  const env = (): Record<string, string> => ({ HOME: home, TMPDIR: home, XDG_CACHE_HOME: home });

  beforeAll(() => {
    pkg = mkdtempSync(join(tmpdir(), 'regbridge-cache-'));
    home = join(pkg, 'home');
    mkdirSync(home);
    mkdirSync(join(pkg, 'dist/bundle'), { recursive: true });
    cpSync(join(ROOT, 'bin'), join(pkg, 'bin'), { recursive: true });
    cpSync(join(ROOT, 'package.json'), join(pkg, 'package.json'));
    for (const file of ['serve.cjs', 'serve.cjs.map'])
      cpSync(join(ROOT, 'dist/bundle', file), join(pkg, 'dist/bundle', file));
    symlinkSync(join(ROOT, 'node_modules'), join(pkg, 'node_modules'));
    cacheFile = join(pkg, 'dist/bundle/serve.cjs.cache');
    goodCache = readFileSync(join(ROOT, 'dist/bundle/serve.cjs.cache'));
  });
  afterAll(() => {
    if (pkg) rmSync(pkg, { recursive: true, force: true });
  });

  /** Starts serve with `cache` (or none), checks it answers, and that it wrote nothing anywhere. */
  async function startWith(cache: Buffer | undefined): Promise<string | undefined> {
    rmSync(cacheFile, { force: true });
    if (cache) writeFileSync(cacheFile, cache);
    const before = listing(pkg);
    const serve = await startServe(pkg, { env: env() });
    await expectAnswers(serve.port);
    await stop(serve);
    expect(listing(pkg)).toEqual(before);
    expect(readdirSync(home)).toEqual([]);
    return cacheLine(serve);
  }

  it("is accepted when it is the build's, byte for byte (the copy works)", async () => {
    expect(await startWith(goodCache)).toBe('code cache accepted');
  });

  it('is missing: serve compiles the script', async () => {
    expect(await startWith(undefined)).toBe('no code cache (ENOENT)');
  });

  // Flipped bytes in the middle of V8's data pass V8's own checks (length, version, flags) and
  // crash node ("unreachable code") when it deserializes them: the bin's hash must catch them.
  it('is damaged (V8 would crash on it): ignored by its hash', async () => {
    const damaged = Buffer.from(goodCache);
    const middle = damaged.length >> 1;
    for (let i = middle; i < middle + 400; i += 1) damaged[i]! ^= 0x5a;
    expect(await startWith(damaged)).toBe('code cache ignored: damaged (its hash differs)');
  });

  it('is cut short: ignored by its hash', async () => {
    expect(await startWith(goodCache.subarray(0, goodCache.length >> 1))).toBe(
      'code cache ignored: damaged (its hash differs)',
    );
  });

  it('is not a cache at all: ignored', async () => {
    expect(await startWith(Buffer.from('not a cache at all'))).toMatch(
      /^code cache ignored: not of this build/,
    );
  });

  it('is of another build of the script: ignored', async () => {
    const header = goodCache.toString('latin1', 0, goodCache.indexOf(10));
    const other = Buffer.concat([
      Buffer.from(header.replace(/ [0-9a-f]{32} /, ` ${'0'.repeat(32)} `)),
      goodCache.subarray(header.length),
    ]);
    expect(await startWith(other)).toMatch(/^code cache ignored: not of this build/);
  });

  it(
    'was taken under other V8 flags (as from another node): V8 rejects it, serve compiles',
    async () => {
      // The build's way of taking a cache (an IPC request once /health answered), under a flag
      // that a plain `node` does not have.
      rmSync(cacheFile, { force: true });
      const taking = await startServe(pkg, {
        env: { ...env(), REGBRIDGE_WRITE_CODE_CACHE: '1' },
        nodeArgs: ['--no-flush-bytecode'],
        ipc: true,
      });
      expect((await fetch(`http://127.0.0.1:${taking.port}/health`)).status).toBe(200);
      const written = once(taking.child, 'message');
      taking.child.send('write-code-cache');
      expect((await written)[0]).toBe('code-cache-written');
      await stop(taking);
      const foreign = readFileSync(cacheFile);
      expect(await startWith(foreign)).toBe('code cache rejected by V8');
    },
    2 * START_TIMEOUT,
  ); // two starts of serve
});
