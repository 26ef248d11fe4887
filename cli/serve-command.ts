import { randomBytes } from 'node:crypto';
import type { Command } from 'commander';
import { parseConfig } from '../src/config.ts';
import { indexedCommand } from './command-index.ts';
import { startDevice } from './device.ts';
import { addFlags, booleanValue, flagInput, labeler } from './flags.ts';
import { applyHeapGrowth } from './heap-growth.ts';
import { cliLogger } from './logging.ts';
import { loopbackFor, onReloadSignal, onShutdownSignal, reportStartError } from './options.ts';
import { scrubServiceEnvironment } from './scrub-environment.ts';
import { type ServeConfig, serveConfigSchema, serveCrossProblems, serveFlags } from './serve-config.ts';

/** REST with --auth on needs a user; so does the embedded broker (no --no-mqtt, no --mqtt-url). */
function needsGeneratedUser(input: Record<string, unknown>): boolean {
  const restAuth = input.auth !== 'off';
  // input.mqtt is false (--no-mqtt) or the variable's word (REGBRIDGE_MQTT=off).
  const mqtt = input.mqtt === undefined || booleanValue.safeParse(input.mqtt).data !== false;
  const embeddedBroker = mqtt && input.mqttUrl === undefined;
  return restAuth || embeddedBroker;
}

export function registerServeCommand(program: Command): void {
  const command = indexedCommand(program, 'serve');
  addFlags(command, serveFlags).action(async (_flags: unknown, command: Command) => {
    let config: ServeConfig;
    let generatedPassword: string | undefined;
    const { input, sources } = flagInput(command, serveFlags);
    try {
      // With no user configured, create `admin` with a random password and print it once
      // (stdout, never the log; docs/api.md, "Authentication"). With --auth off the REST API
      // needs no token, but the embedded broker still needs a user; with neither, no user.
      if (!(input.users as unknown[] | undefined)?.length && needsGeneratedUser(input)) {
        generatedPassword = randomBytes(12).toString('base64url');
        input.users = [`admin:${generatedPassword}`];
      }
      config = parseConfig(
        serveConfigSchema,
        input,
        serveCrossProblems(input),
        labeler(serveFlags, sources, 'serve'),
      );
    } catch (error) {
      reportStartError(command, error);
      return;
    }
    const logger = cliLogger(config.logLevel);
    // Read once: the settings (passwords among them) leave the environment a program could read.
    if (!scrubServiceEnvironment())
      logger.debug('REGBRIDGE_* variables stay readable in /proc/<pid>/environ');
    // Before the device starts: its start-up collections set the first limits too.
    applyHeapGrowth(config.heapGrowth);
    try {
      const device = await startDevice(config, {
        logger,
        // Only ports nobody asked for may move: `npm start` must work where 1883 is taken.
        freePortIfTaken: { http: sources.port === undefined, broker: sources.brokerPort === undefined },
      });
      onShutdownSignal(async () => {
        logger.info('shutting down');
        await device.stop();
      });
      // Its users come from flags and variables only: there is no file to read again.
      onReloadSignal(() => logger.info('SIGHUP: serve has no users file to reload; ignored'));
      // A wildcard address is reachable from other machines too: say so, not only the loopback URL.
      const where = (host: string, port: number | undefined): string =>
        host === '0.0.0.0' || host === '::'
          ? ` (all interfaces: ${host === '::' ? '[::]' : host}:${port})`
          : '';
      const shownHost = loopbackFor(config.host);
      const shownBrokerHost = loopbackFor(config.brokerHost);
      const scheme = config.tlsCert ? 'https' : 'http';
      console.log(
        `regbridge device ${config.deviceId} listening on ${scheme}://${shownHost}:${device.httpPort}${where(config.host, device.httpPort)}`,
      );
      if (device.brokerPort !== undefined) {
        console.log(
          `embedded MQTT broker on mqtt://${shownBrokerHost}:${device.brokerPort} (namespace ${config.ns})${where(config.brokerHost, device.brokerPort)}`,
        );
      }
      if (device.brokerTlsPort !== undefined)
        console.log(`embedded MQTT broker over TLS on mqtts://${shownBrokerHost}:${device.brokerTlsPort}`);
      if (device.brokerWsPort !== undefined)
        console.log(`embedded MQTT broker WebSocket on ws://${shownBrokerHost}:${device.brokerWsPort}`);
      // Each note says whose port moved, so two fallbacks cannot be confused.
      for (const fallback of device.portFallbacks) {
        const instead = fallback.startsWith('MQTT')
          ? `the embedded broker listens on ${device.brokerPort} instead`
          : `the REST API listens on ${device.httpPort} instead`;
        console.log(`note: ${fallback}; ${instead}`);
      }
      if (generatedPassword && config.auth === 'off') {
        console.log(
          `created user admin with password ${generatedPassword} for the embedded MQTT broker only (--auth off: REST needs no token; shown once; pass --user NAME:PASSWORD to choose)`,
        );
      } else if (generatedPassword) {
        console.log(
          `created user admin with password ${generatedPassword} (shown once; pass --user NAME:PASSWORD to choose)`,
        );
      }
      logger.info(
        {
          deviceId: config.deviceId,
          httpPort: device.httpPort,
          brokerPort: device.brokerPort,
          brokerTlsPort: device.brokerTlsPort,
          executor: config.executor,
        },
        'device started',
      );
    } catch (error) {
      logger.flush?.();
      reportStartError(command, error);
    }
  });
}
