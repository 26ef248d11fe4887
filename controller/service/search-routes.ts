/**
 * Searching every job's results over HTTP (docs/controller.md, "Search and export"): JSON pages
 * with a `next` cursor, or the whole search as CSV (RFC 4180, header row, UTF-8 with a BOM so a
 * spreadsheet reads the accents: docs/decisions/csv-export.md) streamed a page at a time, so
 * memory stays bounded whatever the number of rows and the database is free between pages.
 */

import { Readable } from 'node:stream';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { stringify as stringifyRows } from 'csv-stringify/sync';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import * as z from 'zod';
import type { AuthService } from '../../src/auth/auth-service.ts';
import { ApiError } from '../../src/routes/api-error.ts';
import type { JobEngine } from '../job-engine.ts';
import { type FoundResult, parseCursor, type ResultQuery, type ResultSearch } from '../result-search.ts';
import { accessOf } from './access.ts';
import { requireToken } from './auth-routes.ts';
import { DEFAULT_PAGE, inputErrors, resultListSchema, resultQuerySchema, security } from './schemas.ts';

export interface SearchRoutesOptions {
  auth: AuthService;
  engine: JobEngine;
  search: ResultSearch;
}

/** Rows read from SQLite per step of an export. */
export const EXPORT_PAGE = 500;

/** The CSV columns: the JSON fields, in the same order. */
export const CSV_COLUMNS: readonly (keyof FoundResult | 'store')[] = [
  'jobId',
  'jobName',
  'store',
  'deviceId',
  'status',
  'taskId',
  'sentAt',
  'endedAt',
  'report',
  'error',
  'attempts',
];

function wantsCsv(format: string | undefined, accept: string | undefined): boolean {
  if (format !== undefined) return format === 'csv';
  return accept !== undefined && /(^|,)\s*text\/csv\b/i.test(accept);
}

/** Free-text columns whose cells a spreadsheet could take for a formula. */
const TEXT_COLUMNS = new Set<string>(['jobName', 'report', 'error']);
/** A formula's first character, after optional whitespace (OWASP, "CSV Injection"). */
const FORMULA_START = /^\s*[=+\-@]/;

/**
 * `'` before a text cell that a spreadsheet would run as a formula (`=HYPERLINK(...)` in a
 * report), so it shows as text: docs/decisions/csv-formula-cells.md.
 */
function csvText(value: string, column: string | number | undefined): string {
  return typeof column === 'string' && TEXT_COLUMNS.has(column) && FORMULA_START.test(value)
    ? `'${value}`
    : value;
}

const CSV_OPTIONS = {
  columns: CSV_COLUMNS as string[],
  record_delimiter: 'windows' as const,
  cast: {
    number: (value: number) => String(value),
    string: (value: string, context: { column?: string | number }) => csvText(value, context.column),
  },
};

/**
 * The search as CSV, one chunk per page of rows (one socket write per page, not per row),
 * yielding to the event loop between pages; the stream pulls the next page only when the client
 * has taken the last (backpressure).
 */
async function* exportCsv(
  engine: JobEngine,
  search: ResultSearch,
  query: ResultQuery,
  limit: number | undefined,
  before: { seq: number; position: number } | undefined,
): AsyncGenerator<string> {
  let left = limit ?? Number.POSITIVE_INFINITY;
  let cursor = before;
  let first = true;
  for (;;) {
    const size = Math.min(EXPORT_PAGE, left);
    const page = size > 0 ? engine.readHistory(() => search.page(query, size, cursor)) : { results: [] };
    yield stringifyRows(page.results, { ...CSV_OPTIONS, header: first, bom: first });
    first = false;
    left -= page.results.length;
    if (page.next === undefined || left <= 0) return;
    cursor = parseCursor(page.next);
    await nextTurn();
  }
}

export const searchRoutes: FastifyPluginAsyncZod<SearchRoutesOptions> = async (app, options) => {
  const { auth, engine, search } = options;
  app.addHook('onRequest', requireToken(auth));

  app.get('/api/results', {
    schema: {
      tags: ['jobs'],
      summary:
        "Results of every job, newest first, filtered by deviceId, store, status, jobId, scriptId, from, to (the job's createdAt) and q (words in the report or error); ?limit= (default 50) and ?before=<next>. With Accept: text/csv or ?format=csv, every matching row as CSV",
      security,
      querystring: resultQuerySchema,
      response: {
        ...inputErrors,
        200: {
          description: 'A page of results, or with text/csv every matching result',
          content: {
            'application/json': { schema: resultListSchema },
            'text/csv': { schema: z.string() },
          },
        },
      },
    },
    handler: async (request, reply) => {
      const { limit, before, format, ...asked } = request.query;
      // A store-scoped operator reads its stores' results only.
      const scope = accessOf(request).scope;
      const query = scope?.kind === 'store' ? { ...asked, stores: scope.values } : asked;
      const cursor = before !== undefined ? parseCursor(before) : undefined;
      if (before !== undefined && cursor === undefined) {
        throw new ApiError(
          'INVALID_REQUEST',
          "query parameter 'before' must be the 'next' of a previous page",
        );
      }
      if (!wantsCsv(format, request.headers.accept)) {
        return engine.readHistory(() => search.page(query, limit ?? DEFAULT_PAGE, cursor));
      }
      const csv = Readable.from(exportCsv(engine, search, query, limit, cursor), { objectMode: false });
      csv.on('error', (error) => request.log.error({ err: error }, 'results export failed'));
      return reply
        .type('text/csv; charset=utf-8; header=present')
        .header('content-disposition', 'attachment; filename="results.csv"')
        .send(csv);
    },
  });
};
