/**
 * Searching the results of every job (docs/controller.md, "Search and export"): filters on the
 * register, status, job, time and the text of reports and errors, newest first, paged by a
 * cursor. The text goes through the contentless FTS5 table `results_text`, whose rowid is
 * resultRowid() and so sorts as (job, position) do: a `q` search walks the text index newest
 * first and stops at the page's end (docs/decisions/history-search.md).
 */

import type Database from 'better-sqlite3';
import { type HistoryDb, prepare } from './history-db.ts';
import type { ResultStatus } from './job-types.ts';
import { splitKey } from './store-keys.ts';

/** Positions stay below this (MAX_TARGET_DEVICES is 10,000); the FTS rowid packs both. */
const POSITION_SPAN = 16384;

export function resultRowid(jobSeq: number, position: number): number {
  return jobSeq * POSITION_SPAN + position;
}

export interface ResultQuery {
  deviceId?: string;
  /** Results of one store (several stores; a single store's results have none, so match none). */
  store?: string;
  /** Results of these stores only (a store-scoped operator's). */
  stores?: readonly string[];
  status?: ResultStatus;
  jobId?: string;
  /** Library scripts come with the script library; until then no job has one. */
  scriptId?: string;
  /** The job's createdAt, from inclusive, to exclusive (ISO-8601 UTC, as stored). */
  from?: string;
  to?: string;
  /** Words that must all appear in the report or the error. */
  q?: string;
}

export interface FoundResult {
  jobId: string;
  jobName?: string;
  deviceId: string;
  status: ResultStatus;
  taskId?: number;
  sentAt?: string;
  endedAt?: string;
  report?: string;
  error?: string;
  attempts: number;
}

interface Row {
  seq: number;
  position: number;
  job_id: string;
  name: string | null;
  store: string;
  device_id: string;
  status: string;
  task_id: number | null;
  sent_at: string | null;
  ended_at: string | null;
  report: string | null;
  error: string | null;
  attempts: number;
}

export interface ResultPage {
  results: FoundResult[];
  /** The cursor of the next page (`before`); absent on the last. */
  next?: string;
}

/**
 * `q` as an FTS5 query: each word a quoted phrase, all required, so no input is FTS syntax
 * (a stray quote or `NEAR(` is text, never a 500). undefined: no word at all.
 */
export function ftsQuery(q: string): string | undefined {
  const words = q.split(/\s+/).filter((word) => word !== '');
  if (words.length === 0) return undefined;
  return words.map((word) => `"${word.replaceAll('"', '""')}"`).join(' ');
}

/** A `before` cursor: the packed rowid of the last result of the previous page. */
export function parseCursor(cursor: string): { seq: number; position: number } | undefined {
  if (!/^[1-9][0-9]{0,15}$/.test(cursor)) return undefined;
  const rowid = Number(cursor);
  if (!Number.isSafeInteger(rowid)) return undefined;
  return { seq: Math.floor(rowid / POSITION_SPAN), position: rowid % POSITION_SPAN };
}

function toFound(row: Row): FoundResult {
  return {
    jobId: row.job_id,
    ...(row.name !== null && { jobName: row.name }),
    ...(row.store !== '' && { store: row.store }),
    deviceId: row.device_id,
    status: row.status as ResultStatus,
    ...(row.task_id !== null && { taskId: row.task_id }),
    ...(row.sent_at !== null && { sentAt: row.sent_at }),
    ...(row.ended_at !== null && { endedAt: row.ended_at }),
    ...(row.report !== null && { report: row.report }),
    ...(row.error !== null && { error: row.error }),
    attempts: row.attempts,
  };
}

const COLUMNS = `r.job_seq AS seq, r.position, j.job_id, j.name, r.store, r.device_id, r.status, r.task_id,
  r.sent_at, r.ended_at, r.report, r.error, r.attempts`;

export class ResultSearch {
  private readonly db: HistoryDb;
  /** One prepared statement per shape of query (a few dozen at most: see history-db.ts `retained`). */
  private readonly statements = new Map<string, Database.Statement>();

  constructor(db: HistoryDb) {
    this.db = db;
  }

  /** One page, newest first (the newest job first, its registers in reverse target order). */
  page(query: ResultQuery, limit: number, before?: { seq: number; position: number }): ResultPage {
    const rows = this.rows(query, limit + 1, before);
    const results = rows.slice(0, limit).map(toFound);
    const last = rows.length > limit ? rows[limit - 1] : undefined;
    return { results, ...(last && { next: String(resultRowid(last.seq, last.position)) }) };
  }

  /** Every matching result, a page at a time, for an export (the connection is free between pages). */
  *pages(query: ResultQuery, pageSize: number): Generator<FoundResult[]> {
    let before: { seq: number; position: number } | undefined;
    for (;;) {
      const rows = this.rows(query, pageSize, before);
      if (rows.length > 0) yield rows.map(toFound);
      if (rows.length < pageSize) return;
      const last = rows[rows.length - 1]!;
      before = { seq: last.seq, position: last.position };
    }
  }

  private rows(query: ResultQuery, limit: number, before?: { seq: number; position: number }): Row[] {
    const built = buildQuery(query, limit, before);
    return built ? (this.statement(built.sql).all(...built.params) as Row[]) : [];
  }

  /** The plan SQLite picks for a query (the bench prints it beside the timings). */
  plan(query: ResultQuery): string[] {
    const built = buildQuery(query, 50, { seq: 1 << 30, position: 0 });
    if (!built) return ['no query: matches nothing'];
    const explain = this.statement(`EXPLAIN QUERY PLAN ${built.sql}`);
    return (explain.all(...built.params) as { detail: string }[]).map((row) => row.detail);
  }

  private statement(sql: string): Database.Statement {
    let statement = this.statements.get(sql);
    if (!statement) {
      statement = prepare(this.db, sql);
      this.statements.set(sql, statement);
    }
    return statement;
  }
}

/** The SQL and parameters of a search; undefined when it can match nothing. */
function buildQuery(
  query: ResultQuery,
  limit: number,
  before?: { seq: number; position: number },
): { sql: string; params: unknown[] } | undefined {
  const conditions: string[] = [];
  const params: unknown[] = [];
  const match = query.q !== undefined ? ftsQuery(query.q) : undefined;
  if (query.q !== undefined && match === undefined) return undefined;
  if (query.store !== undefined) {
    if (query.store === '') return undefined;
    conditions.push('r.store = ?');
    params.push(query.store);
  }
  if (query.scriptId !== undefined) {
    conditions.push("r.job_seq IN (SELECT seq FROM jobs WHERE json_extract(script_ref, '$.scriptId') = ?)");
    params.push(query.scriptId);
  }
  if (query.stores !== undefined) {
    if (query.stores.length === 0) return undefined;
    conditions.push(`r.store IN (${query.stores.map(() => '?').join(', ')})`);
    params.push(...query.stores);
  }
  if (query.deviceId !== undefined) {
    // `store/id` (several stores) names one register; a plain id that id in every store.
    const { store, deviceId } = splitKey(query.deviceId);
    conditions.push('r.device_id = ?');
    params.push(deviceId);
    if (store !== undefined) {
      conditions.push('r.store = ?');
      params.push(store);
    }
  }
  if (query.status !== undefined) {
    conditions.push('r.status = ?');
    params.push(query.status);
  }
  if (query.jobId !== undefined) {
    conditions.push('r.job_seq = (SELECT seq FROM jobs WHERE job_id = ?)');
    params.push(query.jobId);
  }
  if (query.from !== undefined || query.to !== undefined) {
    // The jobs of the period first (jobs_by_created_at), then their results by primary key:
    // filtering the joined rows instead walked every newer result (bench "history").
    const period: string[] = [];
    if (query.from !== undefined) {
      period.push('created_at >= ?');
      params.push(query.from);
    }
    if (query.to !== undefined) {
      period.push('created_at < ?');
      params.push(query.to);
    }
    // The period's jobs as a range of seq (so pages walk the primary key, no sort) and, as
    // creation times need not follow seq (a clock set back), each job checked (`+`: no index).
    const jobs = `FROM jobs WHERE ${period.join(' AND ')}`;
    conditions.push(
      `r.job_seq >= (SELECT min(seq) ${jobs})`,
      `r.job_seq <= (SELECT max(seq) ${jobs})`,
      `+r.job_seq IN (SELECT seq ${jobs})`,
    );
    params.push(...params.slice(-period.length), ...params.slice(-period.length));
  }
  let sql: string;
  if (match !== undefined) {
    // The text index drives: its rowids are in (job, position) order, so LIMIT stops the walk.
    if (before) {
      conditions.push('t.rowid < ?');
      params.push(resultRowid(before.seq, before.position));
    }
    sql = `SELECT ${COLUMNS} FROM results_text t
        CROSS JOIN results r ON r.job_seq = t.rowid / ${POSITION_SPAN} AND r.position = t.rowid % ${POSITION_SPAN}
        JOIN jobs j ON j.seq = r.job_seq
        WHERE results_text MATCH ?${conditions.map((c) => ` AND ${c}`).join('')}
        ORDER BY t.rowid DESC LIMIT ?`;
    params.unshift(match);
  } else {
    if (before) {
      conditions.push('(r.job_seq, r.position) < (?, ?)');
      params.push(before.seq, before.position);
    }
    sql = `SELECT ${COLUMNS} FROM results r JOIN jobs j ON j.seq = r.job_seq
        ${conditions.length > 0 ? `WHERE ${conditions.join(' AND ')}` : ''}
        ORDER BY r.job_seq DESC, r.position DESC LIMIT ?`;
  }
  params.push(limit);
  return { sql, params };
}
