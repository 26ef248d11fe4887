/**
 * `regbridge results`: searches a running controller service's history (`GET /api/results`,
 * docs/controller.md "Search and export") and prints a table, or with `--csv` the service's CSV
 * export streamed to stdout byte for byte. Exit 0 found (even nothing), 1 the service cannot be
 * reached or failed, 2 a usage or login problem.
 */
import type { Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { Command } from 'commander';
import { Agent, type Dispatcher, request } from 'undici';
import * as z from 'zod';
import { RESULT_STATUSES } from '../controller/job-types.ts';
import { readPem } from '../src/tls.ts';
import { indexedCommand } from './command-index.ts';
import { addFlags, type FlagTable, flag, flagSchema, parseFlagsOrReport, switchFlag } from './flags.ts';
import { firstLine, renderTable, sanitize } from './format-table.ts';
import { runFlags } from './run-command.ts';

export const EXIT_OK = 0;
export const EXIT_UNREACHABLE = 1;
export const EXIT_USAGE = 2;

/** The service answers at most this many rows a page; `--limit` above it reads several pages. */
const SERVICE_PAGE = 1000;

const filterText = z.string().min(1, 'must not be empty');

/** Filter flags -> the query parameter each sets (the same names as the service's). */
export const FILTERS = ['deviceId', 'store', 'status', 'jobId', 'scriptId', 'from', 'to', 'q'] as const;

export const resultsFlags = {
  url: flag(
    '--url <url>',
    'the controller service',
    z.url({ protocol: /^https?$/, error: 'expected http://host:port or https://host:port' }),
    { default: 'http://127.0.0.1:8090' },
  ),
  user: runFlags.user,
  ca: runFlags.ca,
  deviceId: flag('--device-id <id>', 'only this register', filterText),
  store: flag('--store <store>', 'only this store', filterText),
  status: flag(
    '--status <status>',
    `only results with this status (${RESULT_STATUSES.join(', ')})`,
    z.enum(RESULT_STATUSES),
  ),
  jobId: flag('--job-id <id>', 'only this job', filterText),
  scriptId: flag('--script-id <id>', 'only jobs started from this library script', filterText),
  from: flag(
    '--from <time>',
    'jobs created at or after (a day 2026-11-22, or a time with offset)',
    filterText,
  ),
  to: flag('--to <time>', 'jobs created before (a day, or a time with offset)', filterText),
  q: flag('--q <words>', 'words that must all appear in the report or error', filterText),
  limit: flag(
    '--limit <n>',
    "at most this many results (without it: the service's page of 50 for a table, every match with --csv)",
    z.coerce.number().int().min(1),
  ),
  csv: switchFlag('--csv', "print the service's CSV export (RFC 4180, header row) instead of a table"),
} satisfies FlagTable;

export const resultsSchema = flagSchema(resultsFlags);
export type ResultsConfig = Readonly<z.infer<typeof resultsSchema>>;

export function registerResultsCommand(program: Command): void {
  const command = indexedCommand(program, 'results');
  addFlags(command, resultsFlags).action(async (_flags: unknown, cmd: Command) => {
    const config = parseFlagsOrReport(cmd, resultsFlags, resultsSchema);
    if (!config) return;
    process.exitCode = await searchResults(config, {
      out: process.stdout,
      err: (text) => process.stderr.write(text),
    });
  });
}

export interface ResultsIo {
  out: NodeJS.WritableStream;
  err(text: string): void;
}

/** A refusal to report in the command line's words, with its exit code. */
class ResultsError extends Error {
  constructor(
    message: string,
    readonly exitCode: number,
  ) {
    super(message);
  }
}

interface FoundRow {
  jobId: string;
  jobName?: string;
  deviceId: string;
  status: string;
  endedAt?: string;
  report?: string;
  error?: string;
}

/** Searches and prints; answers the exit code, never throws. */
export async function searchResults(config: ResultsConfig, io: ResultsIo): Promise<number> {
  const dispatcher = new Agent(config.ca ? { connect: { ca: readPem(config.ca) } } : {});
  const headers: Record<string, string> = {};
  try {
    if (config.user) headers.authorization = `Bearer ${await logIn(config, dispatcher)}`;
    if (config.csv) {
      headers.accept = 'text/csv';
      const response = await send(config, dispatcher, query(config, config.limit), headers);
      // The export as the service wrote it (BOM, CRLF, quoting): a file a spreadsheet opens.
      await pipeline(response.body, io.out as Writable, { end: false });
      return EXIT_OK;
    }
    headers.accept = 'application/json';
    const rows: FoundRow[] = [];
    let before: string | undefined;
    let more = false;
    for (;;) {
      const wanted =
        config.limit === undefined ? undefined : Math.min(SERVICE_PAGE, config.limit - rows.length);
      const params = query(config, wanted);
      if (before !== undefined) params.set('before', before);
      const response = await send(config, dispatcher, params, headers);
      const page = (await response.body.json()) as { results: FoundRow[]; next?: string };
      rows.push(...page.results);
      before = page.next;
      more = before !== undefined;
      // Without --limit, one page of the service's size; with it, pages until it is reached.
      if (!more || config.limit === undefined || rows.length >= config.limit) break;
    }
    io.out.write(`${table(rows)}\n`);
    if (more) io.err(`more results: raise --limit, or use --csv for all of them\n`);
    return EXIT_OK;
  } catch (error) {
    if (error instanceof ResultsError) {
      io.err(`regbridge results: ${error.message}\n`);
      return error.exitCode;
    }
    io.err(`regbridge results: ${String(error)}\n`);
    return EXIT_UNREACHABLE;
  } finally {
    // The token is not needed any more: end it rather than leave it valid for --token-ttl.
    if (headers.authorization) await logOut(config, dispatcher, headers.authorization);
    await dispatcher.close();
  }
}

async function logOut(config: ResultsConfig, dispatcher: Dispatcher, authorization: string): Promise<void> {
  try {
    const response = await request(endpoint(config, 'api/logout'), {
      method: 'POST',
      headers: { authorization },
      dispatcher,
      headersTimeout: 5000,
    });
    await response.body.dump();
  } catch {
    // Best effort: the token ends by itself at --token-ttl.
  }
}

function query(config: ResultsConfig, limit: number | undefined): URLSearchParams {
  const params = new URLSearchParams();
  for (const key of FILTERS) {
    const value = config[key];
    if (value !== undefined) params.set(key, value);
  }
  if (limit !== undefined) params.set('limit', String(limit));
  return params;
}

function endpoint(config: ResultsConfig, path: string): string {
  return new URL(path, config.url.endsWith('/') ? config.url : `${config.url}/`).toString();
}

async function call(
  config: ResultsConfig,
  dispatcher: Dispatcher,
  url: string,
  options: { method: 'GET' | 'POST'; headers: Record<string, string>; body?: string },
): Promise<Dispatcher.ResponseData> {
  try {
    return await request(url, { ...options, dispatcher, headersTimeout: 30_000, bodyTimeout: 60_000 });
  } catch (error) {
    throw new ResultsError(
      `cannot reach the controller service at ${config.url}: ${(error as Error).message}; check --url${
        config.url.startsWith('https:') ? ' and --ca' : ''
      }`,
      EXIT_UNREACHABLE,
    );
  }
}

/** POST /api/authenticate with --user; the password goes only into the request body. */
async function logIn(config: ResultsConfig, dispatcher: Dispatcher): Promise<string> {
  const user = config.user!;
  const response = await call(config, dispatcher, endpoint(config, 'api/authenticate'), {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ userName: user.name, password: user.password }),
  });
  if (response.statusCode === 200) return ((await response.body.json()) as { token: string }).token;
  const refusal = await errorBody(response);
  if (refusal.code === 'INVALID_CREDENTIALS')
    throw new ResultsError(
      `wrong user name or password in --user (the service at ${config.url} refused ${sanitize(user.name)})`,
      EXIT_USAGE,
    );
  if (refusal.code === 'TOO_MANY_ATTEMPTS')
    throw new ResultsError(
      `too many failed logins: wait ${response.headers['retry-after'] ?? 60} s, then try again with the right --user`,
      EXIT_USAGE,
    );
  throw new ResultsError(
    `the service at ${config.url} refused the login (${response.statusCode} ${refusal.code}): ${refusal.message}`,
    EXIT_USAGE,
  );
}

async function send(
  config: ResultsConfig,
  dispatcher: Dispatcher,
  params: URLSearchParams,
  headers: Record<string, string>,
): Promise<Dispatcher.ResponseData> {
  const url = `${endpoint(config, 'api/results')}${params.size > 0 ? `?${params}` : ''}`;
  const response = await call(config, dispatcher, url, { method: 'GET', headers });
  if (response.statusCode === 200) return response;
  const refusal = await errorBody(response);
  if (response.statusCode === 401)
    throw new ResultsError(
      config.user
        ? `the service at ${config.url} refused the token of --user ${sanitize(config.user.name)}: ${refusal.message}`
        : `the service at ${config.url} needs a login: pass --user NAME:PASSWORD`,
      EXIT_USAGE,
    );
  if (response.statusCode === 400) throw new ResultsError(inFlagWords(refusal.message), EXIT_USAGE);
  if (response.statusCode === 404)
    throw new ResultsError(
      `${config.url} has no GET /api/results: is it a controller service? check --url`,
      EXIT_USAGE,
    );
  throw new ResultsError(
    `the service at ${config.url} failed (${response.statusCode} ${refusal.code}): ${refusal.message}`,
    EXIT_UNREACHABLE,
  );
}

/** The service names query parameters (`'from'`); the user typed flags (`--from`). */
function inFlagWords(message: string): string {
  const flagOf = (name: string): string => `--${name.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`;
  return `the service refused the search: ${message.replace(
    /(?:query parameter )?'([A-Za-z]+)'/g,
    (whole, name: string) =>
      (FILTERS as readonly string[]).includes(name) || name === 'limit' ? flagOf(name) : whole,
  )}`;
}

async function errorBody(response: Dispatcher.ResponseData): Promise<{ code: string; message: string }> {
  const text = await response.body.text().catch(() => '');
  try {
    const body = JSON.parse(text) as { code?: unknown; message?: unknown };
    return {
      code: typeof body.code === 'string' ? sanitize(body.code) : 'ERROR',
      message: typeof body.message === 'string' ? sanitize(body.message) : '',
    };
  } catch {
    return { code: 'ERROR', message: sanitize(text.slice(0, 200)) };
  }
}

/** Every cell comes from the service (reports from registers): sanitised as `fanout` and `watch` do. */
function table(rows: readonly FoundRow[]): string {
  return renderTable(
    ['JOB', 'NAME', 'DEVICE', 'STATUS', 'ENDED', 'DETAIL'],
    rows.map((row) => [
      sanitize(row.jobId),
      firstLine(row.jobName ?? '', 30),
      sanitize(row.deviceId),
      sanitize(row.status),
      sanitize(row.endedAt ?? ''),
      firstLine(row.error ?? row.report ?? ''),
    ]),
  );
}
