/**
 * Runs the store controller service (`regbridge controller`, docs/controller.md): the SQLite
 * history, an optional embedded store broker, the store controller connected to the broker,
 * the job engine (resuming what a previous process left open) and the HTTP API, which this
 * runner makes listen. stop() undoes it in reverse order; jobs in flight stay open in the
 * history and resume at the next start.
 */
import { randomBytes } from 'node:crypto';
import type { ServerOptions } from 'node:https';
import { fileURLToPath } from 'node:url';
import type { FastifyInstance } from 'fastify';
import { Registry } from 'prom-client';
import { type BrokerUser, StoreBroker } from '../broker/store-broker.ts';
import { AuditLog } from '../controller/audit-log.ts';
import { type HistoryDb, openHistory } from '../controller/history-db.ts';
import { HistoryRetention } from '../controller/history-retention.ts';
import { JobEngine } from '../controller/job-engine.ts';
import { JobHistory } from '../controller/job-history.ts';
import { ResultSearch } from '../controller/result-search.ts';
import { type PacingClock, realClock } from '../controller/rollout.ts';
import { buildControllerApp } from '../controller/service/service-app.ts';
import { StoreController } from '../controller/store-controller.ts';
import { WalCheckpointer } from '../controller/wal-checkpointer.ts';
import { announceToWebhooks } from '../controller/webhook-events.ts';
import { type WebhookOptions, Webhooks } from '../controller/webhooks.ts';
import type { Logger } from '../src/logger.ts';
import { readPem } from '../src/tls.ts';

/** The dashboard's static files (served at `/`). */
export const DASHBOARD_DIR = fileURLToPath(new URL('../controller/dashboard/', import.meta.url));

export interface ControllerServiceSettings {
  port: number;
  host: string;
  /** The store broker; or brokerPort to embed one. */
  mqttUrl?: string | undefined;
  mqttUser?: { name: string; password: string } | undefined;
  /** PEM CA file trusted for an mqtts:// or wss:// --mqtt-url (`--mqtt-ca`). */
  mqttCa?: string | undefined;
  /** The cap of the controller's reconnect backoff (`--mqtt-reconnect-max`; 0: every 1 s). */
  mqttReconnectMax?: number | undefined;
  brokerPort?: number | undefined;
  brokerHost: string;
  /** Users of the embedded broker besides the API users (who are controllers on it). */
  brokerUsers: readonly BrokerUser[];
  ns: string;
  users: readonly { name: string; password: string }[];
  db: string;
  /** Jobs that ended more than this many days ago are deleted daily (`--history-days`). */
  historyDays?: number | undefined;
  tokenTtl: number;
  https?: ServerOptions | undefined;
  settleMs?: number;
}

export interface RunningControllerService {
  readonly app: FastifyInstance;
  readonly controller: StoreController;
  readonly engine: JobEngine;
  readonly broker: StoreBroker | undefined;
  readonly httpPort: number;
  readonly brokerPort: number | undefined;
  stop(): Promise<void>;
}

function loopback(host: string): string {
  return host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host;
}

export async function startControllerService(
  settings: ControllerServiceSettings,
  deps: {
    logger: Logger;
    clock?: PacingClock;
    dashboardDir?: string;
    /** Webhook time-out and backoff (tests shorten them). */
    webhookOptions?: Partial<
      Pick<WebhookOptions, 'timeoutMs' | 'firstBackoffMs' | 'maxBackoffMs' | 'retryForMs'>
    >;
    /** The HTTP port was defaulted, not asked for: when it is taken, listen on a free one (demo). */
    freePortIfTaken?: boolean;
  },
): Promise<RunningControllerService> {
  const { logger } = deps;
  const cleanup: Array<() => Promise<void> | void> = [];
  const stop = async (): Promise<void> => {
    for (const step of cleanup.splice(0).reverse()) {
      try {
        await step();
      } catch (error) {
        logger.error({ err: error }, 'error while stopping');
      }
    }
  };
  try {
    const db: HistoryDb = openHistory(settings.db);
    cleanup.push(() => {
      db.close();
    });
    if (settings.db !== ':memory:') {
      // WAL checkpoints (and their fsyncs) off the event loop (controller/wal-checkpointer.ts).
      const checkpointer = new WalCheckpointer(db, settings.db, logger);
      checkpointer.start();
      cleanup.push(() => checkpointer.stop());
    }
    const history = new JobHistory(db);
    const audit = new AuditLog(db);

    let broker: StoreBroker | undefined;
    let url = settings.mqttUrl;
    let credentials = settings.mqttUser;
    if (settings.brokerPort !== undefined) {
      // The service's own controller connects over loopback with a credential nobody sees.
      const own = {
        name: `controller-${randomBytes(4).toString('hex')}`,
        password: randomBytes(24).toString('base64url'),
      };
      broker = new StoreBroker({
        port: settings.brokerPort,
        host: settings.brokerHost,
        ns: settings.ns,
        users: [
          ...settings.brokerUsers,
          ...settings.users.map((u) => ({ ...u, role: 'controller' as const })),
          { ...own, role: 'controller' },
        ],
        logger: logger.child({ component: 'broker' }),
        portFlag: '--broker-port',
      });
      const started = broker;
      cleanup.push(() => started.stop());
      await broker.start();
      url = `mqtt://${loopback(settings.brokerHost)}:${broker.port}`;
      credentials = own;
    }
    if (url === undefined) throw new Error('no broker: give --mqtt-url or --broker-port');

    const controller = new StoreController({
      url,
      ...(credentials && { username: credentials.name, password: credentials.password }),
      ...(settings.mqttCa !== undefined && url === settings.mqttUrl && { ca: readPem(settings.mqttCa) }),
      ns: settings.ns,
      logger,
      ...(settings.settleMs !== undefined && { settleMs: settings.settleMs }),
      ...(settings.mqttReconnectMax !== undefined && { reconnectMaxMs: settings.mqttReconnectMax }),
    });
    await controller.start();
    cleanup.push(() => controller.stop());

    const engine = new JobEngine({
      link: controller,
      history,
      audit,
      logger: logger.child({ component: 'jobs' }),
      ...(deps.clock && { clock: deps.clock }),
    });
    engine.start();
    const webhooks = new Webhooks({
      db,
      clock: deps.clock ?? realClock,
      logger: logger.child({ component: 'webhooks' }),
      ...deps.webhookOptions,
    });
    webhooks.start();
    cleanup.push(() => webhooks.stop());
    cleanup.push(
      announceToWebhooks({ engine, audit, directory: controller }, (event, data) =>
        webhooks.emit(event, data),
      ),
    );
    if (settings.historyDays !== undefined) {
      const retention = new HistoryRetention({
        db,
        audit,
        days: settings.historyDays,
        clock: deps.clock ?? realClock,
        logger: logger.child({ component: 'history' }),
      });
      retention.start();
      cleanup.push(() => retention.stop());
    }
    // Before the controller stops: results in flight stay open (resumable), not NO_ANSWER.
    cleanup.push(() => engine.stop());

    const app = await buildControllerApp({
      engine,
      directory: controller,
      audit,
      users: settings.users,
      tokenTtl: settings.tokenTtl,
      logger,
      registry: new Registry(),
      dashboardDir: deps.dashboardDir ?? DASHBOARD_DIR,
      jobCount: () => history.count(),
      search: new ResultSearch(db),
      webhooks,
      ...(settings.https && { https: settings.https }),
    });
    cleanup.push(() => app.close());
    try {
      await app.listen({ port: settings.port, host: settings.host });
    } catch (error) {
      if (!deps.freePortIfTaken || (error as NodeJS.ErrnoException).code !== 'EADDRINUSE') throw error;
      logger.warn({ port: settings.port }, 'HTTP port taken; listening on a free port');
      await app.listen({ port: 0, host: settings.host });
    }
    const address = app.server.address();
    return {
      app,
      controller,
      engine,
      broker,
      httpPort: typeof address === 'object' && address ? address.port : settings.port,
      brokerPort: broker?.port,
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}
