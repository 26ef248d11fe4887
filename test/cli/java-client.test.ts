/**
 * The Java client (clients/java) end to end: javac compiles it (as Java 11) with its check program
 * and the documented example into a temp dir, real devices listen on free ports, and each scenario
 * runs in its own JVM whose output is compared line by line. A recording proxy between the JVM and
 * the device shows what the client put on the wire (GET authenticate with a JSON body, the call
 * repeated after a 401, no Authorization header without credentials).
 */
import { execFile, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningDevice, startDevice } from '../../cli/device.ts';
import { parseServeConfig, type ServeConfigInput } from '../../cli/serve-config.ts';
import { ROOT } from '../support/controller-cli.ts';
import { silent } from '../support/loggers.ts';
import { freePort } from '../support/ports.ts';
import { type RecordingProxy, startRecordingProxy } from '../support/recording-proxy.ts';

const JAVA_DIR = join(ROOT, 'clients/java');
const CLIENT_SOURCES = join(JAVA_DIR, 'src/main/java/regbridge/client');
const USER = 'kassa';
// Non-ASCII on purpose: the authenticate body must be UTF-8 JSON.
const PASSWORD = 'pässwörd-€';

const hasJdk = ['javac', 'java'].every((tool) => spawnSync(tool, ['-version']).status === 0);
// Outside CI a machine without a JDK skips (with this reason); CI (.ci/run) installs one, so there
// a missing javac fails the suite instead of skipping it.
const skipReason =
  hasJdk || process.env.CI ? undefined : 'Java client: javac/java not on PATH, install a JDK 11+';

interface JavaRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

let classes: string;
const devices: RunningDevice[] = [];
const proxies: RecordingProxy[] = [];
const logger = silent;

async function device(input: Partial<ServeConfigInput> = {}): Promise<RunningDevice> {
  const started = await startDevice(
    parseServeConfig({ port: 0, host: '127.0.0.1', mqtt: false, users: [`${USER}:${PASSWORD}`], ...input }),
    { logger },
  );
  devices.push(started);
  return started;
}

async function proxy(to: RunningDevice): Promise<RecordingProxy> {
  const started = await startRecordingProxy(to.httpPort);
  proxies.push(started);
  return started;
}

function run(mainClass: string, args: Array<string | number>): Promise<JavaRun> {
  return new Promise((resolve, reject) => {
    execFile(
      'java',
      // A quick start matters more than peak speed for these short runs.
      ['-XX:TieredStopAtLevel=1', '-XX:+UseSerialGC', '-cp', classes, mainClass, ...args.map(String)],
      { encoding: 'utf8', timeout: 60_000, maxBuffer: 1 << 20 },
      (error, stdout, stderr) => {
        if (error && typeof error.code !== 'number') reject(error);
        else resolve({ code: error ? (error.code as number) : 0, stdout, stderr });
      },
    );
  });
}

/** Runs a ClientCheck scenario and returns its output lines; a non-zero exit fails with its stderr. */
async function check(scenario: string, ...args: Array<string | number>): Promise<string[]> {
  const result = await run('regbridge.client.ClientCheck', [scenario, ...args]);
  if (result.code !== 0) throw new Error(`ClientCheck ${scenario} exited ${result.code}:\n${result.stderr}`);
  return result.stdout.replace(/\n$/, '').split('\n');
}

if (skipReason) {
  console.warn(`test/cli/java-client.test.ts skipped: ${skipReason}`);
  it.skip(skipReason, () => {});
}

describe.skipIf(skipReason)('the Java client against real devices', () => {
  let main: RunningDevice;

  beforeAll(async () => {
    if (!hasJdk)
      throw new Error('javac/java not on PATH: CI must run the Java client tests (.ci/run installs a JDK)');
    classes = mkdtempSync(join(tmpdir(), 'regbridge-java-'));
    const sources = [
      ...['DeviceClient', 'TasksResponse', 'Json', 'Tasks', 'Transport'].map((n) =>
        join(CLIENT_SOURCES, `${n}.java`),
      ),
      ...[
        'RestException',
        'ConnectionException',
        'TimeoutException',
        'TaskDoesNotExistException',
        'TaskProcessingException',
        'InternalErrorException',
        'TaskRunningException',
        'TaskEndedException',
      ].map((n) => join(CLIENT_SOURCES, `${n}.java`)),
      join(JAVA_DIR, 'src/test/java/regbridge/client/ClientCheck.java'),
      join(JAVA_DIR, 'example/Example.java'),
    ];
    // --release 11: the client must build for Java 11, whatever JDK runs the test; -Werror keeps it lint-clean.
    const javac = spawnSync(
      'javac',
      ['--release', '11', '-Xlint:all', '-Werror', '-encoding', 'UTF-8', '-d', classes, ...sources],
      {
        encoding: 'utf8',
      },
    );
    if (javac.status !== 0) throw new Error(`javac failed:\n${javac.stderr}${javac.stdout}`);
    main = await device();
  }, 120_000);

  afterAll(async () => {
    await Promise.all(proxies.map((p) => p.close()));
    await Promise.all(devices.map((d) => d.stop()));
    if (classes) rmSync(classes, { recursive: true, force: true });
  });

  it('reads and writes JSON: escapes, non-ASCII, surrogate pairs, lone surrogates, long ids, bad input refused', async () => {
    expect(await check('json')).toEqual([
      'escapes: true',
      'surrogate pair: true',
      'id: Long 1795335940841663',
      'neg: 0, big: BigDecimal, dec: 1500',
      'list: [true, false, null, {}], empty: ""',
      'order: [s, id, neg, big, dec, list, empty]',
      'refused: invalid JSON: expected a member name',
      'refused: invalid JSON: unterminated string',
      "refused: invalid JSON: invalid escape '\\x'",
      'refused: invalid JSON: control character in string',
      'refused: invalid JSON: unexpected data after the value',
      "refused: invalid JSON: expected ':'",
      "refused: invalid JSON: expected ',' or ']'",
      'refused: invalid JSON: truncated \\u escape',
      'refused: invalid JSON: unexpected end',
      'refused: invalid JSON: expected null',
      'refused: invalid JSON: invalid number',
      'refused: invalid JSON: invalid number',
      'refused: invalid JSON: invalid number',
      'refused: invalid JSON: nested too deeply',
      'written: {"script":"a\\"b\\\\c\\r\\n\\t\\u0001\\u001f é€😀 \\ud800 x\\udc00 /","none":null}',
      'round trip: true',
    ]);
  });

  it('processFmScript returns the report (CR LF lines, empty report), refuses a blank script, throws on FAILURE', async () => {
    const lines = await check('sync', main.httpPort, USER, PASSWORD);
    expect(lines.slice(0, 6)).toEqual([
      'report: "a\\nb"',
      'empty: ""',
      'slow: "late"',
      'blank script: RestException 400 INVALID_REQUEST extendsRestException=true',
      expect.stringMatching(
        /^unknown command: TaskProcessingException 0 TASK_FAILURE taskError=".*" extendsRestException=true$/,
      ),
      expect.stringMatching(/^unknown command error: .*\b2\b.*FROB/i),
    ]);
    expect(lines).toHaveLength(6);
  });

  it('vendorScript + waitForTask: long ids, the report, RUNNING while running, TASK_DOES_NOT_EXIST as a status', async () => {
    expect(await check('async', main.httpPort, USER, PASSWORD)).toEqual([
      'id is a long beyond int: true',
      'waitForTask: "hello\\nworld"',
      'status: true FINISHED report="hello\\nworld" error=null times=truetruetrue',
      'later id is larger: true',
      'while running: RUNNING report=null finishedAt=null',
      'then: ""',
      'unknown id: true TASK_DOES_NOT_EXIST',
      'waitForTask(unknown): TaskDoesNotExistException 404 TASK_DOES_NOT_EXIST extendsRestException=true',
      'taskId: true',
    ]);
  });

  it('an evicted id (--retain 1) reads TASK_DOES_NOT_EXIST and waitForTask throws TaskDoesNotExistException', async () => {
    const small = await device({ retain: 1 });
    expect(await check('evicted', small.httpPort, USER, PASSWORD)).toEqual([
      'first: "one"',
      'second: "two"',
      'first now: TASK_DOES_NOT_EXIST',
      'waitForTask(first): TaskDoesNotExistException 404 TASK_DOES_NOT_EXIST extendsRestException=true',
      'taskId: true',
    ]);
  });

  it('a FAIL script ends FAILURE: TaskProcessingException with the error text, from both flows', async () => {
    expect(await check('failure', main.httpPort, USER, PASSWORD)).toEqual([
      'waitForTask: TaskProcessingException 0 TASK_FAILURE taskError="paper jam" extendsRestException=true',
      'taskId: true',
      'status: FAILURE error="paper jam" report=null',
      'processFmScript: TaskProcessingException 0 TASK_FAILURE taskError="drawer open" extendsRestException=true',
    ]);
  });

  it('a wrong password is 401 INVALID_CREDENTIALS, no credentials is 401 UNAUTHORIZED, the password never in a message', async () => {
    const recorder = await proxy(main);
    expect(await check('credentials', recorder.port, USER, 'wrong-pässwort')).toEqual([
      'wrong password: RestException 401 INVALID_CREDENTIALS extendsRestException=true',
      'server message: Wrong user name or password',
      'password in message: false',
      'wrong password, processFmScript: RestException 401 INVALID_CREDENTIALS extendsRestException=true',
      'no credentials: RestException 401 UNAUTHORIZED extendsRestException=true',
    ]);
    // Lazily: each call tried to authenticate (the failure is not cached), nothing else was sent with credentials.
    expect(recorder.requests.map((r) => `${r.method} ${r.path} ${r.status}`)).toEqual([
      'GET /api/authenticate 401',
      'GET /api/authenticate 401',
      'POST /api/vendor-script 401',
    ]);
    expect(recorder.requests[2]?.headers.authorization).toBeUndefined();
  });

  it('authenticates lazily with GET and a UTF-8 JSON body, and re-authenticates once after the token expired', async () => {
    const shortLived = await device({ tokenTtl: 1 });
    const recorder = await proxy(shortLived);
    const lines = await check('expiry', recorder.port, USER, PASSWORD, shortLived.httpPort);
    expect(lines).toEqual(['first: "first"', 'token expired', 'second: "second"', 'third: "third"']);
    const seen = recorder.requests.map((r) => `${r.method} ${r.path.replace(/\d{10,}/, '<id>')} ${r.status}`);
    expect(seen.slice(0, 5)).toEqual([
      'GET /api/authenticate 200',
      'POST /api/fm-script?timeoutMs=60000 200',
      'POST /api/fm-script?timeoutMs=60000 401',
      'GET /api/authenticate 200',
      'POST /api/fm-script?timeoutMs=60000 200',
    ]);
    // The third call may have met an expired token again (ttl 1 s on a loaded machine), never more than once.
    expect(seen.filter((s) => s.startsWith('GET /api/authenticate')).length).toBeLessThanOrEqual(3);
    const auth = recorder.requests[0];
    expect(auth?.headers['content-type']).toBe('application/json');
    expect(JSON.parse(auth?.body ?? '')).toEqual({ userName: USER, password: PASSWORD });
    expect(Buffer.from(auth?.body ?? '', 'utf8').includes(Buffer.from('pässwörd-€', 'utf8'))).toBe(true);
    expect(
      recorder.requests.filter((r) => r.path === '/api/authenticate').every((r) => !r.headers.authorization),
    ).toBe(true);
    const bearer = recorder.requests
      .filter((r) => r.path !== '/api/authenticate')
      .map((r) => r.headers.authorization);
    expect(bearer.every((h) => typeof h === 'string' && /^Bearer \S+$/.test(h))).toBe(true);
    // The refused call carried the first token; its repetition a fresh one.
    expect(bearer[1]).toBe(bearer[0]);
    expect(bearer[2]).not.toBe(bearer[1]);
  });

  it('a script with CR LF and non-ASCII text (umlauts, CJK, emoji, U+2028) comes back exactly, in UTF-8', async () => {
    const lines = await check('unicode', main.httpPort, USER, PASSWORD);
    expect(lines).toEqual([
      'processFmScript equal: true',
      'waitForTask equal: true',
      'getTaskStatus equal: true',
      'lone surrogates kept: true',
      'report:',
      'Grüße, 5 € für Käse',
      '日本語のレシート 😀 "quoted" back\\slash\ttab',
      '✓ done\u2028same line',
    ]);
  });

  it('the credential-less constructor works against --auth off and sends no Authorization header', async () => {
    const open = await device({ auth: 'off', users: [] });
    const recorder = await proxy(open);
    expect(await check('open', recorder.port)).toEqual(['async: "open"', 'sync: "sync"', 'status: FINISHED']);
    expect(recorder.requests.length).toBeGreaterThanOrEqual(3);
    expect(recorder.requests.some((r) => r.path.includes('authenticate'))).toBe(false);
    expect(recorder.requests.every((r) => r.headers.authorization === undefined)).toBe(true);
  });

  it('cancelTask: a queued task ends FAILURE CANCELLED; running, ended and unknown ids are their exceptions', async () => {
    expect(await check('cancel', main.httpPort, USER, PASSWORD)).toEqual([
      'queued has not started: true',
      'cancelled: true FAILURE error starts CANCELLED: true report=null',
      'then reads: FAILURE',
      expect.stringMatching(
        /^waitForTask\(cancelled\): TaskProcessingException 0 TASK_FAILURE taskError="CANCELLED.*" extendsRestException=true$/,
      ),
      'taskError starts CANCELLED: true',
      'cancel running: TaskRunningException 409 TASK_RUNNING extendsRestException=true',
      'taskId: true',
      'running still ends: "ran"',
      'cancel finished: TaskEndedException 409 TASK_ENDED extendsRestException=true',
      'ended as: FINISHED taskId: true',
      'cancel cancelled: TaskEndedException 409 TASK_ENDED extendsRestException=true',
      'ended as: FAILURE',
      'cancel unknown: TaskDoesNotExistException 404 TASK_DOES_NOT_EXIST extendsRestException=true',
      'taskId: true',
    ]);
  });

  it('no device listening is ConnectionException', async () => {
    expect(await check('refused', await freePort())).toEqual([
      'refused: ConnectionException 0 CONNECTION_ERROR extendsRestException=true',
      'refused, no credentials: ConnectionException 0 CONNECTION_ERROR extendsRestException=true',
    ]);
  });

  it("docs/client.md's Java example is the file that runs, and prints what the docs show", async () => {
    const docs = readFileSync(join(ROOT, 'docs/client.md'), 'utf8');
    const example = readFileSync(join(JAVA_DIR, 'example/Example.java'), 'utf8');
    const java = /### A complete example[\s\S]*?```java\n([\s\S]*?)```/.exec(docs)?.[1];
    expect(java).toBe(example);
    const shown = /\$ java -cp [^\n]* Example [^\n]*\n([\s\S]*?)```/.exec(docs)?.[1];
    const result = await run('Example', ['127.0.0.1', main.httpPort, USER, PASSWORD]);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    // Task ids differ from run to run (they start at the clock in microseconds).
    const ids = (text: string) => text.replace(/\b\d{13,17}\b/g, '<id>');
    expect(ids(result.stdout)).toBe(ids(shown ?? ''));
  });

  it('the example: no arguments is a usage line (exit 2); no device names where and why (exit 1)', async () => {
    const bare = await run('Example', []);
    expect([bare.code, bare.stderr, bare.stdout]).toEqual([
      2,
      'usage: java Example <ip> <port> <userName> <password>\n',
      '',
    ]);
    const port = await freePort();
    const none = await run('Example', ['127.0.0.1', port, USER, PASSWORD]);
    expect(none.code).toBe(1);
    expect(none.stderr).toMatch(
      new RegExp(
        `^cannot reach the device at 127\\.0\\.0\\.1:${port}: .*\\(java\\.net\\.ConnectException.*\\)\\n$`,
      ),
    );
    expect(none.stderr).not.toContain('\tat ');
  });
});
