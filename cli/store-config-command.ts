/**
 * `regbridge store-config --store 042 --hub nats-1:1883,nats-2:1883,nats-3:1883 --registers 20`:
 * one store's configuration (cli/store-config.ts; docs/guide.md, "Add a store"). Prints the
 * store broker's mosquitto.conf, or with `--out DIR` writes it with registers.sh and one
 * <register>.env per register. The hub password is best given as REGBRIDGE_HUB_PASSWORD (a flag
 * stays in the shell history); it lands in mosquitto.conf only, written owner-only.
 */
import { chmod, mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Command } from 'commander';
import * as z from 'zod';
import { ID_PATTERN, namespaceSchema } from '../bridge/contract/topics.ts';
import { hasControlCharacters } from '../src/control-characters.ts';
import { indexedCommand } from './command-index.ts';
import { addFlags, type FlagTable, flag, flagSchema, parseFlagsOrReport } from './flags.ts';
import { type StoreConfigInput, splitHostPort, storeConfig } from './store-config.ts';

const idValue = z.string().regex(ID_PATTERN, 'must match [A-Za-z0-9_-]{1,64}');
/** A value written into a configuration line: a line break in it would add lines of its own. */
const lineValue = (empty: string) =>
  z
    .string()
    .min(1, empty)
    .refine((value) => !hasControlCharacters(value), 'must not contain control characters');
const pathValue = lineValue('expected a file path');

/** `host:port`; a host alone gets `defaultPort`. */
function hostPortValue(defaultPort: number) {
  return z
    .string()
    .min(1, 'expected host:port')
    .transform((value, ctx) => {
      const withPort = /:\d+$/.test(value) && !/^[^[]*:.*:/.test(value) ? value : `${value}:${defaultPort}`;
      const { host, port } = splitHostPort(withPort);
      if (!host || /\s/.test(host) || !Number.isInteger(port) || port < 1 || port > 65535) {
        ctx.addIssue({ code: 'custom', message: `expected host:port, got ${JSON.stringify(value)}` });
        return z.NEVER;
      }
      return `${host}:${port}`;
    });
}

/** `20` (reg-01 ... reg-20) or a list of register ids. */
const registersValue = z.string().transform((value, ctx) => {
  if (/^\d+$/.test(value)) {
    const count = Number(value);
    if (count < 1 || count > 1000) {
      ctx.addIssue({ code: 'custom', message: `expected 1 to 1000 registers, got ${count}` });
      return z.NEVER;
    }
    const width = Math.max(2, String(count).length);
    return Array.from({ length: count }, (_, i) => `reg-${String(i + 1).padStart(width, '0')}`);
  }
  const ids = value.split(',').map((id) => id.trim());
  const bad = ids.find((id) => !ID_PATTERN.test(id));
  if (bad !== undefined) {
    ctx.addIssue({
      code: 'custom',
      message: `register id ${JSON.stringify(bad)} must match [A-Za-z0-9_-]{1,64}`,
    });
    return z.NEVER;
  }
  return ids;
});

export const storeConfigFlags = {
  store: flag('--store <id>', 'the store id; its namespace is <ns-prefix>/<id>', idValue, {
    required: true,
    defaultHelp: 'required',
  }),
  nsPrefix: flag('--ns-prefix <prefix>', "the stores' common namespace prefix", namespaceSchema, {
    default: 'stores',
  }),
  hub: flag(
    '--hub <host:port,...>',
    "the head office's hub: its nodes' MQTT listeners, comma-separated, in failover order",
    z
      .string({ error: 'required: the MQTT listener(s) of the hub, host:port,...' })
      .transform((value) => value.split(',').map((part) => part.trim()))
      .pipe(z.array(hostPortValue(1883)).min(1, 'expected at least one host:port')),
    { required: true, defaultHelp: 'required' },
  ),
  hubUsername: flag(
    '--hub-username <name>',
    'the MQTT user the bridge logs in to the hub as',
    lineValue('expected a user name'),
  ),
  hubPassword: flag(
    '--hub-password <password>',
    "that user's password (prefer the variable)",
    lineValue('expected a password'),
  ),
  hubCafile: flag('--hub-cafile <file>', "TLS to the hub, trusting this CA's certificates", pathValue),
  hubCertfile: flag(
    '--hub-certfile <file>',
    'TLS client certificate for the hub (with --hub-keyfile)',
    pathValue,
  ),
  hubKeyfile: flag('--hub-keyfile <file>', 'its private key', pathValue),
  listen: flag('--listen <host:port>', "the store broker's listener on the LAN", hostPortValue(1883), {
    default: '0.0.0.0:1883',
  }),
  storeHost: flag(
    '--store-host <host>',
    'how the registers reach the store broker',
    lineValue('expected a host'),
    {
      default: 'localhost',
    },
  ),
  registers: flag(
    '--registers <count|ids>',
    'the registers: a count (reg-01 ...) or comma-separated ids',
    registersValue,
    {
      default: '1',
    },
  ),
  passwordFile: flag(
    '--password-file <file>',
    "the store broker's mosquitto password file (without: anonymous clients on the LAN)",
    pathValue,
  ),
  persistenceDir: flag(
    '--persistence-dir <dir>',
    'keep what waits for the hub across restarts here (without: in memory)',
    pathValue,
  ),
  wanQueue: flag(
    '--wan-queue <messages>',
    'messages the store broker queues per client (the bridge while the WAN is down)',
    z.coerce.number().int().min(1000),
    { default: '1000000' },
  ),
  clientId: flag(
    '--client-id <id>',
    "the bridge's client id at the hub, unique per store (without: store-<id>); its results connection adds -results",
    idValue,
  ),
  out: flag(
    '--out <dir>',
    'write mosquitto.conf, registers.sh and <register>.env there (without: print mosquitto.conf)',
    pathValue,
  ),
} satisfies FlagTable;

const storeConfigSchema = flagSchema(storeConfigFlags).superRefine((config, ctx) => {
  if ((config.hubCertfile === undefined) !== (config.hubKeyfile === undefined))
    ctx.addIssue({
      code: 'custom',
      path: ['hubKeyfile'],
      message: '--hub-certfile and --hub-keyfile go together',
    });
  if (config.hubCertfile !== undefined && config.hubCafile === undefined)
    ctx.addIssue({ code: 'custom', path: ['hubCafile'], message: 'required with a client certificate' });
  if (config.hubPassword !== undefined && config.hubUsername === undefined)
    ctx.addIssue({ code: 'custom', path: ['hubUsername'], message: 'required with --hub-password' });
  if (new Set(config.registers).size !== config.registers.length)
    ctx.addIssue({ code: 'custom', path: ['registers'], message: 'a register id is listed twice' });
});

export type StoreConfigFlags = z.infer<typeof storeConfigSchema>;

export function registerStoreConfigCommand(program: Command): void {
  const command = indexedCommand(program, 'store-config');
  addFlags(command, storeConfigFlags).action(async (_flags: unknown, cmd: Command) => {
    const config = parseFlagsOrReport(cmd, storeConfigFlags, storeConfigSchema);
    if (!config) return;
    const { out, ...input } = config;
    const generated = storeConfig(input as StoreConfigInput);
    if (out === undefined) {
      process.stdout.write(generated.mosquittoConf);
      return;
    }
    try {
      await mkdir(out, { recursive: true });
      // Owner-only: mosquitto.conf may hold the hub password. chmod too: writeFile's mode applies
      // only to a file it creates, and an earlier run's may be readable by others.
      const write = async (name: string, text: string, mode: number): Promise<void> => {
        await writeFile(join(out, name), text, { mode });
        await chmod(join(out, name), mode);
      };
      await write('mosquitto.conf', generated.mosquittoConf, 0o600);
      await write('registers.sh', generated.registersScript, 0o755);
      for (const r of generated.registers) {
        const env = Object.entries(r.env).map(([key, value]) => `${key}=${value}\n`);
        await write(`${r.id}.env`, env.join(''), 0o600);
      }
      console.log(
        `store ${config.store} (${generated.ns}): wrote mosquitto.conf, registers.sh and ${generated.registers.length} .env files to ${out}`,
      );
    } catch (error) {
      console.error(`regbridge store-config: ${(error as Error).message}`);
      process.exitCode = 1;
    }
  });
}
