import { randomBytes } from 'node:crypto';
import type { Command } from 'commander';
import { createLogger } from '../src/logger.ts';
import { startDevice } from './device.ts';
import { onShutdownSignal, option, repeatable, repeatedValues, reportStartError } from './options.ts';
import { parseServeConfig, type ServeConfig } from './serve-config.ts';
import { type ServeFlags, serveInput } from './serve-flags.ts';

export function registerServeCommand(program: Command): void {
  program
    .command('serve')
    .description(
      'run a device: the vendor REST API, the task queue and the MQTT bridge (what `npm start` runs)',
    )
    .addOption(option('--port <port>', 'HTTP port (0 picks a free one)').default(undefined, '8080'))
    .addOption(option('--host <host>', 'HTTP listen address').default(undefined, '0.0.0.0'))
    .addOption(
      option('--device-id <id>', 'device id, [A-Za-z0-9_-]{1,64}').default(undefined, 'the host name'),
    )
    .addOption(
      option('--installation <kind>', 'cash-register | cash-register+pos | pos').default(
        undefined,
        'cash-register',
      ),
    )
    .addOption(repeatable('--user <NAME:PASSWORD>', 'a REST user (also a controller on the embedded broker)'))
    .addOption(option('--auth <on|off>', 'off: no tokens needed (logs a warning)').default(undefined, 'on'))
    .addOption(option('--token-ttl <seconds>', 'bearer token lifetime').default(undefined, '3600'))
    .addOption(
      option('--auth-max-failures <n>', 'failed authentications per address before 429').default(
        undefined,
        '5',
      ),
    )
    .addOption(option('--auth-window <duration>', 'window of --auth-max-failures').default(undefined, '60s'))
    .addOption(
      option(
        '--mqtt-url <url>',
        'use this broker (mqtt://USER:PASS@host:port, mqtts://, ws://); a comma-separated list fails over between instances',
      ),
    )
    .addOption(
      option(
        '--mqtt-protocol <4|5>',
        'MQTT protocol of the bridge: 4 (3.1.1) or 5 (adds response topic, correlation data)',
      ).default(undefined, '4'),
    )
    .addOption(
      option('--mqtt-max-inflight <n>', 'status messages awaiting broker acknowledgement at once').default(
        undefined,
        '1000',
      ),
    )
    .addOption(
      option('--request-id-memory <n>', 'MQTT requestIds remembered for idempotency').default(
        undefined,
        '1000',
      ),
    )
    .addOption(
      option('--broker-port <port>', 'embedded broker port, when no --mqtt-url (0 picks a free one)').default(
        undefined,
        '1883',
      ),
    )
    .addOption(option('--broker-host <host>', 'embedded broker listen address').default(undefined, '0.0.0.0'))
    .addOption(option('--broker-ws-port <port>', 'embedded broker WebSocket port (off unless given)'))
    .option('--no-mqtt', 'no MQTT at all (env: REGBRIDGE_MQTT=off)')
    .addOption(option('--ns <namespace>', 'MQTT topic namespace, may contain /').default(undefined, 'pos'))
    .addOption(repeatable('--group <group>', 'an MQTT group this device takes scripts for (plus `all`)'))
    .addOption(option('--executor <name>', 'simulator | command').default(undefined, 'simulator'))
    .addOption(option('--command <cmd>', 'program for --executor command: script on stdin, report on stdout'))
    .addOption(option('--retain <n>', 'ended tasks kept').default(undefined, '128'))
    .addOption(
      option('--max-queue <n>', 'queued tasks accepted before 503 QUEUE_FULL').default(undefined, '1000'),
    )
    .addOption(
      option('--script-timeout <duration>', 'longest a script may run (both executors; 0: none)').default(
        undefined,
        '120s',
      ),
    )
    .addOption(
      option('--max-script-bytes <n>', 'largest script accepted (413 SCRIPT_TOO_LARGE)').default(
        undefined,
        '1048576',
      ),
    )
    .addOption(
      option('--output-cap <n>', 'largest report kept, in bytes (both executors)').default(
        undefined,
        '1048576',
      ),
    )
    .addOption(
      option('--fm-script-timeout <duration>', 'default wait of POST /api/fm-script').default(
        undefined,
        '60s',
      ),
    )
    .addOption(
      option('--log-level <level>', 'fatal|error|warn|info|debug|trace|silent').default(undefined, 'info'),
    )
    .action(async (flags: ServeFlags, command: Command) => {
      let config: ServeConfig;
      let generatedPassword: string | undefined;
      try {
        const input = serveInput({
          ...flags,
          user: repeatedValues(command, 'user', flags.user),
          group: repeatedValues(command, 'group', flags.group),
        });
        // Contract section 4: with no user configured, create `admin` with a random password
        // and print it once (stdout, never the log).
        // With --auth off the REST API needs no token, but the embedded broker still needs a user.
        if (!input.users?.length) {
          generatedPassword = randomBytes(12).toString('base64url');
          input.users = [`admin:${generatedPassword}`];
        }
        config = parseServeConfig(input);
      } catch (error) {
        reportStartError(command, error);
        return;
      }
      const logger = createLogger({ level: config.logLevel, name: 'regbridge' });
      try {
        const device = await startDevice(config, {
          logger,
          // Only ports nobody asked for may move: `npm start` must work where 1883 is taken.
          freePortIfTaken: { http: flags.port === undefined, broker: flags.brokerPort === undefined },
        });
        onShutdownSignal(async () => {
          logger.info('shutting down');
          await device.stop();
        });
        const shown = (host: string): string => (host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host);
        const shownHost = shown(config.host);
        const shownBrokerHost = shown(config.brokerHost);
        console.log(
          `regbridge device ${config.deviceId} listening on http://${shownHost}:${device.httpPort}`,
        );
        if (device.brokerPort !== undefined) {
          console.log(
            `embedded MQTT broker on mqtt://${shownBrokerHost}:${device.brokerPort} (namespace ${config.ns})`,
          );
        }
        if (device.brokerWsPort !== undefined)
          console.log(`embedded MQTT broker WebSocket on ws://${shownBrokerHost}:${device.brokerWsPort}`);
        for (const fallback of device.portFallbacks)
          console.log(`note: ${fallback}; the port above was chosen instead`);
        if (generatedPassword) {
          console.log(
            `created user admin with password ${generatedPassword} (shown once; pass --user NAME:PASSWORD to choose)`,
          );
        }
        logger.info(
          {
            deviceId: config.deviceId,
            httpPort: device.httpPort,
            brokerPort: device.brokerPort,
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
