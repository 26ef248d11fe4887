/**
 * The executor named by `--executor` (docs/simulator.md): `simulator` (the default) or
 * `command` with `--command "<program> [args]"`.
 */
import { ConfigError, type DeviceCoreConfig } from '../config.ts';
import type { Logger } from '../logger.ts';
import { CommandExecutor } from './command.ts';
import { CommandLineError, splitCommandLine } from './command-args.ts';
import type { Executor } from './executor.ts';
import { serviceMark } from './process-tree.ts';
import { programProblem } from './program-check.ts';
import { SimulatorExecutor } from './simulator.ts';
import { TaskCgroups } from './task-cgroup.ts';

export type ExecutorConfig = Pick<
  DeviceCoreConfig,
  'executor' | 'command' | 'commandCgroup' | 'scriptTimeout' | 'outputCap'
>;

/**
 * Builds the configured executor; throws ConfigError when `--command` is missing, cannot be split
 * or names a program that does not exist or is not executable.
 */
export function createExecutor(config: ExecutorConfig, deps: { logger?: Logger } = {}): Executor {
  if (config.executor === 'simulator') {
    return new SimulatorExecutor({ timeoutMs: config.scriptTimeout, outputCap: config.outputCap });
  }
  if (!config.command)
    throw new ConfigError(['--command: --executor command needs --command "<program> [args]"']);
  let argv: string[];
  try {
    argv = splitCommandLine(config.command);
  } catch (error) {
    if (error instanceof CommandLineError) throw new ConfigError([`--command: ${error.message}`]);
    throw error;
  }
  const [program, ...args] = argv as [string, ...string[]];
  const problem = programProblem(program);
  if (problem) throw new ConfigError([`--command: ${problem}`]);
  const cgroups = commandCgroups(config.commandCgroup ?? 'auto', deps.logger);
  return new CommandExecutor({
    program,
    args,
    timeoutMs: config.scriptTimeout,
    outputCap: config.outputCap,
    ...(cgroups && { cgroups }),
    ...(deps.logger && { logger: deps.logger }),
  });
}

/**
 * `--command-cgroup`: whether each program gets a cgroup of its own (docs/security.md, "command
 * executor"). Without one, a descendant that drops the mark, leaves the session and is orphaned
 * between two scans escapes its task's end; `require` makes that a start-up error instead.
 */
function commandCgroups(
  mode: 'auto' | 'require' | 'off',
  logger: Logger | undefined,
): TaskCgroups | undefined {
  if (mode === 'off') return undefined;
  const probed = TaskCgroups.probe(serviceMark());
  if (typeof probed !== 'string') {
    logger?.info({ cgroup: probed.parent }, 'command executor: a cgroup per program');
    return probed;
  }
  if (mode === 'require') throw new ConfigError([`--command-cgroup: require, but ${probed}`]);
  logger?.info(
    { reason: probed },
    'command executor: no cgroup per program (--command-cgroup auto); descendants are found by scanning',
  );
  return undefined;
}

export { CommandExecutor, type CommandExecutorOptions } from './command.ts';
export { splitCommandLine } from './command-args.ts';
export type { ExecutionResult, Executor } from './executor.ts';
export { FiscalRegister } from './fiscal-register.ts';
export { SimulatorExecutor, type SimulatorOptions } from './simulator.ts';
