/**
 * Searching the controller's history over HTTP: every filter of GET /api/jobs and
 * GET /api/results, cursor pages, refused parameters, and the CSV export parsed back by a real
 * CSV parser (csv-parse). The history is a real file written through JobHistory, then served by
 * the real service on the embedded broker.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse } from 'csv-parse/sync';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningControllerService } from '../../cli/controller-service.ts';
import { openHistory } from '../../controller/history-db.ts';
import { JobHistory, type StoredJob } from '../../controller/job-history.ts';
import type { JobStatus, StoredResult } from '../../controller/job-types.ts';
import { brokersByName, type RunningBroker } from '../support/brokers.ts';
import { api, login, startService } from '../support/controller-service.ts';

const ns = `stores/search${randomUUID().slice(0, 6)}`;
const dir = mkdtempSync(join(tmpdir(), 'regbridge-search-'));
const file = join(dir, 'history.db');
let broker: RunningBroker;
let service: RunningControllerService;
let token: string;

const TRICKY_REPORT = 'Z-Bericht Nr. 41, "Kasse 1"\r\nUmsatz: 1.234,56 €; Kassierin: Zoë Ørsted';

function ended(
  jobId: string,
  fields: { name?: string; createdBy: string; createdAt: string; status: JobStatus },
  results: StoredResult[],
): { job: StoredJob; results: StoredResult[]; status: JobStatus } {
  return {
    status: fields.status,
    job: {
      jobId,
      ...(fields.name !== undefined && { name: fields.name }),
      createdBy: fields.createdBy,
      createdAt: fields.createdAt,
      status: 'IN_PROGRESS',
      script: 'PRINT x',
      target: { devices: results.map((r) => r.deviceId) },
      deadlineAt: fields.createdAt,
      results: results.map((r) => ({ deviceId: r.deviceId, status: 'PENDING' as const })),
    },
    results,
  };
}

const sent = { sentAt: '2026-11-22T22:00:01.000Z', endedAt: '2026-11-22T22:00:05.000Z' };
const FIXTURE = [
  ended(
    'job-close-21',
    { name: 'Daily close', createdBy: 'admin', createdAt: '2026-11-21T22:00:00.000Z', status: 'ABORTED' },
    [
      { deviceId: 'reg1', status: 'FAILURE', taskId: 7, error: 'printer paper out', ...sent },
      { deviceId: 'reg3', status: 'OFFLINE' },
    ],
  ),
  ended(
    'job-z-22',
    {
      name: 'Z report 22 Nov',
      createdBy: 'admin',
      createdAt: '2026-11-22T22:00:00.000Z',
      status: 'COMPLETED',
    },
    [
      { deviceId: 'reg1', status: 'FINISHED', taskId: 8, report: TRICKY_REPORT, ...sent },
      { deviceId: 'reg2', status: 'FAILURE', taskId: 3, error: 'fiscal memory full', ...sent },
    ],
  ),
  ended(
    'job-price-23',
    {
      name: 'Price update 100%_off',
      createdBy: 'alice',
      createdAt: '2026-11-23T08:00:00.000Z',
      status: 'COMPLETED',
    },
    [
      { deviceId: 'reg1', status: 'FINISHED', taskId: 9, report: 'prices loaded: 412', ...sent },
      { deviceId: 'reg2', status: 'FINISHED', taskId: 4, report: 'prices loaded: 412', ...sent },
    ],
  ),
  ended('job-cancel-23', { createdBy: 'alice', createdAt: '2026-11-23T09:00:00.000Z', status: 'CANCELLED' }, [
    { deviceId: 'reg2', status: 'CANCELLED' },
  ]),
];

beforeAll(async () => {
  const db = openHistory(file);
  const history = new JobHistory(db);
  for (const { job, results, status } of FIXTURE) {
    history.insert(job);
    for (const result of results) history.saveResult(job.jobId, result);
    history.saveStatus(job.jobId, status, job.createdAt);
  }
  db.close();
  broker = await brokersByName.embedded.start(ns);
  service = await startService(broker, ns, { db: file });
  token = await login(service.app);
});

afterAll(async () => {
  await service?.stop();
  await broker?.stop();
  rmSync(dir, { recursive: true, force: true });
});

async function jobIds(query: string): Promise<string[]> {
  const answer = await api(service.app, token, 'GET', `/api/jobs?${query}`);
  expect(answer.statusCode, JSON.stringify(answer.body)).toBe(200);
  return answer.body.jobs.map((job: { jobId: string }) => job.jobId);
}

async function results(query: string): Promise<string[]> {
  const answer = await api(service.app, token, 'GET', `/api/results?${query}`);
  expect(answer.statusCode, JSON.stringify(answer.body)).toBe(200);
  return answer.body.results.map((r: { jobId: string; deviceId: string }) => `${r.jobId}/${r.deviceId}`);
}

describe('GET /api/jobs filters', () => {
  it('filters on status, outcome, name, createdBy, from and to, newest first', async () => {
    expect(await jobIds('')).toEqual(['job-cancel-23', 'job-price-23', 'job-z-22', 'job-close-21']);
    expect(await jobIds('status=COMPLETED')).toEqual(['job-price-23', 'job-z-22']);
    expect(await jobIds('outcome=SUCCEEDED')).toEqual(['job-price-23']);
    expect(await jobIds('outcome=PARTIAL')).toEqual(['job-z-22']);
    expect(await jobIds('outcome=FAILED')).toEqual(['job-cancel-23', 'job-close-21']);
    expect(await jobIds('name=z%20REPORT')).toEqual(['job-z-22']);
    expect(await jobIds('name=100%25_')).toEqual(['job-price-23']);
    expect(await jobIds('name=0%25x')).toEqual([]);
    expect(await jobIds('createdBy=alice')).toEqual(['job-cancel-23', 'job-price-23']);
    expect(await jobIds('from=2026-11-22&to=2026-11-23')).toEqual(['job-z-22']);
    expect(await jobIds('from=2026-11-23T09:00:00%2B01:00')).toEqual(['job-cancel-23', 'job-price-23']);
    expect(await jobIds('status=COMPLETED&createdBy=admin')).toEqual(['job-z-22']);
    expect(await jobIds('scheduleId=s1')).toEqual([]);
    expect(await jobIds('scriptId=s1')).toEqual([]);
    expect(await jobIds('status=COMPLETED&limit=1&before=job-price-23')).toEqual(['job-z-22']);
  });

  it('refuses unknown parameters and bad values with 400 INVALID_REQUEST', async () => {
    const unknown = await api(service.app, token, 'GET', '/api/jobs?stauts=COMPLETED');
    expect(unknown.statusCode).toBe(400);
    expect(unknown.body).toMatchObject({ statusCode: 400, code: 'INVALID_REQUEST' });
    expect(unknown.body.message).toContain('stauts');
    for (const query of ['status=DONE', 'outcome=OK', 'from=yesterday', 'from=2026-02-30', 'name=']) {
      const bad = await api(service.app, token, 'GET', `/api/jobs?${query}`);
      expect(bad.statusCode, query).toBe(400);
      expect(bad.body.code, query).toBe('INVALID_REQUEST');
    }
  });
});

describe('GET /api/results', () => {
  it('answers the contract fields, newest first', async () => {
    const answer = await api(service.app, token, 'GET', '/api/results?jobId=job-z-22');
    expect(answer.body).toEqual({
      results: [
        {
          jobId: 'job-z-22',
          jobName: 'Z report 22 Nov',
          deviceId: 'reg2',
          status: 'FAILURE',
          taskId: 3,
          error: 'fiscal memory full',
          attempts: 1,
          ...sent,
        },
        {
          jobId: 'job-z-22',
          jobName: 'Z report 22 Nov',
          deviceId: 'reg1',
          status: 'FINISHED',
          taskId: 8,
          report: TRICKY_REPORT,
          attempts: 1,
          ...sent,
        },
      ],
    });
  });

  it('filters on deviceId, status, jobId, from, to, q, store and scriptId', async () => {
    expect(await results('deviceId=reg1')).toEqual([
      'job-price-23/reg1',
      'job-z-22/reg1',
      'job-close-21/reg1',
    ]);
    expect(await results('status=FAILURE')).toEqual(['job-z-22/reg2', 'job-close-21/reg1']);
    expect(await results('status=FAILURE&deviceId=reg1')).toEqual(['job-close-21/reg1']);
    expect(await results('from=2026-11-22&to=2026-11-23')).toEqual(['job-z-22/reg2', 'job-z-22/reg1']);
    expect(await results('q=paper')).toEqual(['job-close-21/reg1']);
    expect(await results('q=ZOË%20kasse')).toEqual(['job-z-22/reg1']);
    expect(await results('q=prices&deviceId=reg2')).toEqual(['job-price-23/reg2']);
    expect(await results('q=%22NEAR(')).toEqual([]);
    expect(await results('q=memory&from=2026-11-23')).toEqual([]);
    expect(await results('store=s1')).toEqual([]);
    expect(await results('scriptId=s1')).toEqual([]);
  });

  it('pages with limit and the next cursor, also through q, and refuses a bad cursor', async () => {
    for (const filter of ['', 'q=prices%20OR', 'q=412']) {
      const all = await results(filter);
      const paged: string[] = [];
      let before = '';
      for (let i = 0; i < 10; i++) {
        const page = await api(service.app, token, 'GET', `/api/results?limit=1&${filter}${before}`);
        paged.push(
          ...page.body.results.map((r: { jobId: string; deviceId: string }) => `${r.jobId}/${r.deviceId}`),
        );
        if (page.body.next === undefined) break;
        before = `&before=${page.body.next}`;
      }
      expect(paged, filter).toEqual(all);
    }
    expect(await results('q=412')).toHaveLength(2);
    const bad = await api(service.app, token, 'GET', '/api/results?before=abc');
    expect(bad.statusCode).toBe(400);
    expect(bad.body.code).toBe('INVALID_REQUEST');
    const unknown = await api(service.app, token, 'GET', '/api/results?device=reg1');
    expect(unknown.statusCode).toBe(400);
    expect(unknown.body.code).toBe('INVALID_REQUEST');
  });
});

describe('CSV export', () => {
  it('streams RFC 4180 CSV with a BOM and a header row that csv-parse reads back exactly', async () => {
    for (const request of [
      { url: '/api/results?format=csv', headers: {} },
      { url: '/api/results', headers: { accept: 'text/csv' } },
    ]) {
      const response = await service.app.inject({
        method: 'GET',
        url: request.url,
        headers: { authorization: `Bearer ${token}`, ...request.headers },
      });
      expect(response.statusCode).toBe(200);
      expect(response.headers['content-type']).toBe('text/csv; charset=utf-8; header=present');
      expect(response.headers['content-disposition']).toBe('attachment; filename="results.csv"');
      expect(response.rawPayload.subarray(0, 3)).toEqual(Buffer.from([0xef, 0xbb, 0xbf]));
      const text = response.rawPayload.toString('utf8');
      expect(text.split('\r\n')[0]).toBe(
        '\uFEFFjobId,jobName,store,deviceId,status,taskId,sentAt,endedAt,report,error,attempts',
      );
      const rows = parse(response.rawPayload, { bom: true, columns: true }) as Record<string, string>[];
      const json = await api(service.app, token, 'GET', '/api/results?limit=1000');
      expect(rows).toHaveLength(json.body.results.length);
      expect(rows).toEqual(
        json.body.results.map((r: Record<string, unknown>) =>
          Object.fromEntries(
            [
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
            ].map((key) => [key, r[key] === undefined ? '' : String(r[key])]),
          ),
        ),
      );
      expect(rows.find((row) => row.deviceId === 'reg1' && row.jobId === 'job-z-22')?.report).toBe(
        TRICKY_REPORT,
      );
    }
  });

  it('exports only the search, and refuses what JSON refuses', async () => {
    const response = await service.app.inject({
      method: 'GET',
      url: '/api/results?format=csv&status=FAILURE',
      headers: { authorization: `Bearer ${token}` },
    });
    const rows = parse(response.rawPayload, { bom: true, columns: true }) as Record<string, string>[];
    expect(rows.map((row) => `${row.jobId}/${row.deviceId}`)).toEqual(['job-z-22/reg2', 'job-close-21/reg1']);
    const none = await service.app.inject({
      method: 'GET',
      url: '/api/results?format=csv&q=nowhere',
      headers: { authorization: `Bearer ${token}` },
    });
    expect(none.body).toBe(
      '\uFEFFjobId,jobName,store,deviceId,status,taskId,sentAt,endedAt,report,error,attempts\r\n',
    );
    const capped = await service.app.inject({
      method: 'GET',
      url: '/api/results?format=csv&limit=3',
      headers: { authorization: `Bearer ${token}` },
    });
    expect(parse(capped.rawPayload, { bom: true, columns: true })).toHaveLength(3);
    const bad = await api(service.app, token, 'GET', '/api/results?format=xlsx');
    expect(bad.statusCode).toBe(400);
  });
});

describe('webhooks over HTTP', () => {
  it('creates one with its secret shown once, lists it without, shows deliveries, deletes it', async () => {
    const created = await api(service.app, token, 'POST', '/api/webhooks', {
      url: 'http://127.0.0.1:9/hook',
      events: ['job.completed', 'device.offline', 'job.completed'],
    });
    expect(created.statusCode).toBe(201);
    const { webhookId, secret, createdAt } = created.body;
    expect(secret).toMatch(/^whsec_/);
    expect(created.headers.location).toBe(`/api/webhooks/${webhookId}`);
    expect(created.body).toEqual({
      webhookId,
      url: 'http://127.0.0.1:9/hook',
      events: ['job.completed', 'device.offline'],
      createdBy: 'admin',
      createdAt,
      secret,
    });
    const listed = await api(service.app, token, 'GET', '/api/webhooks');
    expect(listed.body).toEqual({
      webhooks: [
        {
          webhookId,
          url: 'http://127.0.0.1:9/hook',
          events: ['job.completed', 'device.offline'],
          createdBy: 'admin',
          createdAt,
        },
      ],
    });
    expect(JSON.stringify(listed.body)).not.toContain(secret);
    expect((await api(service.app, token, 'GET', `/api/webhooks/${webhookId}/deliveries`)).body).toEqual({
      deliveries: [],
    });
    const deleted = await service.app.inject({
      method: 'DELETE',
      url: `/api/webhooks/${webhookId}`,
      headers: { authorization: `Bearer ${token}` },
    });
    expect(deleted.statusCode).toBe(200);
    const audited = await api(service.app, token, 'GET', '/api/audit?limit=2');
    expect(audited.body.entries.map((e: { action: string; detail: string }) => [e.action, e.detail])).toEqual(
      [
        ['webhook_deleted', `webhook ${webhookId} to http://127.0.0.1:9`],
        ['webhook_created', `webhook ${webhookId} to http://127.0.0.1:9 for job.completed, device.offline`],
      ],
    );
    const gone = await api(service.app, token, 'GET', `/api/webhooks/${webhookId}/deliveries`);
    expect(gone.statusCode).toBe(404);
    expect(gone.body).toEqual({
      statusCode: 404,
      error: 'Not Found',
      code: 'WEBHOOK_DOES_NOT_EXIST',
      message: `Webhook ${webhookId} does not exist`,
    });
  });

  it('refuses a URL that is not http(s), an unknown event, a malformed secret and unknown fields', async () => {
    for (const body of [
      { url: 'file:///etc/passwd', events: ['job.completed'] },
      { url: 'http://127.0.0.1:9/', events: ['job.exploded'] },
      { url: 'http://127.0.0.1:9/', events: [] },
      { url: 'http://127.0.0.1:9/', events: ['job.completed'], secret: 'hunter2' },
      { url: 'http://127.0.0.1:9/', events: ['job.completed'], headers: {} },
    ]) {
      const refused = await api(service.app, token, 'POST', '/api/webhooks', body);
      expect(refused.statusCode, JSON.stringify(body)).toBe(400);
      expect(refused.body.code).toBe('INVALID_REQUEST');
      expect(JSON.stringify(refused.body)).not.toContain('hunter2');
    }
    const unknown = await api(service.app, token, 'GET', '/api/webhooks?all=1');
    expect(unknown.statusCode).toBe(400);
  });
});

describe('GET /api/audit filters', () => {
  it('filters on action, user, from and to, and refuses unknown parameters', async () => {
    await api(service.app, token, 'POST', '/api/webhooks', {
      url: 'http://127.0.0.1:9/a',
      events: ['job.created'],
    });
    const created = await api(service.app, token, 'GET', '/api/audit?action=webhook_created');
    expect(created.statusCode).toBe(200);
    expect(created.body.entries.length).toBeGreaterThan(0);
    expect(created.body.entries.every((e: { action: string }) => e.action === 'webhook_created')).toBe(true);
    const logins = await api(service.app, token, 'GET', '/api/audit?action=login&user=admin&from=2020-01-01');
    expect(logins.body.entries.length).toBeGreaterThan(0);
    expect(
      logins.body.entries.every(
        (e: { action: string; user: string }) => e.action === 'login' && e.user === 'admin',
      ),
    ).toBe(true);
    expect((await api(service.app, token, 'GET', '/api/audit?user=nobody')).body).toEqual({ entries: [] });
    expect((await api(service.app, token, 'GET', '/api/audit?to=2020-01-01')).body).toEqual({ entries: [] });
    const unknown = await api(service.app, token, 'GET', '/api/audit?actoin=login');
    expect(unknown.statusCode).toBe(400);
    expect(unknown.body.code).toBe('INVALID_REQUEST');
  });
});
