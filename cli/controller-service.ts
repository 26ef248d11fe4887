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
import { HistoryRetention } from '../controller/history-retention.ts';
import { JobEngine } from '../controller/job-engine.ts';
import { JobHistory } from '../controller/job-history.ts';
import type { OidcSettings } from '../controller/oidc-sign-in.ts';
import { ResultSearch } from '../controller/result-search.ts';
import { type PacingClock, realClock } from '../controller/rollout.ts';
import { ScheduleStore } from '../controller/schedule-store.ts';
import { Scheduler } from '../controller/scheduler.ts';
import type { ApprovalMode, ScriptDialect } from '../controller/script-intake.ts';
import { ScriptLibrary } from '../controller/script-library.ts';
import { buildControllerApp } from '../controller/service/service-app.ts';
import { StoreController } from '../controller/store-controller.ts';
import {
  type ControllerUser,
  ControllerUsers,
  loadControllerUsersFile,
  type UserInput,
  withRole,
} from '../controller/users.ts';
import { WalCheckpointer } from '../controller/wal-checkpointer.ts';
import { announceToWebhooks } from '../controller/webhook-events.ts';
import { type WebhookOptions, Webhooks } from '../controller/webhooks.ts';
import { closeHttpApp } from '../src/http-close.ts';
import type { Logger } from '../src/logger.ts';
import { readPem } from '../src/tls.ts';
import { loopbackFor, StartError } from './options.ts';

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
  /** `--broker-max-session-inflight` (default in broker/limits.ts). */
  brokerMaxSessionInflight?: number | undefined;
  ns: string;
  /** `--user`: a user without a role is an admin. */
  users: readonly UserInput[];
  /** `--users FILE`: read at start and again by reloadUsers() (SIGHUP). */
  usersFile?: string | undefined;
  db: string;
  /** Jobs that ended more than this many days ago are deleted daily (`--history-days`). */
  historyDays?: number | undefined;
  tokenTtl: number;
  /** `--auth-*`: the login limits, as on `serve` (cli/auth-flags.ts); defaults there. */
  authMaxFailures?: number | undefined;
  authUserMaxFailures?: number | undefined;
  /** ms. */
  authWindow?: number | undefined;
  authBodyLimit?: number | undefined;
  /** `--max-event-streams`; default 8. */
  maxEventStreams?: number | undefined;
  /** `--script-dialect` (default simulator). */
  scriptDialect?: ScriptDialect | undefined;
  /** `--approval` (default library). */
  approval?: ApprovalMode | undefined;
  https?: ServerOptions | undefined;
  /** Single sign-on (`--oidc-*`, cli/oidc-flags.ts); absent: password logins only. */
  oidc?: OidcSettings | undefined;
  settleMs?: number;
  /** `--store-link-topic` (several stores): where each store's link says up or down. */
  storeLinkTopic?: string | undefined;
}

export interface RunningControllerService {
  readonly app: FastifyInstance;
  readonly controller: StoreController;
  readonly engine: JobEngine;
  readonly scheduler: Scheduler;
  readonly broker: StoreBroker | undefined;
  readonly httpPort: number;
  readonly brokerPort: number | undefined;
  /**
   * Reads `--users FILE` again (SIGHUP): tokens of users removed or changed end at once, and the
   * embedded broker takes the new list. Throws, changing nothing, when the file is unreadable or
   * malformed. Answers the user names whose tokens ended.
   */
  reloadUsers(): string[];
  /** Defaulted ports that were taken and replaced by free ones, for the start-up banner. */
  readonly portFallbacks: readonly string[];
  stop(): Promise<void>;
}

/** `--user` entries and the users file's, checked together (a name given twice is refused). */
export function controllerUsersOf(
  settings: Pick<ControllerServiceSettings, 'users' | 'usersFile'>,
): ControllerUser[] {
  const users = [
    ...settings.users.map(withRole),
    ...(settings.usersFile !== undefined ? loadControllerUsersFile(settings.usersFile) : []),
  ];
  const seen = new Set<string>();
  for (const user of users) {
    if (seen.has(user.name)) throw new Error(`user ${user.name} is given twice (--user and --users)`);
    seen.add(user.name);
  }
  return users;
}

/** API users are controllers on the embedded broker; a viewer only observes. */
function asBrokerUsers(users: readonly ControllerUser[]): BrokerUser[] {
  return users.map((u) => ({
    name: u.name,
    password: u.password,
    role: u.role === 'viewer' ? ('observer' as const) : ('controller' as const),
  }));
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
    const accounts = new ControllerUsers(controllerUsersOf(settings));
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
    let ownBrokerUser: BrokerUser | undefined;
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
        users: [...settings.brokerUsers, ...asBrokerUsers(accounts.all()), { ...own, role: 'controller' }],
        logger: logger.child({ component: 'broker' }),
        portFlag: '--broker-port',
        ...(settings.brokerMaxSessionInflight !== undefined && {
          limits: { maxSessionInflight: settings.brokerMaxSessionInflight },
        }),
      });
      const started = broker;
      cleanup.push(() => started.stop());
      await broker.start();
      url = `mqtt://${loopbackFor(settings.brokerHost)}:${broker.port}`;
      credentials = own;
      ownBrokerUser = { ...own, role: 'controller' };
    }
    if (url === undefined) throw new Error('no broker: give --mqtt-url or --broker-port');

    const controller = new StoreController({
      url,
      ...(credentials && { username: credentials.name, password: credentials.password }),
      ...(settings.mqttCa !== undefined && url === settings.mqttUrl && { ca: readPem(settings.mqttCa) }),
      ns: settings.ns,
      logger,
      ...(settings.settleMs !== undefined && { settleMs: settings.settleMs }),
      ...(settings.storeLinkTopic !== undefined && { storeLinkTopic: settings.storeLinkTopic }),
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
    const webhooks = new Webhooks({
      db,
      clock: deps.clock ?? realClock,
      logger: logger.child({ component: 'webhooks' }),
      ...deps.webhookOptions,
    });
    webhooks.start();
    cleanup.push(() => webhooks.stop());
    // Built before it is wired and started: runs missed while the controller was down are
    // announced by start().
    const scheduler = new Scheduler({
      store: new ScheduleStore(db),
      engine,
      audit,
      clock: deps.clock ?? realClock,
      logger: logger.child({ component: 'schedules' }),
    });
    cleanup.push(
      announceToWebhooks({ engine, audit, directory: controller, scheduler }, (event, data) =>
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
    // After the engine: runs missed while the controller was down create their jobs now.
    scheduler.start();
    cleanup.push(() => scheduler.stop());

    const app = await buildControllerApp({
      engine,
      scheduler,
      directory: controller,
      audit,
      users: accounts,
      library: new ScriptLibrary(db),
      ...(settings.scriptDialect && { scriptDialect: settings.scriptDialect }),
      ...(settings.approval && { approval: settings.approval }),
      tokenTtl: settings.tokenTtl,
      oidc: settings.oidc,
      ...(settings.maxEventStreams !== undefined && { maxEventStreams: settings.maxEventStreams }),
      ...(settings.authMaxFailures !== undefined && { authMaxFailures: settings.authMaxFailures }),
      ...(settings.authUserMaxFailures !== undefined && {
        authUserMaxFailures: settings.authUserMaxFailures,
      }),
      ...(settings.authWindow !== undefined && { authWindowMs: settings.authWindow }),
      ...(settings.authBodyLimit !== undefined && { authBodyLimit: settings.authBodyLimit }),
      logger,
      registry: new Registry(),
      dashboardDir: deps.dashboardDir ?? DASHBOARD_DIR,
      jobCount: () => history.count(),
      search: new ResultSearch(db),
      webhooks,
      ...(settings.https && { https: settings.https }),
    });
    cleanup.push(() => closeHttpApp(app));
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
      scheduler,
      broker,
      httpPort: typeof address === 'object' && address ? address.port : settings.port,
      brokerPort: broker?.port,
      reloadUsers: () => {
        const users = controllerUsersOf(settings);
        // The broker first: it checks the whole list and changes nothing when it refuses it.
        if (broker && ownBrokerUser) {
          broker.reloadUsers([...settings.brokerUsers, ...asBrokerUsers(users), ownBrokerUser]);
        }
        const gone = accounts.replace(users);
        audit.record({
          user: 'system',
          address: '',
          action: 'users_reloaded',
          detail: `${users.length} users; tokens ended for ${gone.length ? gone.join(', ') : 'nobody'}`,
        });
        logger.info({ users: users.length, revoked: gone.length }, 'users reloaded');
        return gone;
      },
      portFallbacks,
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}
