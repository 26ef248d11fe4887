/**
 * `npm test` on a machine without a broker binary (issue 13 item 3): outside CI the suites that
 * need it skip with a one-line reason; with CI=true they fail at once, naming the binary. Proven
 * by running a mosquitto suite in a child vitest with a PATH that has no mosquitto.
 */
import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { programProblem } from '../../src/executors/program-check.ts';
import { skipReason } from '../support/binaries.ts';
import { cleanEnv, ROOT } from '../support/controller-cli.ts';

const PATH_WITHOUT_SBIN = '/usr/local/bin:/usr/bin:/bin';

function vitest(file: string, env: Record<string, string>): Promise<{ code: number | null; output: string }> {
  const child = spawn(process.execPath, ['node_modules/vitest/vitest.mjs', 'run', file], {
    cwd: ROOT,
    env: { ...cleanEnv(), CI: '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, output })));
}

const mosquittoHidden = programProblem('mosquitto', { PATH: PATH_WITHOUT_SBIN }) !== undefined;

describe('suites that need a broker binary', () => {
  it('name what is missing and how to get it', () => {
    const saved = process.env.CI;
    try {
      delete process.env.CI;
      expect(skipReason(['no-such-broker-xyz'])).toBe('no-such-broker-xyz not found on PATH; install it');
      expect(skipReason(['sh'])).toBeUndefined();
      process.env.CI = 'true';
      expect(skipReason(['no-such-broker-xyz'])).toBeUndefined();
    } finally {
      if (saved === undefined) delete process.env.CI;
      else process.env.CI = saved;
    }
  });

  // Needs a machine where mosquitto lives outside /usr/bin (Debian: /usr/sbin), so a PATH can hide it.
  it.skipIf(!mosquittoHidden)(
    'skip outside CI with a one-line reason; fail at once with CI=true',
    async () => {
      const laptop = await vitest('test/bridge/serve-mqtt5.test.ts', { PATH: PATH_WITHOUT_SBIN });
      expect(laptop.code, laptop.output).toBe(0);
      expect(laptop.output).toContain(
        'skipping "serve --mqtt-protocol 5 on mosquitto": mosquitto not found on PATH; apt-get install mosquitto, or brew install mosquitto',
      );
      expect(laptop.output).toMatch(/1 skipped/);
      const ci = await vitest('test/bridge/serve-mqtt5.test.ts', { PATH: PATH_WITHOUT_SBIN, CI: 'true' });
      expect(ci.code).toBe(1);
      expect(ci.output).toContain(
        'mosquitto not found on PATH; apt-get install mosquitto, or brew install mosquitto: CI never skips a suite for a missing broker',
      );
    },
  );
});
