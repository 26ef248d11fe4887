/**
 * The folders are layers (README, "How the code is laid out"): biome's noRestrictedImports keeps
 * imports flowing one way, and `npm run lint` (part of `npm test`) fails on any import against
 * the flow. This suite proves the rule fires: it lints fixture files placed in each layer of a
 * copy of the project's biome.json.
 */
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const run = promisify(execFile);
const BIOME = join(process.cwd(), 'node_modules', '.bin', 'biome');

// [file in the fixture tree, import it makes, allowed?]
const CASES: [string, string, boolean][] = [
  ['src/a.ts', '../bridge/device-bridge.ts', false],
  ['src/b.ts', '../bridge/contract/topics.ts', false],
  ['src/c.ts', '../controller/store-controller.ts', false],
  ['src/d.ts', '../broker/store-broker.ts', false],
  ['src/e.ts', '../cli/device.ts', false],
  ['src/tasks/f.ts', '../errors.ts', true],
  ['bridge/contract/g.ts', '../device-bridge.ts', false],
  ['bridge/contract/h.ts', '../../src/errors.ts', false],
  ['bridge/contract/i.ts', './topics.ts', true],
  ['bridge/j.ts', '../controller/store-controller.ts', false],
  ['bridge/k.ts', '../broker/store-broker.ts', false],
  ['bridge/l.ts', '../src/tasks/task.ts', true],
  ['bridge/m.ts', './contract/topics.ts', true],
  ['broker/n.ts', '../bridge/device-bridge.ts', false],
  ['broker/o.ts', '../controller/store-controller.ts', false],
  ['broker/p.ts', '../bridge/contract/topics.ts', true],
  ['broker/q.ts', '../src/logger.ts', true],
  ['controller/r.ts', '../bridge/script-intake.ts', false],
  ['controller/s.ts', '../broker/store-broker.ts', false],
  ['controller/t.ts', '../cli/main.ts', false],
  ['controller/u.ts', '../bridge/contract/topics.ts', true],
  ['cli/v.ts', '../controller/store-controller.ts', true],
  ['cli/w.ts', '../broker/store-broker.ts', true],
  // The engine speaks its domain: no HTTP below the REST layer.
  ['src/tasks/x.ts', '../routes/api-error.ts', false],
  ['src/tasks/y.ts', 'fastify', false],
  ['src/tasks/z.ts', '../../bridge/device-bridge.ts', false],
  ['src/executors/aa.ts', '../auth/auth-service.ts', false],
  ['src/tasks/ab.ts', './script-text.ts', true],
  ['src/routes/ac.ts', '../tasks/task-queue.ts', true],
  ['bridge/ad.ts', '../src/routes/api-error.ts', false],
  ['bridge/ae.ts', '../src/errors.ts', true],
];

let root: string;

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'regbridge-layers-'));
  const config = JSON.parse(await readFile('biome.json', 'utf8'));
  config.vcs = { enabled: false };
  config.files = { includes: ['**'] };
  await writeFile(join(root, 'biome.json'), JSON.stringify(config));
  for (const [file, target] of CASES) {
    await mkdir(dirname(join(root, file)), { recursive: true });
    await writeFile(join(root, file), `import { x } from '${target}';\n\nexport const y = x;\n`);
  }
});

afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

async function restrictedFiles(): Promise<Set<string>> {
  const result = await run(BIOME, ['lint', '--reporter=json', '--max-diagnostics=none', '.'], {
    cwd: root,
  }).catch((error: { stdout: string }) => error);
  const report = JSON.parse(result.stdout) as {
    diagnostics: { category: string; location: { path: string | { file: string } } }[];
  };
  const files = new Set<string>();
  for (const d of report.diagnostics) {
    if (d.category !== 'lint/style/noRestrictedImports') continue;
    const path = typeof d.location.path === 'string' ? d.location.path : d.location.path.file;
    files.add(path.replace(/\\/g, '/'));
  }
  return files;
}

describe('layer rule', () => {
  it('refuses every import against the flow and allows the rest', async () => {
    const refused = await restrictedFiles();
    const verdicts = Object.fromEntries(
      CASES.map(([file, target]) => [`${file} -> ${target}`, !refused.has(file)]),
    );
    const expected = Object.fromEntries(CASES.map(([file, target, ok]) => [`${file} -> ${target}`, ok]));
    expect(verdicts).toEqual(expected);
  });
});
