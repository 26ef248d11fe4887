/**
 * The REST app's per-request loggers, built when first written to. fastify gives every request a
 * child of the app's logger (bound to its request id), and pino builds a child by serializing
 * its bindings through the redaction paths even when nothing is logged. This child writes
 * through the same pino child, created on the first message its level lets through.
 */
import type { FastifyBaseLogger, FastifyServerOptions } from 'fastify';
import type { Bindings, ChildLoggerOptions, Level, Logger } from 'pino';

type Factory = NonNullable<FastifyServerOptions['childLoggerFactory']>;

class LazyChildLogger {
  private built: Logger | undefined;

  /** `parent`: the app's logger, a pino instance (src/logger.ts). */
  constructor(
    private readonly parent: Logger,
    private readonly childBindings: Bindings,
    private readonly options: ChildLoggerOptions,
  ) {}

  private get real(): Logger {
    this.built ??= this.parent.child(this.childBindings, this.options);
    return this.built;
  }

  /** Whether a message at `level` would be written, without building the child for it. */
  private enabled(level: Level): boolean {
    if (this.built) return this.built.isLevelEnabled(level);
    const own = this.options.level;
    if (own === undefined) return this.parent.isLevelEnabled(level);
    const values = this.parent.levels.values;
    return own !== 'silent' && (values[level] ?? 0) >= (values[own] ?? Number.POSITIVE_INFINITY);
  }

  get level(): string {
    return this.built?.level ?? this.options.level ?? this.parent.level;
  }

  set level(level: string) {
    this.real.level = level;
  }

  isLevelEnabled(level: Level): boolean {
    return this.enabled(level);
  }

  child(bindings: Bindings, options?: ChildLoggerOptions): Logger {
    return this.real.child(bindings, options);
  }

  bindings(): Bindings {
    return this.real.bindings();
  }

  // Methods on the prototype, not arrow fields: no closures per request.
  fatal(...args: unknown[]): void {
    this.write('fatal', args);
  }
  error(...args: unknown[]): void {
    this.write('error', args);
  }
  warn(...args: unknown[]): void {
    this.write('warn', args);
  }
  info(...args: unknown[]): void {
    this.write('info', args);
  }
  debug(...args: unknown[]): void {
    this.write('debug', args);
  }
  trace(...args: unknown[]): void {
    this.write('trace', args);
  }
  silent(): void {}

  private write(level: Level, args: unknown[]): void {
    if (this.enabled(level)) (this.real[level] as (...a: unknown[]) => void)(...args);
  }
}

/** fastify's `childLoggerFactory`: a lazy child instead of `logger.child(bindings, options)`. */
export const lazyChildLoggerFactory: Factory = (logger, bindings, options) =>
  new LazyChildLogger(logger as unknown as Logger, bindings, options) as unknown as FastifyBaseLogger;
