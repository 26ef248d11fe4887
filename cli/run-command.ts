/**
 * `regbridge run <file>`: one script over REST through DeviceClient (contract section 4), the
 * report on stdout. Exit 0 FINISHED, 1 FAILURE (the task's error on stderr), 2 for a usage,
 * configuration, connection, authentication or time-out problem.
 */
import { readFile } from 'node:fs/promises';
import type { Command, CommanderError } from 'commander';
import { z } from 'zod';
import { DeviceClient } from '../src/client/device-client.ts';
import { RestException, TaskProcessingException, TimeoutException } from '../src/client/rest-exception.ts';
import { parseConfig, userSpecSchema } from '../src/config.ts';
import { durationMs } from '../src/duration.ts';
import { option, reportStartError } from './options.ts';

export const EXIT_FINISHED = 0;
export const EXIT_FAILURE = 1;
export const EXIT_ERROR = 2;

const durationSchema = z.string().transform((value, ctx) => {
  const ms = durationMs(value);
  if (ms === undefined || ms <= 0) {
    ctx.addIssue({
      code: 'custom',
      message: `not a positive duration: ${JSON.stringify(value)} (e.g. 60, 60s, 500ms, 2m)`,
    });
    return z.NEVER;
  }
  return ms;
});

export const runConfigSchema = z.object({
  file: z.string().min(1, 'give a script file, or - for stdin'),
  url: z.url({ protocol: /^https?$/, error: 'expected http://host:port or https://host:port' }),
  user: userSpecSchema.optional(),
  timeout: durationSchema.default(60_000),
  async: z.boolean().default(false),
});

export type RunConfig = Readonly<z.infer<typeof runConfigSchema>>;

interface RunFlags {
  url?: string;
  user?: string;
  timeout?: string;
  async?: boolean;
}

export function registerRunCommand(program: Command): void {
  program
    .command('run')
    .description(
      'run one script on a device over REST and print its report (exit 0 FINISHED, 1 FAILURE, 2 error)',
    )
    .argument('<file>', 'script file, or - to read it from stdin')
    .addOption(option('--url <url>', 'the device').default('http://127.0.0.1:8080'))
    .addOption(option('--user <NAME:PASSWORD>', 'credentials; leave out for a device with --auth off'))
    .addOption(option('--timeout <duration>', 'how long to wait for the script to end').default('60s'))
    .option(
      '--async',
      "the vendor's asynchronous flow: POST /api/vendor-script, then poll the task (default: POST /api/fm-script)",
    )
    // Usage errors exit 2 (contract section 4), not commander's default 1.
    .exitOverride((error: CommanderError) => {
      process.exit(error.exitCode === 0 ? 0 : EXIT_ERROR);
    })
    .action(async (file: string, flags: RunFlags, command: Command) => {
      let config: RunConfig;
      try {
        config = parseConfig(runConfigSchema, { file, ...flags, async: flags.async === true });
      } catch (error) {
        reportStartError(command, error);
        return;
      }
      process.exitCode = await runScript(config, {
        readStdin: () => readStream(process.stdin),
        out: (text) => process.stdout.write(text),
        err: (text) => process.stderr.write(text),
      });
    });
}

export interface RunIo {
  readStdin(): Promise<string>;
  out(text: string): void;
  err(text: string): void;
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
  const client = DeviceClient.fromUrl(config.url, credentials);
  try {
    let report: string | null;
    if (config.async) {
      const id = await client.vendorScript(script);
      report = await client.waitForTask(id, { timeoutMs: config.timeout });
    } else {
      report = await client.processFmScript(script, { timeoutMs: config.timeout });
    }
    // The report has no trailing newline (contract section 2); an empty report prints nothing.
    if (report) io.out(`${report}\n`);
    return EXIT_FINISHED;
  } catch (error) {
    if (error instanceof TaskProcessingException) {
      io.err(`regbridge run: task ${error.taskId} FAILURE: ${error.taskError}\n`);
      return EXIT_FAILURE;
    }
    if (error instanceof TimeoutException && error.taskId !== undefined) {
      io.err(`regbridge run: ${error.message}; it may still end, see GET /api/tasks/${error.taskId}\n`);
      return EXIT_ERROR;
    }
    const message = error instanceof RestException ? error.message : String(error);
    io.err(`regbridge run: ${message}\n`);
    return EXIT_ERROR;
  } finally {
    await client.close();
  }
}

async function readStream(stream: NodeJS.ReadableStream): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(typeof chunk === 'string' ? Buffer.from(chunk) : chunk);
  return Buffer.concat(chunks).toString('utf8');
}
