/**
 * The register footprint (docs/decisions/load-only-what-runs.md; the figures are in `npm run bench`,
 * never here): only the command asked for is loaded, a device builds its OpenAPI description on
 * the first request for it, and mqtt-packet's 65,536 packet-id buffers are never built, from the
 * sources and in the bundle the bin runs (dist/bundle/, scripts/build.mjs).
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { Command } from 'commander';
import Fastify from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import { StoreBroker } from '../../broker/store-broker.ts';
import { COMMAND_INDEX, registerCommands, requestedCommand } from '../../cli/command-index.ts';
import { COMMANDS } from '../../cli/commands.ts';
import { registerLazyOpenApi } from '../../src/routes/openapi.ts';
import {
  SERVE_ON_FREE_PORTS,
  startCli,
  stopCli,
  waitForOutput,
  waitForPrinted,
} from '../support/cli-process.ts';
import { ROOT } from '../support/controller-cli.ts';
import { startTestApp, type TestApp } from '../support/http.ts';
import { silent } from '../support/loggers.ts';

function root(): Command {
  return new Command('regbridge').description('d').exitOverride();
}

describe('lazy commands (cli/command-index.ts)', () => {
  it('lists the commands of cli/commands.ts, in order, with their own help lines', async () => {
    const eager = root();
    for (const entry of COMMANDS) entry.register(eager);
    const lazy = root();
    await registerCommands(lazy, []);
    expect(COMMAND_INDEX.map((c) => c.name)).toEqual(COMMANDS.map((c) => c.name));
    for (const command of eager.commands) {
      const entry = COMMAND_INDEX.find((c) => c.name === command.name())!;
      expect(entry.description, command.name()).toBe(command.description());
      expect(entry.term, command.name()).toBe(eager.createHelp().subcommandTerm(command));
    }
    expect(lazy.helpInformation()).toBe(eager.helpInformation());
  });

  it('loads the command a command line names, or the one `help` names, and no other', async () => {
    expect(requestedCommand(['serve', '--port', '0'])?.name).toBe('serve');
    expect(requestedCommand(['--help'])).toBeUndefined();
    expect(requestedCommand(['help', 'fanout'])?.name).toBe('fanout');
    expect(requestedCommand(['nonsense'])).toBeUndefined();
    const program = root();
    await registerCommands(program, ['run', 'x.txt']);
    const run = program.commands.find((c) => c.name() === 'run')!;
    const serve = program.commands.find((c) => c.name() === 'serve')!;
    expect(run.options.map((o) => o.long)).toContain('--url');
    expect(serve.options).toEqual([]);
  });

  it('`regbridge --help` loads neither zod nor fastify, aedes, mqtt, pino or SQLite', async () => {
    // An ESM load hook that prints every module loaded through import (every package entry).
    // Node runs hooks on a thread of their own, whose process.stderr reaches the process's
    // asynchronously: what it wrote just before --help exited could be lost (a chunk's line went
    // missing in one CI run). A synchronous write to fd 2 cannot be.
    const hook = `data:text/javascript,${encodeURIComponent(
      'import { writeSync } from "node:fs"; export async function load(u, c, n) { writeSync(2, "LOADED " + u + "\\n"); return n(u, c); }',
    )}`;
    const register = `data:text/javascript,${encodeURIComponent(
      `import { register } from 'node:module'; register(${JSON.stringify(hook)});`,
    )}`;
    const { code, stdout, stderr } = await new Promise<{
      code: number | null;
      stdout: string;
      stderr: string;
    }>((resolve, reject) => {
      const child = spawn(process.execPath, ['--import', register, 'bin/regbridge.js', '--help'], {
        cwd: ROOT,
      });
      let out = '';
      let err = '';
      child.stdout.on('data', (c: Buffer) => {
        out += c.toString();
      });
      child.stderr.on('data', (c: Buffer) => {
        err += c.toString();
      });
      child.on('error', reject);
      child.on('close', (exit) => resolve({ code: exit, stdout: out, stderr: err }));
    });
    expect(code).toBe(0);
    expect(stdout).toContain('serve [options]');
    const loaded = stderr.split('\n').filter((l) => l.startsWith('LOADED '));
    // The bin runs the bundle (scripts/build.mjs): a package is loaded from node_modules or inside
    // a file of dist/bundle/, whose inputs the build lists.
    const inputs = JSON.parse(readFileSync(join(ROOT, 'dist/bundle/inputs.json'), 'utf8')) as Record<
      string,
      string[]
    >;
    const bundleFiles = loaded.flatMap((l) => /\/dist\/bundle\/([^/]+\.js)$/.exec(l)?.[1] ?? []);
    expect(bundleFiles).toContain('main.js');
    const files = [...loaded, ...bundleFiles.flatMap((f) => inputs[f] ?? [`unlisted bundle file ${f}`])];
    // A loaded file is a URL (file:///.../node_modules/x/...); a bundle's input is relative to the
    // project (node_modules/x/...).
    const ofPackage = (name: string) => (f: string) => new RegExp(`(^|/)node_modules/${name}/`).test(f);
    expect(files.some(ofPackage('commander'))).toBe(true);
    expect(files.filter((f) => f.startsWith('unlisted'))).toEqual([]);
    for (const name of ['zod', 'fastify', 'aedes', 'mqtt', 'pino', 'better-sqlite3', 'prom-client']) {
      expect(files.filter(ofPackage(name)), name).toEqual([]);
    }
    // Nor any command's module: each command is a chunk of its own, loaded when it runs.
    expect(files.filter((f) => /(^|\/)cli\/\w[\w-]*-command\.ts$/.test(f))).toEqual([]);
  });
});

describe('a device builds its OpenAPI description when first asked', () => {
  let t: TestApp | undefined;
  afterEach(async () => {
    await t?.close();
    t = undefined;
  });

  it('has no swagger plugin until /openapi.json or /docs is requested, then answers from it', async () => {
    t = await startTestApp();
    expect(t.app.hasPlugin('@fastify/swagger')).toBe(false);
    const first = await t.app.inject({ url: '/openapi.json' });
    expect(first.statusCode).toBe(200);
    expect(first.headers['content-type']).toMatch(/^application\/json/);
    const again = await t.app.inject({ url: '/openapi.json' });
    expect(again.body).toBe(first.body);
    const docs = await t.app.inject({ url: '/docs/' });
    expect(docs.statusCode).toBe(200);
    expect(docs.headers['content-type']).toMatch(/^text\/html/);
    const css = await t.app.inject({ url: '/docs/static/swagger-ui.css' });
    expect(css.statusCode).toBe(200);
    expect(css.headers['content-type']).toMatch(/^text\/css/);
    expect(css.rawPayload.length).toBeGreaterThan(1000);
    const redirect = await t.app.inject({ url: '/docs/static/index.html' });
    expect(redirect.statusCode).toBe(302);
    expect(redirect.headers.location).toBe('/docs/');
    expect(redirect.body).toBe('');
    const missing = await t.app.inject({ url: '/docs/static/no-such-file.js' });
    expect(missing.statusCode).toBe(404);
  });
});

describe('registerLazyOpenApi', () => {
  it('builds the documentation app once, and again after a build that failed', async () => {
    let builds = 0;
    const app = Fastify();
    const { closeDocsApp } = registerLazyOpenApi(app, async () => {
      builds += 1;
      if (builds === 1) throw new Error('first build fails');
      const docs = Fastify();
      docs.get('/openapi.json', async () => ({ openapi: '3.0.3', build: builds }));
      return docs;
    });
    try {
      expect((await app.inject({ url: '/openapi.json' })).statusCode).toBe(500);
      const first = await app.inject({ url: '/openapi.json' });
      expect(first.json()).toEqual({ openapi: '3.0.3', build: 2 });
      await app.inject({ url: '/openapi.json' });
      expect(builds).toBe(2);
    } finally {
      await closeDocsApp();
      await app.close();
    }
  });
});

describe("mqtt-packet's packet-id cache (src/mqtt-packet-cache.ts)", () => {
  it('is off once a broker exists, so its 65,536 buffers are never built', async () => {
    // Built, not started: the constructor is where it is switched off.
    new StoreBroker({
      port: 0,
      host: '127.0.0.1',
      ns: 'pos',
      users: [],
      logger: silent,
    });
    for (const owner of ['mqtt', 'aedes']) {
      const require = createRequire(createRequire(import.meta.url).resolve(owner));
      const packet = require('mqtt-packet') as { writeToStream: { cacheNumbers: boolean } };
      expect(packet.writeToStream.cacheNumbers, owner).toBe(false);
    }
  });

  it('is off in the bundled CLI too: `serve` builds no 65,536 two-byte buffers', async () => {
    // Counts Buffer.allocUnsafe(2), what the cache is made of, in the child process.
    const counter = `data:text/javascript,${encodeURIComponent(
      [
        "import { Buffer } from 'node:buffer';",
        'let n = 0;',
        'const allocUnsafe = Buffer.allocUnsafe;',
        'Buffer.allocUnsafe = function (size) { if (size === 2) n += 1; return allocUnsafe.call(this, size); };',
        "process.on('SIGUSR2', () => process.stderr.write('TWO_BYTE_BUFFERS ' + n + '\\n'));",
      ].join('\n'),
    )}`;
    const serve = startCli([...SERVE_ON_FREE_PORTS, '--log-level', 'warn'], {
      NODE_OPTIONS: `--import=${counter}`,
    });
    try {
      const port = await waitForOutput(serve, /listening on http:\/\/127\.0\.0\.1:(\d+)/);
      // The bridge has connected and subscribed (packet ids written both ways) before it listens.
      expect((await fetch(`http://127.0.0.1:${port}/health`)).status).toBe(200);
      serve.child.kill('SIGUSR2');
      await waitForPrinted(serve, () => /TWO_BYTE_BUFFERS \d+/.test(serve.stderr()), 'buffer count');
      const count = Number(/TWO_BYTE_BUFFERS (\d+)/.exec(serve.stderr())![1]);
      expect(count).toBeLessThan(1000);
    } finally {
      await stopCli(serve);
    }
  });
});
