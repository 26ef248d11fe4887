/**
 * The image and docker-compose.yml in a real Docker engine (npm run test:containers; run.sh
 * provides the engine and the base image). testcontainers builds the image from the Dockerfile,
 * then starts the compose file's store broker, three registers, controller service (`controller`)
 * and one-shot `fanout` from it, each service's command, environment, healthcheck, inline config and named
 * volume read from the compose file itself (with docker-compose.host.yml's host networking and
 * free ports), so the test and the file never drift. Debian's Compose 1.29 cannot read the file
 * (`configs.content` needs 2.23). Asserts: every service turns healthy by its healthcheck (the
 * registers' and the controller service's is the Dockerfile's HEALTHCHECK), the `fanout`
 * service reaches all three registers and exits 0, the controller service runs a job to every
 * register through its REST API (log in, POST /api/jobs, the job's end on /api/events) and
 * keeps it in its volume across a restart, the containers run as a non-root user with
 * production dependencies only.
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { promisify } from 'node:util';
import {
  GenericContainer,
  getContainerRuntimeClient,
  ImageName,
  type StartedTestContainer,
  Wait,
} from 'testcontainers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type Compose,
  type ComposeHealthcheck,
  type ComposeService,
  dockerfileHealthcheck,
  readCompose,
  readComposeSource,
} from '../support/compose.ts';
import { ROOT } from '../support/controller-cli.ts';
import { freePort } from '../support/ports.ts';

const run = promisify(execFile);
const IMAGE = 'regbridge:local';
// Built under its own tag first: testcontainers' build resolves even when the build failed, so
// the test looks for this tag (removed beforehand) to know the build succeeded.
const BUILD_TAG = 'regbridge:containers-test';
const REGISTERS = ['reg1', 'reg2', 'reg3'];
const SERVICE = 'controller';
/** Compose names its volumes `<project>_<volume>`; the test's own are unique to the run. */
const VOLUME_PREFIX = `regbridge-containers-test-${process.pid}-`;

let compose: Compose;
let networkMode: Record<string, string>;
const started = new Map<string, StartedTestContainer>();
const volumes: string[] = [];
let fanoutOutput = '';

function log(line: string): void {
  console.log(`[containers] ${line}`);
}

function ms(duration: string | undefined): number | undefined {
  if (duration === undefined) return undefined;
  const match = /^(\d+)(ms|s|m)$/.exec(duration);
  if (!match) throw new Error(`unsupported compose duration ${duration}`);
  return Number(match[1]) * { ms: 1, s: 1000, m: 60_000 }[match[2] as 'ms' | 's' | 'm'];
}

function healthCheckOf(check: ComposeHealthcheck) {
  const [kind, ...rest] = check.test;
  if (kind !== 'CMD') throw new Error(`only CMD healthchecks are supported, not ${kind}`);
  return {
    test: ['CMD', ...rest] as ['CMD', ...string[]],
    interval: ms(check.interval),
    timeout: ms(check.timeout),
    retries: check.retries,
    startPeriod: ms(check.start_period),
  };
}

/** A container for one compose service, as compose would run it on the host network. */
function containerFor(name: string): GenericContainer {
  const service: ComposeService = compose.services[name]!;
  expect(service.image ?? IMAGE, name).toBe(IMAGE);
  let container = new GenericContainer(IMAGE)
    .withNetworkMode(networkMode[name]!)
    .withCommand(service.command!)
    .withEnvironment(service.environment ?? {})
    .withStartupTimeout(90_000);
  if (service.healthcheck) container = container.withHealthCheck(healthCheckOf(service.healthcheck));
  // A named volume (`name:/path`) becomes a volume of this run; a host path is not used here.
  const binds = (service.volumes ?? []).map((spec) => {
    const [volume, target] = spec.split(':') as [string, string];
    if (!compose.volumes || !(volume in compose.volumes))
      throw new Error(`${name}: ${volume} is not a named volume`);
    if (!volumes.includes(VOLUME_PREFIX + volume)) volumes.push(VOLUME_PREFIX + volume);
    return { source: VOLUME_PREFIX + volume, target };
  });
  if (binds.length > 0) container = container.withBindMounts(binds);
  for (const config of service.configs ?? []) {
    const content = compose.configs?.[config.source]?.content;
    if (content === undefined) throw new Error(`${name}: config ${config.source} has no inline content`);
    container = container.withCopyContentToContainer([{ content, target: config.target, mode: 0o444 }]);
  }
  return container;
}

async function start(name: string, container: GenericContainer): Promise<StartedTestContainer> {
  const t0 = Date.now();
  const running = await container.start();
  started.set(name, running);
  log(`${name} started (${Date.now() - t0} ms): ${compose.services[name]!.command!.slice(2).join(' ')}`);
  return running;
}

async function inspect(container: StartedTestContainer, format: string): Promise<string> {
  return (await run('docker', ['inspect', '--format', format, container.getId()])).stdout.trim();
}

async function logsOf(container: StartedTestContainer): Promise<string> {
  const stream = await container.logs();
  let text = '';
  return new Promise((resolve, reject) => {
    stream.on('data', (chunk: Buffer | string) => {
      text += chunk.toString();
    });
    stream.on('end', () => resolve(text));
    stream.on('error', reject);
  });
}

beforeAll(async () => {
  const client = await getContainerRuntimeClient();
  log(`engine ${client.info.containerRuntime.host}, API ${client.info.containerRuntime.serverVersion}`);

  // The image: the repository's Dockerfile, built on the host network (no bridge here).
  await run('docker', ['image', 'rm', BUILD_TAG]).catch(() => undefined);
  const t0 = Date.now();
  await client.image.build(ROOT, {
    t: BUILD_TAG,
    dockerfile: 'Dockerfile',
    networkmode: 'host',
    version: '1',
  });
  if (!(await client.image.exists(ImageName.fromString(BUILD_TAG))))
    throw new Error(`docker build failed; see it with: docker build --network host -t ${IMAGE} .`);
  await run('docker', ['tag', BUILD_TAG, IMAGE]);
  const size = Number(
    await run('docker', ['image', 'inspect', '--format', '{{.Size}}', IMAGE]).then((r) => r.stdout),
  );
  log(`image ${IMAGE} built in ${Date.now() - t0} ms, ${(size / 1e6).toFixed(0)} MB`);

  // The compose file with free host ports and the broker reached over loopback.
  const vars: Record<string, string> = { REGBRIDGE_BROKER_HOST: '127.0.0.1' };
  vars.REGBRIDGE_MQTT_PORT = String(await freePort());
  for (let i = 1; i <= REGISTERS.length; i++) vars[`REGBRIDGE_REG${i}_PORT`] = String(await freePort());
  vars.REGBRIDGE_CONTROLLER_PORT = String(await freePort());
  vars.REGBRIDGE_ADMIN_PASSWORD = `admin-${randomBytes(6).toString('hex')}`;
  compose = readCompose(vars);
  const host = readComposeSource('docker-compose.host.yml');
  networkMode = Object.fromEntries(Object.entries(host.services).map(([name, s]) => [name, s.network_mode!]));
  log(
    `ports: ${Object.entries(vars)
      .filter(([k]) => !k.endsWith('_PASSWORD'))
      .map(([k, v]) => `${k}=${v}`)
      .join(' ')}`,
  );

  // In compose's order: the broker healthy, then the registers and the controller service
  // healthy, then the one-shot fanout.
  await start('broker', containerFor('broker').withWaitStrategy(Wait.forHealthCheck()));
  // Settled one by one: a container that started while another failed is stopped too.
  const healthy = await Promise.allSettled(
    [...REGISTERS, SERVICE].map((name) =>
      start(name, containerFor(name).withWaitStrategy(Wait.forHealthCheck())),
    ),
  );
  const failed = healthy.find((outcome) => outcome.status === 'rejected');
  if (failed) throw failed.reason;
  // A one-shot service: start() resolves once it has exited with code 0 (and throws otherwise).
  const fanout = await start('fanout', containerFor('fanout').withWaitStrategy(Wait.forOneShotStartup()));
  fanoutOutput = await logsOf(fanout);
  for (const line of fanoutOutput.trim().split('\n')) log(`fanout | ${line}`);
});

afterAll(async () => {
  await Promise.all([...started.values()].map((container) => container.stop().catch(() => undefined)));
  for (const volume of volumes) await run('docker', ['volume', 'rm', '-f', volume]).catch(() => undefined);
});

/** The controller service's REST API, logged in as its admin (compose's REGBRIDGE_USER). */
async function serviceApi(): Promise<{ base: string; headers: Record<string, string> }> {
  const env = compose.services[SERVICE]!.environment!;
  const base = `http://127.0.0.1:${env.REGBRIDGE_PORT}`;
  const [userName, password] = env.REGBRIDGE_USER!.split(':') as [string, string];
  const login = await fetch(`${base}/api/authenticate`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ userName, password }),
  });
  expect(login.status).toBe(200);
  const { token } = (await login.json()) as { token: string };
  return { base, headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' } };
}

/** Reads `/api/events` until the job event of `jobId` that carries `endedAt` (bounded by `ms`). */
async function jobEnd(base: string, token: string, jobId: () => string | undefined, ms: number) {
  const abort = AbortSignal.timeout(ms);
  const events = await fetch(`${base}/api/events`, {
    headers: { authorization: `Bearer ${token}` },
    signal: abort,
  });
  expect(events.status).toBe(200);
  const reader = events.body!.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  return {
    async ended(): Promise<{ status: string; counts: Record<string, number> }> {
      try {
        for (;;) {
          const { value, done } = await reader.read();
          if (done) throw new Error('event stream ended before the job did');
          buffer += decoder.decode(value, { stream: true });
          for (let end = buffer.indexOf('\n\n'); end >= 0; end = buffer.indexOf('\n\n')) {
            const block = buffer.slice(0, end);
            buffer = buffer.slice(end + 2);
            if (!block.startsWith('event: job\n')) continue;
            const job = JSON.parse(block.slice(block.indexOf('data: ') + 6));
            if (job.jobId === jobId() && job.endedAt !== undefined) return job;
          }
        }
      } finally {
        await reader.cancel().catch(() => undefined);
      }
    },
  };
}

describe('the store of docker-compose.yml, in containers', () => {
  it('every long-running service is healthy by its healthcheck', async () => {
    for (const name of ['broker', ...REGISTERS, SERVICE]) {
      const status = await inspect(started.get(name)!, '{{.State.Health.Status}}');
      log(`${name}: health ${status}`);
      expect(status, name).toBe('healthy');
    }
  });

  it("registers use the Dockerfile's HEALTHCHECK; the broker its compose check", async () => {
    const test = (name: string) =>
      inspect(started.get(name)!, '{{json .Config.Healthcheck.Test}}').then(JSON.parse);
    for (const name of [...REGISTERS, SERVICE])
      expect(await test(name)).toEqual(['CMD', ...dockerfileHealthcheck()]);
    expect(await test('broker')).toEqual(compose.services.broker!.healthcheck!.test);
  });

  it('the registers answer REST on their host ports and are linked to the broker', async () => {
    for (const reg of REGISTERS) {
      const port = compose.services[reg]!.environment!.REGBRIDGE_PORT;
      const health = (await (await fetch(`http://127.0.0.1:${port}/health`)).json()) as {
        deviceId: string;
        mqtt: { state: string };
      };
      expect(health).toMatchObject({ deviceId: reg, mqtt: { state: 'connected' } });
    }
  });

  it('the one-shot fanout finished on all three registers', () => {
    for (const reg of REGISTERS)
      expect(fanoutOutput).toMatch(new RegExp(`^${reg}\\s+FINISHED\\s.*X REPORT`, 'm'));
    expect(fanoutOutput).toContain('3 devices: 3 finished, 0 failed, 0 offline, 0 no answer');
  });

  it('the controller service runs a job to every register through its REST API', async () => {
    const { base, headers } = await serviceApi();
    const { devices } = (await (await fetch(`${base}/api/devices`, { headers })).json()) as {
      devices: { deviceId: string; online: boolean }[];
    };
    expect(devices.filter((d) => d.online).map((d) => d.deviceId)).toEqual(REGISTERS);
    let jobId: string | undefined;
    const events = await jobEnd(base, headers.authorization!.slice(7), () => jobId, 30_000);
    const created = await fetch(`${base}/api/jobs`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ script: 'X REPORT', target: { group: 'all' }, name: 'containers test' }),
    });
    expect(created.status).toBe(201);
    jobId = ((await created.json()) as { jobId: string }).jobId;
    const ended = await events.ended();
    expect(ended).toMatchObject({ status: 'COMPLETED', counts: { total: 3, finished: 3 } });
    const job = (await (await fetch(`${base}/api/jobs/${jobId}`, { headers })).json()) as {
      results: { deviceId: string; status: string; report?: string }[];
    };
    expect(job.results.map((r) => [r.deviceId, r.status])).toEqual(REGISTERS.map((r) => [r, 'FINISHED']));
    for (const result of job.results) expect(result.report).toContain('X REPORT');
    log(`controller: job ${jobId} COMPLETED on ${REGISTERS.join(', ')}`);

    // The history is in the compose volume: a new container on it lists the job.
    await started.get(SERVICE)!.stop();
    started.delete(SERVICE);
    await start(SERVICE, containerFor(SERVICE).withWaitStrategy(Wait.forHealthCheck()));
    const again = await serviceApi();
    const listed = (await (await fetch(`${again.base}/api/jobs`, { headers: again.headers })).json()) as {
      jobs: { jobId: string; status: string }[];
    };
    expect(listed.jobs).toEqual([expect.objectContaining({ jobId, status: 'COMPLETED' })]);
  });

  it('runs as a non-root user, with production dependencies only', async () => {
    const broker = started.get('broker')!;
    expect((await broker.exec(['id', '-u'])).output.trim()).not.toBe('0');
    const modules = await broker.exec(['ls', 'node_modules']);
    const installed = modules.output.split('\n');
    expect(installed).toContain('aedes');
    for (const devOnly of ['tsx', 'esbuild', 'typescript', 'vitest', 'testcontainers'])
      expect(installed, devOnly).not.toContain(devOnly);
    expect((await broker.exec(['ls', 'src'])).exitCode).not.toBe(0);
  });
});
