/**
 * NATS_SERVER_BIN (test/support/installed.ts) and the bench's version-dependent setting
 * (bench/lib/nats.ts): nats-server 2.15 caps a stream at 1,000 consumers unless
 * `jetstream.limits.default_max_consumers` says otherwise, and 2.9 and 2.10 refuse that key at
 * start, so it must follow the version of the binary in use (docs/decisions/which-nats-server.md).
 */
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { consumerLimitSetting } from '../../bench/lib/nats.ts';
import { installed, missingText, natsServerVersion, program } from '../support/installed.ts';

describe("the bench lifts nats-server 2.15's consumer cap, and only there", () => {
  it.each([
    ['v2.9.10', false],
    ['v2.10.27', false],
    ['v2.14.5', false],
    ['v2.15.1', true],
    ['v2.16.0-RC.1', true],
    ['v3.0.0', true],
    ['unknown (spawn ENOENT)', false],
  ])('%s: %s', (version, lifted) => {
    expect(consumerLimitSetting(version)).toEqual(lifted ? ['limits { default_max_consumers: -1 }'] : []);
  });
});

describe('NATS_SERVER_BIN', () => {
  const saved = process.env.NATS_SERVER_BIN;
  let dir: string | undefined;
  afterEach(() => {
    if (saved === undefined) delete process.env.NATS_SERVER_BIN;
    else process.env.NATS_SERVER_BIN = saved;
  });
  afterAll(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('names the program nats-server means, and nothing else', () => {
    process.env.NATS_SERVER_BIN = '/opt/nats/nats-server';
    expect(program('nats-server')).toBe('/opt/nats/nats-server');
    expect(program('mosquitto')).toBe('mosquitto');
    process.env.NATS_SERVER_BIN = '';
    expect(program('nats-server')).toBe('nats-server');
  });

  it('says which path is missing when it names none', () => {
    process.env.NATS_SERVER_BIN = '/nonexistent/regbridge/nats-server';
    expect(missingText(['nats-server'])).toBe(
      'program /nonexistent/regbridge/nats-server does not exist (NATS_SERVER_BIN)',
    );
  });

  it("reports the chosen binary's version (what the bench's notes print)", async () => {
    dir = await mkdtemp(join(tmpdir(), 'regbridge-nats-bin-'));
    const fake = join(dir, 'nats-server');
    await writeFile(fake, '#!/bin/sh\necho "nats-server: v2.15.1"\n');
    await chmod(fake, 0o755);
    process.env.NATS_SERVER_BIN = fake;
    expect(installed('nats-server')).toBe(true);
    expect(natsServerVersion()).toBe('v2.15.1');
  });
});
