/**
 * The README's "First five minutes" as a new user follows it (issue 13 item 9): `serve` started
 * as `npm start` starts it (ports 0 here, a generated admin password), then the section's shell
 * blocks run in bash with what it printed put into their `PORT=... BROKER_PORT=... PASSWORD=...`
 * lines: curl, mosquitto_sub/mosquitto_pub, `regbridge run` and `fanout` with the script files the
 * README makes, in the checkout as a reader would, which they must leave as it was. Each `# ` line under a command is what that command must print, and the text
 * block after the mosquitto_pub block is what mosquitto_sub must print (patterns: `...` is
 * anything, `my-host` the device id, ids, times and durations any; a `...` line is any lines).
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { skipWithout } from '../support/binaries.ts';
import { type CliProcess, startCli, stopAll, waitForOutput } from '../support/cli-process.ts';
import { cleanEnv, ROOT } from '../support/controller-cli.ts';
import { until } from '../support/waits.ts';

const README = readFileSync(join(ROOT, 'README.md'), 'utf8');

function section(title: string): string {
  const start = README.indexOf(`\n## ${title}\n`);
  if (start < 0) throw new Error(`README has no section "${title}"`);
  const end = README.indexOf('\n## ', start + 1);
  return README.slice(start, end < 0 ? undefined : end);
}

interface Block {
  lang: string;
  lines: string[];
}

function blocks(text: string): Block[] {
  return [...text.matchAll(/^```(\w*)\n([\s\S]*?)^```$/gm)].map((match) => ({
    lang: match[1]!,
    lines: match[2]!.replace(/\n$/, '').split('\n'),
  }));
}

interface Step {
  command: string;
  expected: string[];
}

/** Commands (continuation lines joined) each with the `# ` lines under it: what it prints. */
function steps(block: Block): Step[] {
  const result: Step[] = [];
  let pending: string[] = [];
  for (const line of block.lines) {
    if (pending.length > 0) {
      pending.push(line);
      if (!line.endsWith('\\')) {
        result.push({ command: pending.join('\n'), expected: [] });
        pending = [];
      }
    } else if (line === '#' || line.startsWith('# ')) {
      const last = result.at(-1);
      if (!last) throw new Error(`output line before any command: ${line}`);
      last.expected.push(line.slice(2));
    } else if (line.endsWith('\\')) {
      pending.push(line);
    } else {
      result.push({ command: line, expected: [] });
    }
  }
  return result;
}

/** An expected line as a regular expression (see the header). */
function linePattern(expected: string, deviceId: string): RegExp {
  const token =
    /\.\.\.|<[^<>]+>|my-host|\d{16}|\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z|\d\d:\d\d:\d\d|\b\d+ms\b|\b8080\b|\b1883\b| {2,}|-{2,}/g;
  let source = '';
  let at = 0;
  const literal = (text: string): string => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  for (const match of expected.matchAll(token)) {
    source += literal(expected.slice(at, match.index));
    const text = match[0];
    if (text === '...') source += '.*';
    else if (text.startsWith('<')) source += '\\S+';
    else if (text === 'my-host') source += literal(deviceId);
    else if (/^ +$/.test(text)) source += ' +';
    else if (/^-+$/.test(text)) source += '-+';
    else if (/^\d{16}$|^\d+$/.test(text)) source += '\\d+';
    else if (text.endsWith('ms')) source += '\\d+ms';
    else if (text.endsWith('Z')) source += '\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d\\.\\d{3}Z';
    else source += '\\d\\d:\\d\\d:\\d\\d';
    at = match.index + text.length;
  }
  source += literal(expected.slice(at));
  return new RegExp(`^${source}$`);
}

/** Whether `actual` lines match the `expected` patterns in order; a `...` line matches any lines. */
function matches(expected: readonly string[], actual: readonly string[], deviceId: string): boolean {
  if (expected.length === 0) return actual.length === 0;
  const [first, ...rest] = expected;
  if (first === '...') {
    for (let skip = 0; skip <= actual.length; skip++) {
      if (matches(rest, actual.slice(skip), deviceId)) return true;
    }
    return false;
  }
  return (
    actual.length > 0 &&
    linePattern(first!, deviceId).test(actual[0]!) &&
    matches(rest, actual.slice(1), deviceId)
  );
}

const MARK = '@@readme-step-done@@';
const needed = ['curl', 'mosquitto_sub', 'mosquitto_pub'];
const skip = skipWithout(needed, 'README examples');

describe.skipIf(skip)('README "First five minutes", run as written against a started device', () => {
  const fiveMinutes = section('First five minutes');
  const all = blocks(fiveMinutes);
  const shell = all.filter((block) => block.lang === 'sh');
  const subscriber = shell.find((block) => block.lines.some((line) => line.startsWith('mosquitto_sub')));
  const firstTerminal = shell.filter((block) => block !== subscriber);
  const subscriberOutput = all[all.indexOf(subscriber!) + 2];
  let serve: CliProcess;
  let ports: { http: string; broker: string };
  let password: string;
  let deviceId: string;
  const children: ChildProcess[] = [];

  /** The block's variable lines with what serve printed; the CLI of this clone for `npx regbridge`. */
  const filled = (text: string): string =>
    text
      .replace(/\bPORT=8080\b/g, `PORT=${ports.http}`)
      .replace(/\bBROKER_PORT=1883\b/g, `BROKER_PORT=${ports.broker}`)
      .replaceAll('<printed password>', password)
      // npx in a clone would run `prepare` (a rebuild of dist/) first; same program, straight away.
      .replaceAll('npx regbridge ', `node '${join(ROOT, 'bin', 'regbridge.js')}' `);

  beforeAll(async () => {
    serve = startCli(['serve', '--port', '0', '--broker-port', '0']);
    password = await waitForOutput(serve, /^created user admin with password (\S+) /m);
    deviceId = await waitForOutput(serve, /^regbridge device (\S+) listening/m);
    ports = {
      http: await waitForOutput(
        serve,
        /^regbridge device \S+ listening on http:\/\/127\.0\.0\.1:(\d+) \(all interfaces: 0\.0\.0\.0:\d+\)$/m,
      ),
      broker: await waitForOutput(serve, /^embedded MQTT broker on mqtt:\/\/127\.0\.0\.1:(\d+) /m),
    };
  });
  afterAll(async () => {
    for (const child of children) child.kill('SIGKILL');
    serve.child.kill('SIGTERM');
    await serve.exit;
    stopAll();
  });

  it('finds the blocks it runs: curl, a mosquitto_sub of its own, mosquitto_pub, run and fanout', () => {
    const text = firstTerminal.flatMap((block) => block.lines).join('\n');
    for (const word of [
      'curl ',
      'mosquitto_pub ',
      'npx regbridge run "$DIR/script.txt"',
      'npx regbridge fanout "$DIR/x-report.txt"',
    ])
      expect(text).toContain(word);
    expect(subscriber?.lines[0]).toBe("BROKER_PORT=1883 PASSWORD='<printed password>'");
    expect(subscriberOutput?.lang).toBe('text');
    // Ports come from the variables only: nothing else in the commands says 8080 or 1883.
    const commands = shell.flatMap((block) => steps(block).map((step) => step.command));
    expect(commands.filter((command) => /\b(8080|1883)\b/.test(command) && !/PORT=/.test(command))).toEqual(
      [],
    );
  });

  it('prints the banner the README shows', () => {
    const banner = all[0]!;
    expect(banner.lang).toBe('text');
    const printed = serve.stdout().trim().split('\n');
    expect(matches(banner.lines, printed, deviceId), `${printed.join('\n')}`).toBe(true);
  });

  it('the curl, mosquitto and CLI blocks print what the README shows, and leave no file in the clone', async () => {
    // Ignored files too: .gitignore hides what a user leaves, the examples must not leave it.
    const files = (): string =>
      execFileSync('git', ['status', '--porcelain', '--ignored'], { cwd: ROOT, encoding: 'utf8' });
    const before = files();
    // The second terminal first, as a reader would have it open; it prints as the rest runs.
    const sub = spawn('bash', ['-u', '-c', filled(subscriber!.lines.join('\n'))], {
      cwd: ROOT,
      env: cleanEnv(),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    children.push(sub);
    let subOut = '';
    sub.stdout.on('data', (chunk: Buffer) => {
      subOut += chunk.toString();
    });
    const subPrinted = (check: () => boolean, what: string): Promise<void> =>
      until(check, what, 20_000, 50).catch(() => {
        throw new Error(`mosquitto_sub never printed ${what}:\n${subOut}`);
      });
    await subPrinted(() => subOut.includes(`pos/devices/${deviceId}/state `), 'the state');

    // The first terminal: one bash, every block in order, a mark after each command.
    const all = firstTerminal.flatMap(steps);
    const script = all.map((step) => `${filled(step.command)}\necho '${MARK}'`).join('\n');
    const run = spawn('bash', ['-u', '-o', 'pipefail', '-c', script], {
      cwd: ROOT,
      env: cleanEnv(),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    children.push(run);
    let out = '';
    let err = '';
    run.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString();
    });
    run.stderr.on('data', (chunk: Buffer) => {
      err += chunk.toString();
    });
    const code = await new Promise<number | null>((resolve) => run.on('exit', resolve));
    expect(err).toBe('');
    expect(code).toBe(0);
    const outputs = out.split(`${MARK}\n`);
    expect(outputs).toHaveLength(all.length + 1);
    all.forEach((step, index) => {
      const printed = outputs[index]!.replace(/\n$/, '');
      const lines = printed === '' ? [] : printed.split('\n');
      expect(matches(step.expected, lines, deviceId), `${step.command}\nprinted:\n${printed}`).toBe(true);
    });

    // mosquitto_sub's output, as the text block after the mosquitto_pub block shows it.
    const expected = subscriberOutput!.lines;
    await subPrinted(() => matches(expected, subOut.trim().split('\n'), deviceId), 'the README lines');
    expect(files()).toBe(before);
  });
});

describe('README "Troubleshooting"', () => {
  it('covers a taken port, a missing broker program and the namespace', () => {
    const text = section('Troubleshooting');
    expect(text).toMatch(/\*\*A port is taken\*\*/);
    expect(text).toContain('use the ports printed on stdout');
    expect(text).toMatch(/\*\*`npm test` skips suites\*\*.*mosquitto not found on PATH/s);
    expect(text).toMatch(/namespace.*--ns/s);
  });
});
