/**
 * Configuration pieces shared by every command's schema (the schemas themselves live with their
 * commands in cli/), the validate-once-and-freeze step, and what the device core reads of its
 * configuration. Flags and REGBRIDGE_<FLAG> variables are gathered by the CLI, validated once
 * with every problem reported at once, then frozen.
 */
import { hostname } from 'node:os';
import * as z from 'zod';
import { passwordProblem } from './auth/credentials.ts';
import { durationMs } from './duration.ts';

/**
 * A whole number from a flag or variable (a string) or from code (a number). Says what it got:
 * `--port abc` answers `expected a whole number, got "abc"`, not "received NaN".
 */
export function wholeNumber(
  min: number,
  max = Number.MAX_SAFE_INTEGER,
  what = 'a whole number',
): z.ZodType<number, number | string> {
  return z.union([z.number(), z.string()]).transform((value, ctx) => {
    const text = typeof value === 'number' ? String(value) : value.trim();
    const number = /^-?\d+$/.test(text) ? Number(text) : Number.NaN;
    if (!Number.isSafeInteger(number)) {
      ctx.addIssue({ code: 'custom', message: `expected ${what}, got ${JSON.stringify(value)}` });
      return z.NEVER;
    }
    if (number < min || number > max) {
      const range = max === Number.MAX_SAFE_INTEGER ? `at least ${min}` : `between ${min} and ${max}`;
      ctx.addIssue({ code: 'custom', message: `expected ${range}, got ${number}` });
      return z.NEVER;
    }
    return number;
  });
}

export const port = wholeNumber(0, 65535, 'a port number (0-65535; 0 picks a free one)');

/** `NAME:PASSWORD`; the password may itself contain `:`. */
export const userSpecSchema = z.string().transform((spec, ctx) => {
  const colon = spec.indexOf(':');
  if (colon <= 0 || colon === spec.length - 1) {
    ctx.addIssue({ code: 'custom', message: 'expected NAME:PASSWORD (neither part empty)' });
    return z.NEVER;
  }
  return { name: spec.slice(0, colon), password: spec.slice(colon + 1) };
});

/**
 * `NAME:PASSWORD` of a user a service accepts (`serve --user`): the password may be a hash from
 * `regbridge hash-password`, which is then a hash, never a literal; a malformed one is refused.
 */
export const serviceUserSpecSchema = userSpecSchema.superRefine((user, ctx) => {
  const problem = passwordProblem(user.password);
  if (problem) ctx.addIssue({ code: 'custom', message: `user ${user.name}: ${problem}` });
});

/** Durations in milliseconds: `500ms`, `120s`, `2m`, `1h`, or a bare number of seconds. */
export function durationIn(
  unit: 'ms' | 's',
  options: { min?: number } = {},
): z.ZodType<number, number | string> {
  const min = options.min ?? 0;
  return z.union([z.number(), z.string()]).transform((value, ctx) => {
    const ms = durationMs(value);
    const result = ms === undefined ? undefined : unit === 'ms' ? ms : ms / 1000;
    if (result === undefined || result < min || (unit === 's' && !Number.isInteger(result))) {
      const least = min > 0 ? `at least ${min}${unit}, ` : '';
      ctx.addIssue({
        code: 'custom',
        message: `not a duration${unit === 's' ? ' in whole seconds' : ''}: ${JSON.stringify(value)} (${least}e.g. 120, 120s, 500ms, 2m, 1h)`,
      });
      return z.NEVER;
    }
    return result;
  });
}

/** Milliseconds; 0 allowed (e.g. --script-timeout 0: none). */
export const duration = durationIn('ms');
/** Milliseconds, more than 0. */
export const positiveDuration = durationIn('ms', { min: 1 });

/** What the device core (REST app, routes, executors) reads of the device's configuration. */
export interface DeviceCoreConfig {
  readonly deviceId: string;
  readonly installation: string;
  readonly users: readonly { readonly name: string; readonly password: string }[];
  readonly auth: 'on' | 'off';
  /** Seconds. */
  readonly tokenTtl: number;
  readonly authMaxFailures: number;
  readonly authUserMaxFailures: number;
  /** Bytes of body /api/authenticate reads (413 BODY_TOO_LARGE above). */
  readonly authBodyLimit: number;
  /** Deepest nesting of objects and arrays a JSON body may have (400 above). */
  readonly maxJsonDepth: number;
  readonly authWindow: number;
  readonly maxQueue: number;
  readonly retain: number;
  readonly maxScriptBytes: number;
  readonly fmScriptTimeout: number;
  readonly executor: 'simulator' | 'command';
  readonly command?: string | undefined;
  /** `--command-cgroup`: a cgroup per program (src/executors/task-cgroup.ts); default auto. */
  readonly commandCgroup?: 'auto' | 'require' | 'off';
  readonly scriptTimeout: number;
  readonly outputCap: number;
  /** Ms without the broker after which /health says `degraded` (503); default 60 s. */
  readonly healthMqttGrace?: number;
}

/** Host names are turned into a valid device id: `[A-Za-z0-9_-]{1,64}`. */
export function defaultDeviceId(): string {
  return (
    hostname()
      .replace(/[^A-Za-z0-9_-]/g, '-')
      .slice(0, 64) || 'device'
  );
}

export class ConfigError extends Error {
  readonly problems: string[];
  constructor(problems: string[]) {
    super(`invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'ConfigError';
    this.problems = problems;
  }
}

/** Flag name for a config key, for error messages: brokerPort -> --broker-port. */
export function flagName(key: string): string {
  const top = key.split('.')[0] ?? key;
  const singular: Record<string, string> = { users: 'user', groups: 'group' };
  return `--${(singular[top] ?? top).replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`;
}

/**
 * Validates once, reports every problem at once, freezes the result. `label` names a config key
 * in messages (its flag; cli/flags.ts adds the variable and command it came from).
 */
export function parseConfig<S extends z.ZodType>(
  schema: S,
  input: unknown,
  extraProblems: string[] = [],
  label: (key: string) => string = flagName,
): Readonly<z.infer<S>> {
  const parsed = schema.safeParse(input);
  const problems = parsed.success
    ? []
    : parsed.error.issues.map((issue) => {
        const key = issue.path[0] === undefined ? '' : String(issue.path[0]);
        return key ? `${label(key)}: ${issue.message}` : issue.message;
      });
  problems.push(...extraProblems);
  if (!parsed.success || problems.length > 0) throw new ConfigError(problems);
  return deepFreeze(parsed.data);
}

function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object') {
    for (const child of Object.values(value)) deepFreeze(child);
    Object.freeze(value);
  }
  return value;
}
