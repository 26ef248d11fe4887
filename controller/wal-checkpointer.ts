/**
 * Checkpoints the history's write-ahead log from a worker thread (`wal_checkpoint(PASSIVE)` every
 * `intervalMs`), so the event loop never waits for the fsyncs of SQLite's automatic checkpoint
 * (docs/decisions/history-sqlite.md). Should the worker fail, the main connection checkpoints
 * again as by default, so the WAL never grows without bound.
 */
import { EventEmitter } from 'node:events';
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import type { Logger } from '../src/logger.ts';
import type { HistoryDb } from './history-db.ts';

/** How often the worker checkpoints. A second of a busy controller's writes is a few MB of WAL. */
export const WAL_CHECKPOINT_INTERVAL_MS = 1000;
/** SQLite's own default, restored on the main connection when the worker stops or fails. */
const SQLITE_DEFAULT_AUTOCHECKPOINT = 1000;

export interface CheckpointResult {
  /** Frames in the WAL, and how many of them are now in the database file. */
  log: number;
  checkpointed: number;
}

export interface WalCheckpointerEvents {
  checkpoint: [CheckpointResult];
  error: [Error];
}

/**
 * The worker, as CommonJS source (a worker of its own file would need a path that survives
 * bundling). Its database and statement live as long as the thread: a better-sqlite3 object
 * freed by the garbage collector aborts Node >= 24.19 (controller/history-db.ts, `retained`).
 */
const WORKER_SOURCE = `(() => {
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.driver);
let db;
let checkpoint;
try {
  db = new Database(workerData.file, { fileMustExist: true });
  db.exec('PRAGMA busy_timeout = 5000');
  checkpoint = db.prepare('PRAGMA wal_checkpoint(PASSIVE)');
} catch (error) {
  // better-sqlite3's errors lose their message on the way to the parent as an 'error' event.
  parentPort.postMessage({ type: 'error', message: error.message });
  parentPort.close();
  return;
}
let timer;
const round = () => {
  try {
    const { log, checkpointed } = checkpoint.get();
    parentPort.postMessage({ type: 'checkpoint', log, checkpointed });
  } catch (error) {
    parentPort.postMessage({ type: 'error', message: error.message });
  }
  timer = setTimeout(round, workerData.intervalMs);
};
timer = setTimeout(round, workerData.intervalMs);
parentPort.on('message', (message) => {
  if (message !== 'stop') return;
  clearTimeout(timer);
  db.close();
  parentPort.close();
});
})();
`;

export class WalCheckpointer extends EventEmitter<WalCheckpointerEvents> {
  private readonly db: HistoryDb;
  private readonly file: string;
  private readonly logger: Logger;
  private readonly intervalMs: number;
  private worker: Worker | undefined;
  private exited: Promise<void> = Promise.resolve();

  constructor(db: HistoryDb, file: string, logger: Logger, intervalMs = WAL_CHECKPOINT_INTERVAL_MS) {
    super();
    if (file === ':memory:') throw new Error('an in-memory history has no write-ahead log');
    this.db = db;
    this.file = file;
    this.logger = logger;
    this.intervalMs = intervalMs;
  }

  start(): void {
    if (this.worker) return;
    this.db.exec('PRAGMA wal_autocheckpoint = 0');
    const worker = new Worker(WORKER_SOURCE, {
      eval: true,
      workerData: {
        driver: createRequire(import.meta.url).resolve('better-sqlite3'),
        file: this.file,
        intervalMs: this.intervalMs,
      },
    });
    // A stopped controller must not wait for a checkpoint round: the timer alone never holds it.
    worker.unref();
    worker.on('message', (message: { type: string; message?: string } & CheckpointResult) => {
      if (message.type === 'checkpoint') {
        this.emit('checkpoint', { log: message.log, checkpointed: message.checkpointed });
      } else this.fail(new Error(`WAL checkpoint failed: ${message.message}`));
    });
    worker.on('error', (error) => this.fail(error));
    this.exited = new Promise((resolve) =>
      worker.once('exit', (code) => {
        if (this.worker === worker) this.fail(new Error(`the checkpoint worker exited (code ${code})`));
        resolve();
      }),
    );
    this.worker = worker;
  }

  /** Ends the worker (after its round in progress) and gives checkpoints back to the main connection. */
  async stop(): Promise<void> {
    const worker = this.worker;
    if (!worker) return;
    this.worker = undefined;
    // Awaited while unref'd, the exit alone would not hold the loop: a failed start (the only
    // thing left) would end with Node's exit 13 for an unsettled await instead of its message.
    worker.ref();
    worker.postMessage('stop');
    await this.exited;
    worker.removeAllListeners();
    this.restoreAutocheckpoint();
  }

  private fail(error: Error): void {
    this.logger.warn({ err: error.message }, 'WAL checkpoints back on the main connection');
    const worker = this.worker;
    this.worker = undefined;
    if (worker) void worker.terminate();
    this.restoreAutocheckpoint();
    if (this.listenerCount('error') > 0) this.emit('error', error);
  }

  private restoreAutocheckpoint(): void {
    if (this.db.open) this.db.exec(`PRAGMA wal_autocheckpoint = ${SQLITE_DEFAULT_AUTOCHECKPOINT}`);
  }
}
