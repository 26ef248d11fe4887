// `npm run build`: a clean dist/ from tsconfig.build.json (JS, declarations, source maps), plus
// the files the code reads at run time that tsc does not emit (the controller's dashboard page),
// plus the command line bundled by esbuild into dist/bundle/ (what bin/regbridge.js runs), plus
// `serve` bundled again as one script with V8's code cache for it (scripts/code-cache.mjs).
//
// Why a bundle (docs/decisions/command-line-bundled.md): a device that loads ~730
// files one by one spends most of its start resolving, reading and compiling them; one bundle per
// command, with the packages inside, starts in about half the CPU time and ~10 MiB less memory.
// The library entry points (package.json `exports`) stay tsc's one-to-one output.
import { execFileSync } from 'node:child_process';
import { cpSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { writeServeCodeCache } from './code-cache.mjs';
import { lazyTransports } from './mqtt-fixes/lazy-transports.mjs';

const ASSETS = ['controller/dashboard'];
const BUNDLE_DIR = 'dist/bundle';
const SERVE_SCRIPT = `${BUNDLE_DIR}/serve.cjs`;

/**
 * Left out of the bundle, loaded from node_modules at run time as before: a native addon
 * (better-sqlite3), packages that read files next to their own code (swagger-ui's and static's
 * assets) or are loaded through createRequire (pino-pretty), and what only `--redis-url` loads:
 * what a command never runs need not be compiled at its start.
 */
const EXTERNAL = [
  'better-sqlite3',
  'pino-pretty',
  '@fastify/swagger',
  '@fastify/swagger-ui',
  '@fastify/static',
  'ioredis',
  'mqemitter-redis',
  'aedes-persistence-redis',
  // fastify's default compilers (ajv, fast-json-stringify): a device gives fastify zod's
  // (src/app.ts), so only an app built without them (the controller service) loads these.
  '@fastify/ajv-compiler',
  '@fastify/fast-json-stringify-compiler',
];

rmSync('dist', { recursive: true, force: true });
const require = createRequire(import.meta.url);
const tsc = require.resolve('typescript/bin/tsc');
try {
  execFileSync(process.execPath, [tsc, '-p', 'tsconfig.build.json'], { stdio: 'inherit' });
} catch (error) {
  process.exit(error.status ?? 1); // tsc printed the errors
}
for (const dir of ASSETS) cpSync(dir, `dist/${dir}`, { recursive: true });

/**
 * Inside the bundle, src/mqtt-packet-cache.ts switches off the cache of the mqtt-packet the
 * bundle holds: its createRequire would reach the copy in node_modules, which the bundle never
 * runs (the check below makes sure the bundle holds one copy).
 */
const mqttPacketCache = `
import mqttPacket from 'mqtt-packet';
export function disableMqttPacketNumberCache(): void {
  mqttPacket.writeToStream.cacheNumbers = false;
}
`;

// mqtt.js's transports required on first use in the bundle (fenced and guarded there).
const mqttLazy = lazyTransports(readFileSync);

/** @type {import('esbuild').Plugin} */
const sourcesForBundle = {
  name: 'regbridge-sources',
  setup(build) {
    build.onLoad({ filter: /[\\/]src[\\/]mqtt-packet-cache\.ts$/ }, (args) => ({
      contents: mqttPacketCache,
      loader: 'ts',
      resolveDir: join(args.path, '..'),
    }));
    build.onLoad({ filter: mqttLazy.filter }, (args) => mqttLazy.load(args));
    // The `serve` script runs only for `regbridge serve ...` (bin/regbridge.js), which never loads
    // another command's module (cli/command-index.ts): those stay out of it.
    build.onResolve({ filter: /^\.\/[\w-]+-command\.ts$/ }, (args) =>
      build.initialOptions.entryPoints.serve &&
      args.importer.endsWith('command-index.ts') &&
      args.path !== './serve-command.ts'
        ? { path: args.path, namespace: 'not-in-serve' }
        : undefined,
    );
    // A script compiled from V8's code cache loses its dynamic import() callback (node 20: "A
    // dynamic import callback was not specified"; without the cache, node warns that the main
    // context's loader is experimental). The `serve` script therefore requires the packages it
    // imports on demand (all CommonJS: the same module.exports as `default`); checked below.
    const externals = new RegExp(`^(${EXTERNAL.map((e) => e.replace(/[/.]/g, '\\$&')).join('|')})$`);
    build.onResolve({ filter: externals }, (args) =>
      build.initialOptions.entryPoints.serve && args.kind === 'dynamic-import'
        ? { path: args.path, namespace: 'require-at-run-time' }
        : undefined,
    );
    build.onLoad({ filter: /.*/, namespace: 'require-at-run-time' }, (args) => ({
      contents: `module.exports = require(${JSON.stringify(args.path)});`,
      loader: 'js',
    }));
    build.onLoad({ filter: /.*/, namespace: 'not-in-serve' }, (args) => ({
      contents: `throw new Error('${args.path} is not in the serve bundle');`,
      loader: 'js',
    }));
  },
};

const esbuild = await import('esbuild');
/** What both bundles share: packages inside, minified whitespace and syntax, names kept. */
const COMMON = {
  bundle: true,
  platform: 'node',
  target: 'node20.19',
  external: EXTERNAL,
  // Smaller to parse and to hold in memory; names are kept (stack traces), lines are not: the
  // source maps give them back (`node --enable-source-maps`).
  minifyWhitespace: true,
  minifySyntax: true,
  sourcemap: 'linked',
  sourcesContent: false,
  legalComments: 'none',
  metafile: true,
  plugins: [sourcesForBundle],
  logLevel: 'warning',
};
const { metafile } = await esbuild.build({
  ...COMMON,
  entryPoints: { main: 'cli/main.ts' },
  outdir: BUNDLE_DIR,
  // Each command's module (cli/command-index.ts imports them on demand) is a chunk of its own;
  // what several commands share is in shared chunks, so `--help` loads commander and no command.
  splitting: true,
  format: 'esm',
  chunkNames: '[name]-[hash]',
  // The CommonJS packages inside the bundle call require() for node's own modules.
  banner: {
    js: "import { createRequire as __regbridgeCreateRequire } from 'node:module';\nconst require = __regbridgeCreateRequire(import.meta.url);",
  },
});
checkBundle(metafile);

/**
 * `regbridge serve` as one CommonJS script (cli/serve-main.ts), which bin/regbridge.js compiles
 * with vm.Script and V8's code cache: node 20 gives cached code to scripts only, not to ES
 * modules (docs/decisions/serve-code-cache.md). `import.meta.url` is the
 * script's own URL, in the same directory as the chunks, so what the sources find next to
 * themselves is found the same way.
 */
mqttLazy.reset();
const serve = await esbuild.build({
  ...COMMON,
  entryPoints: { serve: 'cli/serve-main.ts' },
  outfile: SERVE_SCRIPT,
  format: 'cjs',
  define: { 'import.meta.url': '__regbridgeImportMetaUrl' },
  banner: { js: "const __regbridgeImportMetaUrl = require('node:url').pathToFileURL(__filename).href;" },
});
checkBundle(serve.metafile);
const dynamicImports = Object.values(serve.metafile.outputs).flatMap((o) =>
  o.imports.filter((i) => i.kind === 'dynamic-import'),
);
if (dynamicImports.length > 0) {
  console.error(
    `build: the serve script must not import() (${dynamicImports.map((i) => i.path).join(', ')})`,
  );
  process.exit(1);
}

// `BUILD_METAFILE=/tmp/meta.json npm run build`: esbuild's whole metafile, for https://esbuild.github.io/analyze/.
if (process.env.BUILD_METAFILE) writeFileSync(process.env.BUILD_METAFILE, JSON.stringify(metafile));
// What went into each file of the bundle, for test/tooling/footprint.test.ts (what `--help` loads).
writeFileSync(
  join(BUNDLE_DIR, 'inputs.json'),
  `${JSON.stringify(
    Object.fromEntries(
      Object.entries(metafile.outputs)
        .filter(([file]) => file.endsWith('.js'))
        .map(([file, output]) => [file.slice(BUNDLE_DIR.length + 1), Object.keys(output.inputs).sort()]),
    ),
    null,
    1,
  )}\n`,
);

// The cache last: it runs the built `serve` once (scripts/code-cache.mjs).
await writeServeCodeCache(SERVE_SCRIPT);

/**
 * Checks of the substitutions above, for each bundle: they matter only if they hold.
 * (metafile.inputs also lists files esbuild read and left out; the outputs list what is in it.)
 */
function checkBundle(metafile) {
  const inputs = [
    ...new Set(
      Object.values(metafile.outputs).flatMap((output) =>
        Object.entries(output.inputs)
          .filter(([, input]) => input.bytesInOutput > 0)
          .map(([file]) => file),
      ),
    ),
  ];
  const packetCopies = new Set(
    inputs.filter((f) => f.endsWith('/mqtt-packet/mqtt.js')).map((f) => f.replace(/mqtt\.js$/, '')),
  );
  if (packetCopies.size !== 1) {
    console.error(`build: expected one mqtt-packet in the bundle, found ${[...packetCopies].join(', ')}`);
    process.exit(1);
  }
  const lazyProblem = mqttLazy.check();
  if (lazyProblem) {
    console.error(lazyProblem);
    process.exit(1);
  }
  const locales = inputs.filter((f) => /\/zod\/v4\/locales\/(?!en\.js|index\.js)/.test(f));
  if (locales.length > 0) {
    console.error(
      `build: zod's ${locales.length} locales are in the bundle: a module imports zod's namespace whole (use \`import * as z from 'zod'\`)`,
    );
    process.exit(1);
  }
}
