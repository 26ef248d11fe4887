/**
 * `regbridge controller` start errors as a user meets them: one line naming the cause and the
 * flag, exit 2, in the order a user fixes them (flags, then the HTTP port, then the broker); the
 * default history file in the working folder, so a failed start also stops its WAL worker.
 */
import { closeSync, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { StoreBroker } from '../../broker/store-broker.ts';
import { type ControllerServiceSettings, startControllerService } from '../../cli/controller-service.ts';
import { openHistory } from '../../controller/history-db.ts';
import { type CliOutcome, runCli } from '../support/controller-cli.ts';
import { silent } from '../support/loggers.ts';
import { CTL, storeBroker } from '../support/store-brokers.ts';

const dir = mkdtempSync(join(tmpdir(), 'regbridge-ctl-start-'));
let broker: StoreBroker;
let taken: Server;
let takenPort: number;

beforeAll(async () => {
  broker = storeBroker('pos');
  await broker.start();
  taken = createServer();
  await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
  takenPort = (taken.address() as { port: number }).port;
});
afterAll(async () => {
  await broker.stop();
  await new Promise((resolve) => taken.close(resolve));
  rmSync(dir, { recursive: true, force: true });
});

function settings(overrides: Partial<ControllerServiceSettings>): ControllerServiceSettings {
  return {
    port: 0,
    host: '127.0.0.1',
    mqttUrl: `mqtt://127.0.0.1:${broker.port}`,
    mqttUser: { name: CTL.username, password: CTL.password },
    brokerHost: '127.0.0.1',
    brokerUsers: [],
    ns: 'pos',
    users: [{ name: 'admin', password: 'pw' }],
    db: ':memory:',
    tokenTtl: 60,
    settleMs: 10,
    ...overrides,
  };
}

/** Runs in `dir`, so the default ./regbridge-controller.db is created and opened there. */
function controller(...args: string[]): Promise<CliOutcome> {
  return runCli(['controller', '--host', '127.0.0.1', ...args], { cwd: dir });
}

function oneLine(run: CliOutcome): string {
  expect(run.code).toBe(2);
  const lines = run.stderr.trim().split('\n');
  expect(lines).toHaveLength(1);
  expect(run.stderr).not.toMatch(/\n\s+at /);
  return lines[0]!;
}

describe('regbridge controller start errors', () => {
  it('broker down: names --mqtt-url, exit 2, with the default history file (no silent exit 13)', async () => {
    const line = oneLine(await controller('--port', '0', '--mqtt-url', 'mqtt://127.0.0.1:1'));
    expect(line).toBe(
      'regbridge controller: cannot connect to mqtt://127.0.0.1:1: connect ECONNREFUSED 127.0.0.1:1: check --mqtt-url',
    );
  });

  it('wrong MQTT password: the broker refusal and the flags holding the credentials', async () => {
    const url = `mqtt://127.0.0.1:${broker.port}`;
    const inUrl = oneLine(
      await controller('--port', '0', '--mqtt-url', `mqtt://ctl:wrong@127.0.0.1:${broker.port}`),
    );
    expect(inUrl).toBe(
      `regbridge controller: cannot connect to ${url}: Connection refused: Bad username or password: check --mqtt-url`,
    );
    const flag = oneLine(await controller('--port', '0', '--mqtt-url', url, '--mqtt-user', 'ctl:wrong'));
    expect(flag).toContain('Bad username or password: check --mqtt-url and --mqtt-user');
    expect(flag).not.toContain('wrong');
  });

  it('HTTP port taken: names --port, before the broker is tried (which is down too)', async () => {
    const line = oneLine(await controller('--port', String(takenPort), '--mqtt-url', 'mqtt://127.0.0.1:1'));
    expect(line).toBe(
      `regbridge controller: HTTP port ${takenPort} on 127.0.0.1 is already in use: choose another with --port (0 picks a free one)`,
    );
  });

  it('embedded broker port taken: names --broker-port', async () => {
    const line = oneLine(
      await controller('--port', '0', '--broker-port', String(takenPort), '--broker-host', '127.0.0.1'),
    );
    expect(line).toContain(
      `port ${takenPort} is already in use on 127.0.0.1: choose another port with --broker-port`,
    );
  });

  it('a user given as --user and again as --broker-user is a configuration error', async () => {
    const run = await controller(
      '--broker-port',
      '0',
      '--user',
      'ana:pw-one',
      '--broker-user',
      'ana:pw-two:device',
    );
    expect(run.code).toBe(2);
    expect(run.stderr).toBe(
      'regbridge controller: invalid configuration:\n  - --broker-user: user ana given twice (every --user is already a controller on it)\n',
    );
  });

  it('a damaged history file: names --db', async () => {
    const { writeFileSync } = await import('node:fs');
    const file = join(dir, 'damaged.db');
    writeFileSync(file, 'not a database, just text that is long enough to be read as a header'.repeat(20));
    const line = oneLine(await controller('--port', '0', '--db', file, '--mqtt-url', 'mqtt://127.0.0.1:1'));
    expect(line).toBe(
      `regbridge controller: cannot open the history file ${file} (file is not a database): choose another with --db, or move the damaged file away`,
    );
  });

  it('a defaulted HTTP port that is taken moves to a free one with a note', async () => {
    const service = await startControllerService(settings({ port: takenPort }), {
      logger: silent,
      freePortIfTaken: true,
    });
    try {
      expect(service.httpPort).not.toBe(takenPort);
      expect(service.portFallbacks).toEqual([`HTTP port ${takenPort} was taken (pass --port to choose one)`]);
      expect((await fetch(`http://127.0.0.1:${service.httpPort}/health`)).status).toBe(200);
    } finally {
      await service.stop();
    }
  });
});

describe('a damaged audit page', () => {
  it('fails the login (500) and /health answers 503 naming the history, not ok', async () => {
    const file = join(dir, 'audit-damaged.db');
    const db = openHistory(file);
    const page = db
      .prepare(`SELECT rootpage FROM sqlite_master WHERE name = 'audit'`)
      .pluck()
      .get() as number;
    const pageSize = db.prepare('PRAGMA page_size').pluck().get() as number;
    db.close();
    const handle = openSync(file, 'r+');
    writeSync(handle, Buffer.alloc(pageSize, 0xa5), 0, pageSize, (page - 1) * pageSize);
    closeSync(handle);

    const service = await startControllerService(settings({ db: file }), { logger: silent });
    try {
      const base = `http://127.0.0.1:${service.httpPort}`;
      expect((await fetch(`${base}/health`)).status).toBe(200);
      const login = await fetch(`${base}/api/authenticate`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ userName: 'admin', password: 'pw' }),
      });
      expect(login.status).toBe(500);
      const health = await fetch(`${base}/health`);
      expect(health.status).toBe(503);
      const body = (await health.json()) as { status: string; history: { state: string; error: string } };
      expect(body.status).toBe('error');
      expect(body.history).toEqual({ state: 'error', error: 'database disk image is malformed' });
    } finally {
      await service.stop();
    }
  });
});
