/**
 * `regbridge demo` prints what the other commands need to reach it: the store broker's login for
 * `watch` and `fanout`, each register's REST API and login for `run`, and a note when the
 * dashboard's port was taken and moved. Each printed command is run as printed.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startCli, stopAll, waitForOutput } from '../support/cli-process.ts';
import { runCli } from '../support/controller-cli.ts';

const dir = mkdtempSync(join(tmpdir(), 'regbridge-demo-'));
let taken: Server;
let takenPort: number;

beforeAll(async () => {
  taken = createServer();
  await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
  takenPort = (taken.address() as { port: number }).port;
});
afterEach(() => stopAll());
afterAll(async () => {
  await new Promise((resolve) => taken.close(resolve));
  rmSync(dir, { recursive: true, force: true });
});

describe('regbridge demo tells how to reach it', () => {
  it('prints the broker login, the registers, and a note for the moved dashboard port', async () => {
    const demo = startCli(['demo', '--devices', '2', '--port', String(takenPort)]);
    await waitForOutput(demo, /dashboard on (http:\/\/127\.0\.0\.1:\d+\/)/, 30_000);
    const note = await waitForOutput(demo, /^note: (.*)$/m);
    expect(note).toBe(
      `HTTP port ${takenPort} was taken (pass --port to choose one); the dashboard port above was chosen instead`,
    );
    const watchArgs = (await waitForOutput(demo, /regbridge (watch --once --mqtt-url \S+ --ns \S+)$/m)).split(
      ' ',
    );
    const watch = await runCli(watchArgs);
    expect(watch.code).toBe(0);
    expect(watch.stdout).toMatch(/^reg1\s+yes/m);
    expect(watch.stdout).toMatch(/^reg2\s+yes/m);
    const runArgs = (await waitForOutput(demo, /^reg1 REST API on \S+: regbridge run FILE (.*)$/m)).split(
      ' ',
    );
    const file = join(dir, 'hello.txt');
    writeFileSync(file, 'PRINT hello demo\n');
    const run = await runCli(['run', file, ...runArgs]);
    expect([run.code, run.stdout]).toEqual([0, 'hello demo\n']);
    demo.child.kill('SIGTERM');
    expect((await demo.exit).code).toBe(0);
  });
});
