#!/usr/bin/env node
// The `regbridge` command: the built CLI, bundled in dist/bundle/ (`npm run build`; `npm ci` builds
// it through `prepare`). Run the TypeScript sources instead with `npm run dev -- <command>`.
//
// `regbridge serve ...` runs dist/bundle/serve.cjs, the same command line bundled as one script,
// compiled from V8's code cache that the build took from a start of it (serve.cjs.cache;
// docs/decisions/serve-code-cache.md): a register's start skips compiling the code it runs. A cache that is missing, damaged or from another node is ignored: serve then compiles the
// script as node compiles any. This file writes nothing, except the cache when the build asks.
// Every other command line runs dist/bundle/main.js (ES modules, a chunk per command).
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

const MISSING = 'regbridge: dist/ is missing; run `npm run build` first (npm ci runs it).';
const SERVE_SCRIPT = fileURLToPath(new URL('../dist/bundle/serve.cjs', import.meta.url));
const CACHE_HEADER = 'regbridge-code-cache 1';
// node's own module wrapper, so the script sees what a CommonJS module sees.
const WRAPPER = ['(function (exports, require, module, __filename, __dirname) { ', '\n})'];
// Loaded only for `serve`: `--help` and the other commands need none of them.
const require = createRequire(import.meta.url);

/**
 * The cache's V8 data, if it belongs to this build of the script and is intact, else undefined.
 * Its first line is `regbridge-code-cache 1 <build id> <sha1 of the data>`: V8 compares only the
 * script's length, its own version and its flags, and a damaged cache that passes those crashes
 * node (checked: a few flipped bytes end it with "unreachable code"), hence the hash.
 */
function readCodeCache(cacheFile, buildId, debug) {
  let file;
  try {
    file = readFileSync(cacheFile);
  } catch (error) {
    debug('no code cache (%s)', error.code);
    return undefined;
  }
  const newline = file.indexOf(10);
  const [magic, version, id, sha1] = file.toString('latin1', 0, Math.max(newline, 0)).split(' ');
  const data = file.subarray(newline + 1);
  if (newline < 0 || `${magic} ${version}` !== CACHE_HEADER || id !== buildId) {
    debug('code cache ignored: not of this build of %s', SERVE_SCRIPT);
    return undefined;
  }
  if (sha1Of(data) !== sha1) {
    debug('code cache ignored: damaged (its hash differs)');
    return undefined;
  }
  return data;
}

async function serve() {
  const vm = require('node:vm');
  const debug = require('node:util').debuglog('regbridge');
  let source;
  try {
    // ASCII only (esbuild escapes the rest; the build checks it): latin1 makes V8's one-byte
    // string without UTF-8 decoding, half the CPU of a 1.7 MB read.
    source = readFileSync(SERVE_SCRIPT, 'latin1');
  } catch (error) {
    if (error.code !== 'ENOENT') throw error;
    console.error(MISSING);
    process.exit(1);
  }
  // node maps the stack traces of a module it loads, not of a vm.Script: with source maps on
  // (`--enable-source-maps`, for a stack trace to read), the script is required, uncached.
  if (process.sourceMapsEnabled) {
    debug('source maps on: the script is required, without the code cache');
    await require(SERVE_SCRIPT).main();
    return;
  }
  const buildId = /\/\/# regbridgeBuild=(\w+)\s*$/.exec(source.slice(-100))?.[1];
  const cachedData = buildId ? readCodeCache(`${SERVE_SCRIPT}.cache`, buildId, debug) : undefined;
  const script = new vm.Script(WRAPPER[0] + source + WRAPPER[1], {
    filename: SERVE_SCRIPT,
    cachedData,
  });
  if (cachedData) debug('code cache %s', script.cachedDataRejected ? 'rejected by V8' : 'accepted');
  const module = { exports: {} };
  script.runInThisContext()(
    module.exports,
    createRequire(SERVE_SCRIPT),
    module,
    SERVE_SCRIPT,
    dirname(SERVE_SCRIPT),
  );
  if (process.env.REGBRIDGE_WRITE_CODE_CACHE === '1' && process.send) offerCodeCache(script, buildId);
  await module.exports.main();
}

/** The hash a cache file's first line carries of its data. */
function sha1Of(data) {
  return require('node:crypto').createHash('sha1').update(data).digest('hex');
}

/**
 * For the build (scripts/code-cache.mjs), which starts serve with an IPC channel and asks once
 * it has answered /health: the cache then holds what a start compiled, lazy functions included.
 */

function offerCodeCache(script, buildId) {
  const { renameSync, writeFileSync } = require('node:fs');
  process.on('message', (message) => {
    if (message !== 'write-code-cache') return;
    const data = script.createCachedData();
    const file = `${SERVE_SCRIPT}.cache`;
    // Whole or not at all: a reader never sees half a file. The first line is what readCodeCache parses.
    const header = `${CACHE_HEADER} ${buildId} ${sha1Of(data)}\n`;
    writeFileSync(`${file}.tmp`, Buffer.concat([Buffer.from(header), data]));
    renameSync(`${file}.tmp`, file);
    process.send('code-cache-written');
  });
}

if (process.argv[2] === 'serve') {
  await serve();
} else {
  try {
    await import('../dist/bundle/main.js');
  } catch (error) {
    if (error?.code === 'ERR_MODULE_NOT_FOUND' && String(error.message).includes('dist/bundle/main.js')) {
      console.error(MISSING);
      process.exit(1);
    }
    throw error;
  }
}
