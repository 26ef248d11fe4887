/**
 * The controller-service scenario's service process (run with --expose-gc): `regbridge
 * controller` as the CLI starts it (startControllerService), connected to the bench broker, with
 * a history file pre-filled with `historyJobs` ended jobs of 5 results each. Reports
 * `{type: 'ready', httpPort, rss, heapUsed}` once started and settled, and `{type: 'memory', rss,
 * heapUsed}` on a "measure" message (after gc() twice). argv: brokerPort dbFile historyJobs.
 */
import { randomUUID } from 'node:crypto';
import { type RunningControllerService, startControllerService } from '../../cli/controller-service.ts';
import { openHistory } from '../../controller/history-db.ts';
import { JobHistory, type StoredJob } from '../../controller/job-history.ts';
import { silent } from '../../test/support/loggers.ts';
import { CONTROLLER_PASSWORD, CONTROLLER_USER, NS } from '../lib/fleet.ts';
import { sendToParent, workerMain } from '../lib/worker-side.ts';

const [brokerPort, dbFile, historyJobs] = [
  Number(process.argv[2]),
  process.argv[3]!,
  Number(process.argv[4]),
];
export const BENCH_ADMIN = { name: 'admin', password: 'bench-admin-pw' };
let service: RunningControllerService | undefined;

function memory(): { rss: number; heapUsed: number } {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (!gc) throw new Error('run with --expose-gc');
  gc();
  gc();
  const { rss, heapUsed } = process.memoryUsage();
  return { rss, heapUsed };
}

/** Ended jobs as a store accumulates them: X reports to 5 registers, all FINISHED. */
function prefill(count: number): void {
  const db = openHistory(dbFile);
  const history = new JobHistory(db);
  const at = new Date(Date.now() - 86_400_000).toISOString();
  db.transaction(() => {
    for (let i = 0; i < count; i += 1) {
      const job: StoredJob = {
        jobId: randomUUID(),
        name: `history ${i}`,
        createdBy: 'admin',
        createdAt: at,
        status: 'IN_PROGRESS',
        script: 'X REPORT',
        target: { group: 'all' },
        deadlineAt: at,
        results: ['r0', 'r1', 'r2', 'r3', 'r4'].map((deviceId) => ({ deviceId, status: 'PENDING' as const })),
      };
      history.insert(job);
      for (const [n, { deviceId }] of job.results.entries()) {
        history.saveResult(job.jobId, {
          deviceId,
          status: 'FINISHED',
          taskId: i * 10 + n + 1,
          report: 'X REPORT\nTOTAL 0.00',
          sentAt: at,
          endedAt: at,
        });
      }
      history.saveStatus(job.jobId, 'COMPLETED', at);
    }
  })();
  db.close();
}

workerMain(
  async () => {
    if (historyJobs > 0) prefill(historyJobs);
    service = await startControllerService(
      {
        port: 0,
        host: '127.0.0.1',
        mqttUrl: `mqtt://127.0.0.1:${brokerPort}`,
        mqttUser: { name: CONTROLLER_USER, password: CONTROLLER_PASSWORD },
        brokerHost: '127.0.0.1',
        brokerUsers: [],
        ns: NS,
        users: [BENCH_ADMIN],
        db: dbFile,
        tokenTtl: 3600,
      },
      { logger: silent },
    );
    sendToParent({
      type: 'ready',
      httpPort: service.httpPort,
      jobs: service.engine.list(1)?.length ?? 0,
      ...memory(),
    });
  },
  {
    onMessage: (message) => {
      if (message.type === 'measure') sendToParent({ type: 'memory', ...memory() });
    },
    onStop: async () => {
      await service?.stop();
    },
  },
);
