/**
 * Configuration pieces shared by every command's schema (the schemas themselves live with their
 * commands in cli/), the validate-once-and-freeze step, and what the device core reads of its
 * configuration. Flags and REGBRIDGE_<FLAG> variables are gathered by the CLI, validated once
 * with every problem reported at once, then frozen.
 */
import { hostname } from 'node:os';
import { z } from 'zod';
import { durationMs } from './duration.ts';

export const port = z.coerce.number().int().min(0).max(65535);
export const positiveInt = z.coerce.number().int().positive();

/** `NAME:PASSWORD`; the password may itself contain `:`. */
export const userSpecSchema = z.string().transform((spec, ctx) => {
  const colon = spec.indexOf(':');
  if (colon <= 0 || colon === spec.length - 1) {
    ctx.addIssue({ code: 'custom', message: 'expected NAME:PASSWORD (neither part empty)' });
    return z.NEVER;
  }
  return { name: spec.slice(0, colon), password: spec.slice(colon + 1) };
});

export const duration = z.union([z.number(), z.string()]).transform((value, ctx) => {
  const ms = durationMs(value);
  if (ms === undefined) {
    ctx.addIssue({
      code: 'custom',
      message: `not a duration: ${JSON.stringify(value)} (e.g. 120, 120s, 500ms, 2m)`,
    });
    return z.NEVER;
  }
  return ms;
});

/** What the device core (REST app, routes, executors) reads of the device's configuration. */
export interface DeviceCoreConfig {
  readonly deviceId: string;
  readonly installation: string;
  readonly users: readonly { readonly name: string; readonly password: string }[];
  readonly auth: 'on' | 'off';
  /** Seconds. */
  readonly tokenTtl: number;
  readonly authMaxFailures: number;
  readonly authWindow: number;
  readonly maxQueue: number;
  readonly retain: number;
  readonly maxScriptBytes: number;
  readonly fmScriptTimeout: number;
  readonly executor: 'simulator' | 'command';
  readonly command?: string | undefined;
  readonly scriptTimeout: number;
  readonly outputCap: number;
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

/** Validates once, reports every problem at once, freezes the result. */
export function parseConfig<S extends z.ZodType>(
  schema: S,
  input: unknown,
  extraProblems: string[] = [],
): Readonly<z.infer<S>> {
  const parsed = schema.safeParse(input);
  const problems = parsed.success
    ? []
    : parsed.error.issues.map((issue) => {
        const key = issue.path.map(String).join('.');
        return key ? `${flagName(key)}: ${issue.message}` : issue.message;
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
