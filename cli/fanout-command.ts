/**
 * `regbridge fanout <scriptFile>`: a store controller that sends one script to many devices over
 * the store broker (docs/controller.md) and waits for each one's result. Exit code 0 only when
 * every targeted device FINISHED; 1 otherwise (also when nothing was targeted); 2 on usage,
 * configuration and connection errors.
 */
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import cliProgress from 'cli-progress';
import type { Command } from 'commander';
import * as z from 'zod';
import { openHistory } from '../controller/history-db.ts';
import { renderRef } from '../controller/script-intake.ts';
import { ScriptLibrary } from '../controller/script-library.ts';
import type { StoreController } from '../controller/store-controller.ts';
import { parseTarget } from '../controller/targets.ts';
import { type FanoutResult, summarize } from '../controller/types.ts';
import { ConfigError, positiveDuration, wholeNumber } from '../src/config.ts';
import { indexedCommand } from './command-index.ts';
import { connectionFlags, controllerFor } from './controller-flags.ts';
import { fanoutAsJob, wantsJob } from './fanout-job.ts';
import { addFlags, flag, flagSchema, parsedBy, parseFlags, repeatableFlag, switchFlag } from './flags.ts';
import { renderResults, renderSummary } from './format-table.ts';
import { cliLogger } from './logging.ts';
import { reportStartError } from './options.ts';
import { noDevicesHint } from './watch-command.ts';

const targetSchema = parsedBy(parseTarget);

/** 0..1, e.g. 0.5. */
const ratioValue = z.union([z.number(), z.string()]).transform((value, ctx) => {
  const ratio =
    typeof value === 'number'
      ? value
      : /^\s*(0|1|0?\.\d+|1\.0*)\s*$/.test(value)
        ? Number(value)
        : Number.NaN;
  if (Number.isFinite(ratio) && ratio >= 0 && ratio <= 1) return ratio;
  ctx.addIssue({
    code: 'custom',
    message: `expected a ratio from 0 to 1 (e.g. 0.5), got ${JSON.stringify(value)}`,
  });
  return z.NEVER;
});

/** `--param NAME=VALUE`. */
const paramSchema = z.string().transform((spec, ctx): [string, string] => {
  const equals = spec.indexOf('=');
  if (equals <= 0) {
    ctx.addIssue({ code: 'custom', message: `expected NAME=VALUE, got ${JSON.stringify(spec)}` });
    return z.NEVER;
  }
  return [spec.slice(0, equals), spec.slice(equals + 1)];
});

export const fanoutFlags = {
  ...connectionFlags,
  scriptId: flag(
    '--script-id <id>',
    "send a library script of the controller service's --db instead of <scriptFile>",
    z.string().min(1),
    {
      defaultHelp: 'off',
    },
  ),
  params: repeatableFlag(
    '--param <NAME=VALUE>',
    "a library script's parameter (with --script-id; repeatable)",
    paramSchema,
  ),
  db: flag(
    '--db <file>',
    'the controller service history holding the library (with --script-id)',
    z.string().min(1),
    {
      default: './regbridge-controller.db',
    },
  ),
  to: flag('--to <target>', 'all | group:<G> | <id>,<id>,...', targetSchema, { default: 'all' }),
  deadline: flag(
    '--deadline <duration>',
    'wait this long for every result, then NO_ANSWER',
    positiveDuration,
    {
      default: '60s',
    },
  ),
  json: switchFlag('--json', 'print {results, summary} as JSON on stdout instead of the table'),
  batchSize: flag(
    '--batch-size <n>',
    'at most this many devices running the script at once; off: no limit (runs it as a job: docs/controller.md)',
    wholeNumber(1),
    { defaultHelp: 'off' },
  ),
  maxPerMinute: flag('--max-per-minute <n>', 'at most this many sends per rolling minute', wholeNumber(1), {
    defaultHelp: 'off',
  }),
  abortFailureRatio: flag(
    '--abort-failure-ratio <ratio>',
    'stop sending and cancel what is still queued once failed/ended >= this (0..1)',
    ratioValue,
    { defaultHelp: 'off' },
  ),
};

export const fanoutSchema = flagSchema(fanoutFlags);

async function readScript(file: string): Promise<string> {
  let script: string;
  try {
    if (file === '-') {
      const chunks: Buffer[] = [];
      for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
      script = Buffer.concat(chunks).toString('utf8');
    } else {
      script = await readFile(file, 'utf8');
    }
  } catch (error) {
    throw new ConfigError([`<scriptFile>: cannot read ${file}: ${(error as Error).message}`]);
  }
  if (script.trim().length === 0) throw new ConfigError([`<scriptFile>: ${file} is empty`]);
  return script;
}

/**
 * The script: a file (or stdin), or a library script rendered from the controller service's
 * history file (docs/controller.md, "Script library"). A script that needs approval is refused:
 * it goes through the service, where an approver sees it.
 */
async function scriptToSend(
  scriptFile: string | undefined,
  config: { scriptId?: string | undefined; params?: [string, string][] | undefined; db: string },
): Promise<string> {
  if (config.scriptId === undefined) {
    if (scriptFile === undefined) throw new ConfigError(['<scriptFile>: required (or --script-id ID)']);
    return readScript(scriptFile);
  }
  if (scriptFile !== undefined)
    throw new ConfigError(['--script-id: give either <scriptFile> or --script-id']);
  if (config.db === ':memory:' || !existsSync(config.db)) {
    throw new ConfigError([
      `--db: ${config.db} does not exist (the controller service's history holds the library)`,
    ]);
  }
  const outcome = renderRef(new ScriptLibrary(openHistory(config.db)), {
    scriptId: config.scriptId,
    params: Object.fromEntries(config.params ?? []),
  });
  switch (outcome.kind) {
    case 'unknown':
      throw new ConfigError([`--script-id: no library script ${config.scriptId} in ${config.db}`]);
    case 'archived':
      throw new ConfigError([`--script-id: library script ${config.scriptId} is archived`]);
    case 'invalid':
      throw new ConfigError(outcome.problems.map((p) => `--param: ${p.message}`));
    default:
      if (outcome.requiresApproval) {
        throw new ConfigError([
          `--script-id: library script ${config.scriptId} needs approval: start it as a job of the controller service`,
        ]);
      }
      return outcome.script;
  }
}

/** A progress bar on stderr when it is a terminal; nothing otherwise (pipes, CI, --json). */
function progressBar(enabled: boolean): {
  start: (total: number) => void;
  update: (done: number) => void;
  stop: () => void;
} {
  if (!enabled) return { start: () => {}, update: () => {}, stop: () => {} };
  const bar = new cliProgress.SingleBar(
    {
      format: 'fanout [{bar}] {value}/{total} devices',
      stream: process.stderr,
      hideCursor: true,
      clearOnComplete: true,
    },
    cliProgress.Presets.shades_classic,
  );
  let started = false;
  return {
    start: (total) => {
      started = true;
      bar.start(total, 0);
    },
    update: (done) => {
      if (started) bar.update(done);
    },
    stop: () => {
      if (started) bar.stop();
      started = false;
    },
  };
}

function printResults(results: FanoutResult[], requestId: string, json: boolean): void {
  const summary = summarize(results);
  if (json) {
    process.stdout.write(`${JSON.stringify({ requestId, results, summary }, null, 2)}\n`);
    return;
  }
  if (results.length > 0) process.stdout.write(`${renderResults(results)}\n\n`);
  process.stdout.write(`${renderSummary(summary)}\n`);
}

export function registerFanoutCommand(program: Command): void {
  const command = indexedCommand(program, 'fanout').argument(
    '[scriptFile]',
    'the script to send (- reads standard input); or --script-id',
  );
  addFlags(command, fanoutFlags);
  command.action(async (scriptFile: string | undefined, _flags: unknown, cmd: Command) => {
    let config: z.infer<typeof fanoutSchema>;
    let script: string;
    try {
      config = parseFlags(cmd, fanoutFlags, fanoutSchema);
      script = await scriptToSend(scriptFile, config);
    } catch (error) {
      reportStartError(cmd, error);
      return;
    }
    const logger = cliLogger(config.logLevel);
    const controller: StoreController = controllerFor(config, logger);
    try {
      await controller.start();
    } catch (error) {
      console.error(`regbridge fanout: ${(error as Error).message}`);
      process.exitCode = 2;
      return;
    }
    // Ctrl-C: stop waiting; pending devices are reported NO_ANSWER (`controller stopped`). A job
    // (rollout flags) is cancelled first: nothing more is sent, what is queued is cancelled.
    const interrupted = new AbortController();
    const onSignal = (): void => {
      interrupted.abort();
      void controller.stop();
    };
    process.once('SIGINT', onSignal);
    process.once('SIGTERM', onSignal);
    const bar = progressBar(Boolean(process.stderr.isTTY) && !config.json);
    let requestId = '';
    let results: FanoutResult[];
    try {
      if (wantsJob(config)) {
        let started = false;
        ({ requestId, results } = await fanoutAsJob(controller, script, config, {
          logger,
          signal: interrupted.signal,
          progress: (done, total) => {
            if (!started) bar.start(total);
            started = true;
            bar.update(done);
          },
        }));
      } else {
        results = await controller.submit(script, {
          to: config.to,
          deadlineMs: config.deadline,
          // Once the controller has given up, a device that only gets the script later (it was
          // reconnecting) must not run it: docs/mqtt.md, `notAfter`.
          notAfter: Date.now() + config.deadline,
          onSent: (sent) => {
            requestId = sent.requestId;
            bar.start(sent.sentTo.length + sent.offline.length);
          },
          onResult: (_result, progress) => bar.update(progress.done),
        });
      }
    } catch (error) {
      bar.stop();
      await controller.stop();
      console.error(`regbridge fanout: ${(error as Error).message}`);
      process.exitCode = 2;
      return;
    } finally {
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
    }
    bar.stop();
    await controller.stop();
    if (results.length === 0) {
      const known = controller.devices().length;
      console.error(
        known === 0
          ? noDevicesHint('fanout', config.mqttUrl, config.ns)
          : `regbridge fanout: no device targeted by --to ${cmd.getOptionValue('to') ?? 'all'} (${known} ${known === 1 ? 'device' : 'devices'} known)`,
      );
    }
    printResults(results, requestId, config.json);
    process.exitCode = results.length > 0 && results.every((r) => r.status === 'FINISHED') ? 0 : 1;
  });
}
