// V8's code cache for `regbridge serve` (docs/decisions/serve-code-cache.md),
// written by `npm run build` next to the script it belongs to: dist/bundle/serve.cjs.cache.
//
// The cache is taken from a real start, after the first /health has been answered, so it holds
// every function a start compiles (V8 compiles most functions lazily, when first called), not
// only the top level. bin/regbridge.js reads it; the format is its `readCodeCache`'s.
import { spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { appendFileSync, readFileSync, rmSync } from 'node:fs';

const START_TIMEOUT_MS = 60_000;

/**
 * Stamps the script with a build id (a hash of its text, as its last line: a cache is used only
 * with the script it was taken from; V8 itself compares lengths only), then runs `serve` once and
 * asks it for its cache. A start that fails leaves no cache and a warning: serve then compiles as
 * any script does, and the tests (test/cli/cli-code-cache.test.ts) fail on a build without one.
 */
export async function writeServeCodeCache(script) {
  const text = readFileSync(script);
  // bin/regbridge.js reads the script as latin1 (no UTF-8 decoding): the same text only if ASCII.
  const nonAscii = text.findIndex((byte) => byte > 0x7f);
  if (nonAscii >= 0)
    throw new Error(`build: ${script} has a non-ASCII byte at ${nonAscii} (esbuild's charset?)`);
  const id = createHash('sha256').update(text).digest('hex').slice(0, 32);
  appendFileSync(script, `\n//# regbridgeBuild=${id}\n`);
  try {
    await cacheFromARun();
  } catch (error) {
    rmSync(`${script}.cache`, { force: true });
    console.warn(`build: no code cache for serve (${error.message}); serve will compile at each start`);
  }
}

async function cacheFromARun() {
  // node's own V8 flags only: a cache taken under other flags is rejected by a plain `node`.
  const env = { ...process.env, REGBRIDGE_WRITE_CODE_CACHE: '1' };
  delete env.NODE_OPTIONS;
  const user = `regbridge-build:${randomBytes(12).toString('base64url')}`;
  const args = ['bin/regbridge.js', 'serve', '--port', '0', '--host', '127.0.0.1', '--broker-port', '0'];
  args.push('--broker-host', '127.0.0.1', '--user', user, '--log-level', 'warn');
  // V8's flags as a fresh node has them when it compiles the script: a cache taken after serve
  // set its heap growth (cli/heap-growth.ts) carries another flag hash and every start rejects it.
  args.push('--heap-growth', '0');
  const child = spawn(process.execPath, args, { env, stdio: ['ignore', 'pipe', 'inherit', 'ipc'] });
  const exited = new Promise((resolve) => child.once('exit', resolve));
  let timer;
  try {
    const port = await Promise.race([
      listeningPort(child),
      exited.then((code) => Promise.reject(new Error(`serve exited with ${code}`))),
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error('serve did not start in 60 s')), START_TIMEOUT_MS);
      }),
    ]);
    const health = await fetch(`http://127.0.0.1:${port}/health`);
    if (health.status !== 200) throw new Error(`/health answered ${health.status}`);
    await health.arrayBuffer();
    const written = new Promise((resolve) =>
      child.on('message', (m) => m === 'code-cache-written' && resolve()),
    );
    child.send('write-code-cache');
    await Promise.race([
      written,
      exited.then((code) => Promise.reject(new Error(`serve exited with ${code}`))),
    ]);
  } finally {
    clearTimeout(timer);
    child.kill('SIGTERM');
    await exited;
  }
}

function listeningPort(child) {
  return new Promise((resolve) => {
    let output = '';
    child.stdout.on('data', (chunk) => {
      output += chunk.toString('utf8');
      const port = /listening on http:\/\/[^\s:]+:(\d+)/.exec(output)?.[1];
      if (port !== undefined) resolve(port);
    });
  });
}
