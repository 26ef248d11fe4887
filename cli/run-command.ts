/**
 * `regbridge run <file>`: one script over REST through DeviceClient (docs/client.md), the
 * report on stdout. Exit 0 FINISHED, 1 FAILURE (the task's error on stderr), 2 for a usage,
 * configuration, connection, authentication or time-out problem.
 */
import { readFile } from 'node:fs/promises';
import type { Command } from 'commander';
import * as z from 'zod';
import { DeviceClient } from '../src/client/device-client.ts';
import { RestException, TaskProcessingException, TimeoutException } from '../src/client/rest-exception.ts';
import { positiveDuration, userSpecSchema } from '../src/config.ts';
import type { Logger } from '../src/logger.ts';
import { readPem } from '../src/tls.ts';
import { indexedCommand } from './command-index.ts';
import { caFileFlag, logLevelFlag } from './common-flags.ts';
import { addFlags, flag, flagSchema, parseFlagsOrReport, switchFlag } from './flags.ts';
import { sanitize } from './format-table.ts';
import { cliLogger } from './logging.ts';

export const EXIT_FINISHED = 0;
export const EXIT_FAILURE = 1;
export const EXIT_ERROR = 2;

export const runFlags = {
  url: flag(
    '--url <url>',
    'the device',
    z.url({ protocol: /^https?$/, error: 'expected http://host:port or https://host:port' }),
    { default: 'http://127.0.0.1:8080' },
  ),
  user: flag('--user <NAME:PASSWORD>', 'credentials; leave out for a device with --auth off', userSpecSchema),
  ca: caFileFlag('--ca <file>', 'PEM CA certificate(s) to trust for an https:// device'),
  timeout: flag('--timeout <duration>', 'how long to wait for the script to end', positiveDuration, {
    default: '60s',
  }),
  async: switchFlag(
    '--async',
    "the vendor's asynchronous flow: POST /api/vendor-script, then poll the task (otherwise POST /api/fm-script)",
  ),
  logLevel: logLevelFlag('warn'),
};

export const runConfigSchema = flagSchema(runFlags).extend({
  file: z.string().min(1, 'give a script file, or - for stdin'),
});

export type RunConfig = Readonly<z.infer<typeof runConfigSchema>>;

export function registerRunCommand(program: Command): void {
  const command = indexedCommand(program, 'run').argument(
    '<file>',
    'script file, or - to read it from stdin',
  );
  addFlags(command, runFlags).action(async (file: string, _flags: unknown, cmd: Command) => {
    const config = parseFlagsOrReport(cmd, runFlags, runConfigSchema, { input: { file } });
    if (!config) return;
    process.exitCode = await runScript(config, {
      readStdin: () => readStream(process.stdin),
      out: (text) => process.stdout.write(text),
      err: (text) => process.stderr.write(text),
      logger: cliLogger(config.logLevel),
    });
  });
}

export interface RunIo {
  readStdin(): Promise<string>;
  out(text: string): void;
  err(text: string): void;
  logger?: Logger;
}

/** Runs the script and answers the exit code; never throws. */
export async function runScript(config: RunConfig, io: RunIo): Promise<number> {
  let script: string;
  try {
    script = config.file === '-' ? await io.readStdin() : await readFile(config.file, 'utf8');
  } catch (error) {
    io.err(`regbridge run: cannot read ${config.file}: ${(error as Error).message}\n`);
    return EXIT_ERROR;
  }
  const credentials = config.user
    ? { userName: config.user.name, password: config.user.password }
    : undefined;
  const client = DeviceClient.fromUrl(config.url, credentials, config.ca ? { ca: readPem(config.ca) } : {});
  try {
    let report: string | null;
    if (config.async) {
      const id = await client.vendorScript(script);
      io.logger?.info({ taskId: id, url: config.url }, 'task submitted; polling until it ends');
      report = await client.waitForTask(id, { timeoutMs: config.timeout });
    } else {
      io.logger?.info({ url: config.url }, 'running the script through POST /api/fm-script');
      report = await client.processFmScript(script, { timeoutMs: config.timeout });
    }
    io.logger?.info('task FINISHED');
    // The report has no trailing newline (docs/api.md); an empty report prints nothing.
    // From the device: escapes are neutralised as `fanout` and `watch` do (cli/format-table.ts).
    if (report) io.out(`${sanitize(report, { keepLines: true })}\n`);
    return EXIT_FINISHED;
  } catch (error) {
    if (error instanceof TaskProcessingException) {
      io.err(
        `regbridge run: task ${error.taskId} FAILURE: ${sanitize(error.taskError, { keepLines: true })}\n`,
      );
      return EXIT_FAILURE;
    }
    if (error instanceof TimeoutException && error.taskId !== undefined) {
      io.err(`regbridge run: ${error.message}; it may still end, see GET /api/tasks/${error.taskId}\n`);
      return EXIT_ERROR;
    }
    const message = error instanceof RestException ? inCliWords(error, config) : String(error);
    io.err(`regbridge run: ${message}\n`);
    return EXIT_ERROR;
  } finally {
    await client.close();
  }
}

/**
 * A refusal in the command line's words: what to change and with which flag, not the REST body
 * field or header the device named (the REST text stays for anything not listed here).
 */
function inCliWords(error: RestException, config: RunConfig): string {
  const file = config.file === '-' ? 'the script from stdin' : `the script file ${config.file}`;
  switch (error.code) {
    case 'INVALID_REQUEST':
      if (/'(fmScript|vendorScript)' must not be empty/.test(error.message))
        return `${file} is empty: nothing to run`;
      break;
    case 'UNAUTHORIZED':
      return config.user
        ? `the device refused the login of --user ${config.user.name}: ${error.serverMessage ?? error.message}`
        : `the device at ${config.url} needs a login: pass --user NAME:PASSWORD`;
    case 'INVALID_CREDENTIALS':
      return `wrong user name or password in --user (the device at ${config.url} refused ${config.user?.name ?? 'it'})`;
    case 'TOO_MANY_ATTEMPTS':
      return `too many failed logins: wait ${error.retryAfterSeconds ?? 60} s, then try again with the right --user`;
    case 'SCRIPT_TOO_LARGE':
      return `${file} is larger than the device accepts (its --max-script-bytes)`;
    case 'QUEUE_FULL':
      return 'the device queue is full: try again when its tasks have run (its --max-queue)';
  }
  if (error.statusCode === 0) return `cannot reach the device: ${error.message}; check --url`;
  return error.message;
}

async function readStream(stream: NodeJS.ReadableStream): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(typeof chunk === 'string' ? Buffer.from(chunk) : chunk);
  return Buffer.concat(chunks).toString('utf8');
}
