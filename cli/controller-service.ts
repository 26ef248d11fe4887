/**
 * Runs the store controller service (`regbridge controller`, docs/controller.md): the SQLite
 * history, an optional embedded store broker, the store controller connected to the broker,
 * the job engine (resuming what a previous process left open) and the HTTP API, which this
 * runner makes listen. stop() undoes it in reverse order; jobs in flight stay open in the
 * history and resume at the next start.
 */
import { randomBytes } from 'node:crypto';
import type { ServerOptions } from 'node:https';
import { createServer, type Server } from 'node:net';
import { fileURLToPath } from 'node:url';
import type { FastifyInstance } from 'fastify';
import { Registry } from 'prom-client';
import { type BrokerUser, StoreBroker } from '../broker/store-broker.ts';
import { AuditLog } from '../controller/audit-log.ts';
import { type HistoryDb, openHistory } from '../controller/history-db.ts';
import { JobEngine } from '../controller/job-engine.ts';
import { JobHistory } from '../controller/job-history.ts';
import type { PacingClock } from '../controller/rollout.ts';
import { buildControllerApp } from '../controller/service/service-app.ts';
import { StoreController } from '../controller/store-controller.ts';
import { WalCheckpointer } from '../controller/wal-checkpointer.ts';
import type { Logger } from '../src/logger.ts';
import { readPem } from '../src/tls.ts';
import { StartError } from './options.ts';

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
  /** Defaulted ports that were taken and replaced by free ones, for the start-up banner. */
  readonly portFallbacks: readonly string[];
  stop(): Promise<void>;
}

function loopback(host: string): string {
  return host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host;
}

function bind(port: number, host: string): Promise<Server> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen({ port, host, exclusive: true }, () => resolve(server));
  });
}

/**
 * Holds the HTTP port from the first step of the start, so a taken port is reported before the
 * broker and MQTT are touched (the order a user fixes things in); released just before the API
 * listens on it (docs/decisions/controller-start-order.md).
 */
async function reserveHttpPort(
  port: number,
  host: string,
  freeIfTaken: boolean,
  notes: string[],
): Promise<{ port: number; release: () => Promise<void> }> {
  let server: Server;
  try {
    server = await bind(port, host);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'EADDRINUSE' && freeIfTaken) {
      server = await bind(0, host);
      notes.push(`HTTP port ${port} was taken (pass --port to choose one)`);
    } else if (code === 'EADDRINUSE') {
      throw new StartError(
        `HTTP port ${port} on ${host} is already in use: choose another with --port (0 picks a free one)`,
      );
    } else {
      throw new StartError(
        `cannot listen on ${host}:${port} (${code ?? (error as Error).message}): check --port and --host`,
      );
    }
  }
  const address = server.address();
  const reserved = typeof address === 'object' && address ? address.port : port;
  let released: Promise<void> | undefined;
  const release = (): Promise<void> => {
    released ??= new Promise<void>((resolve) => server.close(() => resolve()));
    return released;
  };
  return { port: reserved, release };
}

function openHistoryFile(file: string): HistoryDb {
  try {
    return openHistory(file);
  } catch (error) {
    const reason = (error as Error).message.split('\n')[0];
    throw new StartError(
      `cannot open the history file ${file} (${reason}): choose another with --db, or move the damaged file away`,
    );
  }
}

/** The first connection to an external broker failed: say which flag holds what to fix. */
function brokerStartError(error: unknown, settings: ControllerServiceSettings): StartError {
  const message = (error as Error).message.split('\n')[0];
  const flag = settings.mqttUser ? '--mqtt-url and --mqtt-user' : '--mqtt-url';
  return new StartError(`${message}: check ${flag}`);
}

export async function startControllerService(
  settings: ControllerServiceSettings,
  deps: {
    logger: Logger;
    clock?: PacingClock;
    dashboardDir?: string;
    /** The HTTP port was defaulted, not asked for: when it is taken, listen on a free one (demo). */
    freePortIfTaken?: boolean;
  },
): Promise<RunningControllerService> {
  const { logger } = deps;
  const cleanup: Array<() => Promise<void> | void> = [];
  const portFallbacks: string[] = [];
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
    const httpPort = await reserveHttpPort(
      settings.port,
      settings.host,
      deps.freePortIfTaken === true,
      portFallbacks,
    );
    cleanup.push(() => httpPort.release());
    const db: HistoryDb = openHistoryFile(settings.db);
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
    try {
      await controller.start();
    } catch (error) {
      throw broker ? error : brokerStartError(error, settings);
    }
    cleanup.push(() => controller.stop());

    const engine = new JobEngine({
      link: controller,
      history,
      audit,
      logger: logger.child({ component: 'jobs' }),
      ...(deps.clock && { clock: deps.clock }),
    });
    engine.start();
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
      ...(settings.https && { https: settings.https }),
    });
    cleanup.push(() => app.close());
    await httpPort.release();
    try {
      await app.listen({ port: httpPort.port, host: settings.host });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EADDRINUSE') throw error;
      throw new StartError(
        `HTTP port ${httpPort.port} on ${settings.host} was taken while the service started: try again, or choose another with --port`,
      );
    }
    const address = app.server.address();
    return {
      app,
      controller,
      engine,
      broker,
      httpPort: typeof address === 'object' && address ? address.port : settings.port,
      brokerPort: broker?.port,
      portFallbacks,
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}
