/**
 * `regbridge controller`: the store controller service (docs/controller.md, "The controller
 * service"): jobs with rollout control, their history in SQLite, an audit trail, live events
 * and the dashboard, over HTTP(S). Runs until SIGINT/SIGTERM; jobs in flight resume at the next
 * start. With no --user, `admin` gets a random password, printed once on stdout (never logged).
 */
import { randomBytes } from 'node:crypto';
import type { Command } from 'commander';
import { parseConfig } from '../src/config.ts';
import { loadTlsFiles } from '../src/tls.ts';
import { indexedCommand } from './command-index.ts';
import {
  type ControllerConfig,
  controllerConfigSchema,
  controllerCrossProblems,
  controllerFlags,
} from './controller-config.ts';
import { startControllerService } from './controller-service.ts';
import { addFlags, flagInput, labeler } from './flags.ts';
import { cliLogger } from './logging.ts';
import { oidcSettingsOf } from './oidc-flags.ts';
import { loopbackFor, onReloadSignal, onShutdownSignal, reportStartError } from './options.ts';
import { scrubServiceEnvironment } from './scrub-environment.ts';

export function registerControllerCommand(program: Command): void {
  const command = indexedCommand(program, 'controller');
  addFlags(command, controllerFlags).action(async (_flags: unknown, cmd: Command) => {
    let config: ControllerConfig;
    let generatedPassword: string | undefined;
    const { input, sources } = flagInput(cmd, controllerFlags);
    try {
      if (!(input.users as unknown[] | undefined)?.length && input.usersFile === undefined) {
        generatedPassword = randomBytes(12).toString('base64url');
        input.users = [`admin:${generatedPassword}`];
      }
      config = parseConfig(
        controllerConfigSchema,
        input,
        controllerCrossProblems(input),
        labeler(controllerFlags, sources, 'controller'),
      );
    } catch (error) {
      reportStartError(cmd, error);
      return;
    }
    const logger = cliLogger(config.logLevel);
    // Read once: the settings (passwords among them) leave the environment a program could read.
    if (!scrubServiceEnvironment())
      logger.debug('REGBRIDGE_* variables stay readable in /proc/<pid>/environ');
    try {
      const https = loadTlsFiles(config.tlsCert, config.tlsKey);
      // Only a port nobody asked for may move, as with `serve` and `demo`.
      const service = await startControllerService(
        { ...config, ...(https && { https }), oidc: oidcSettingsOf(config) },
        { logger, freePortIfTaken: sources.port === undefined },
      );
      onShutdownSignal(async () => {
        logger.info('shutting down');
        await service.stop();
      });
      // SIGHUP reads --users again; a refused file leaves the users as they were.
      onReloadSignal(() => {
        if (config.usersFile === undefined) {
          logger.info('SIGHUP: no --users file to reload; ignored');
          return;
        }
        try {
          service.reloadUsers();
        } catch (error) {
          logger.error(
            { reason: (error as Error).message },
            'SIGHUP: users file not reloaded, the previous users stay',
          );
        }
      });
      const scheme = config.tlsCert ? 'https' : 'http';
      console.log(
        `regbridge controller listening on ${scheme}://${loopbackFor(config.host)}:${service.httpPort}`,
      );
      if (service.brokerPort !== undefined) {
        console.log(
          `embedded MQTT broker on mqtt://${loopbackFor(config.brokerHost)}:${service.brokerPort} (namespace ${config.ns})`,
        );
      }
      for (const fallback of service.portFallbacks)
        console.log(`note: ${fallback}; the port above was chosen instead`);
      console.log(`history in ${config.db}`);
      if (generatedPassword) {
        console.log(
          `created user admin with password ${generatedPassword} (shown once; pass --user NAME:PASSWORD to choose)`,
        );
      }
      logger.info(
        { httpPort: service.httpPort, brokerPort: service.brokerPort },
        'controller service started',
      );
    } catch (error) {
      logger.flush?.();
      reportStartError(cmd, error);
    }
  });
}
