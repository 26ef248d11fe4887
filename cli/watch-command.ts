/**
 * `regbridge watch`: a live view of the store's devices and their latest tasks, built from the
 * retained state and status topics (docs/mqtt.md). On a terminal the table is redrawn on
 * every change; in a pipe one line is appended per change; `--once` prints the table after
 * discovery and exits (scripts, tests).
 */
import type { Command } from 'commander';
import type { StoreController } from '../controller/store-controller.ts';
import type { DeviceEntry, TaskView } from '../controller/types.ts';
import { indexedCommand } from './command-index.ts';
import { connectionFlags, controllerFor } from './controller-flags.ts';
import { addFlags, flagSchema, parseFlagsOrReport, switchFlag } from './flags.ts';
import { type DeviceRow, firstLine, renderDevices, reportedAt } from './format-table.ts';
import { cliLogger } from './logging.ts';
import { onShutdownSignal } from './options.ts';

export const watchFlags = {
  ...connectionFlags,
  once: switchFlag('--once', 'print the table once after discovery and exit'),
  json: switchFlag('--json', 'with --once: print the directory as JSON'),
};

export const watchSchema = flagSchema(watchFlags);

/** Redraws at most this often on a terminal: a burst of statuses is one redraw. */
const REDRAW_MS = 100;

export function deviceRows(controller: StoreController): DeviceRow[] {
  return controller.devices().map((entry) => {
    const latest = controller.tasks(entry.deviceId)[0];
    return { entry, queue: controller.queue(entry.deviceId), ...(latest ? { latest } : {}) };
  });
}

function snapshot(controller: StoreController): unknown {
  return {
    devices: deviceRows(controller).map(({ entry, queue, latest }) => ({
      ...entry,
      reportedAt: reportedAt(entry, latest) ?? null,
      queue,
      latestTask: latest ?? null,
    })),
  };
}

function deviceLine(entry: DeviceEntry): string {
  const groups = entry.groups.length ? entry.groups.join(',') : '-';
  return `${new Date().toISOString()} device ${entry.deviceId} ${entry.online ? 'online' : 'offline'} boot=${entry.bootId} groups=${groups}`;
}

function statusLine(task: TaskView): string {
  const status = task.phase === 'queued' ? 'QUEUED' : task.status;
  const detail =
    task.status === 'FINISHED' ? task.report : task.status === 'FAILURE' ? task.error : undefined;
  return (
    `${task.receivedAt} task ${task.deviceId}#${task.id} ${status} seq=${task.seq}` +
    `${task.requestId ? ` request=${firstLine(task.requestId, 40)}` : ''}${detail ? `: ${firstLine(detail)}` : ''}`
  );
}

function followOnTerminal(controller: StoreController, header: string): void {
  let timer: NodeJS.Timeout | undefined;
  const draw = (): void => {
    timer = undefined;
    const footer = `${new Date().toISOString().slice(11, 19)}  ${controller.connection}  (Ctrl-C to quit)`;
    // Home, clear screen: a full redraw keeps the view right whatever changed.
    process.stdout.write(
      `\u001b[H\u001b[2J${header}\n\n${renderDevices(deviceRows(controller))}\n\n${footer}\n`,
    );
  };
  const schedule = (): void => {
    timer ??= setTimeout(draw, REDRAW_MS);
  };
  for (const event of ['device', 'deviceRemoved', 'status', 'connection'] as const)
    controller.on(event, schedule);
  controller.once('connection', (state) => {
    if (state === 'stopped' && timer) clearTimeout(timer);
  });
  draw();
}

function followInPipe(controller: StoreController): void {
  process.stdout.write(`${renderDevices(deviceRows(controller))}\n`);
  controller.on('device', (entry) => process.stdout.write(`${deviceLine(entry)}\n`));
  controller.on('deviceRemoved', (id) =>
    process.stdout.write(`${new Date().toISOString()} device ${id} removed\n`),
  );
  controller.on('status', (task) => process.stdout.write(`${statusLine(task)}\n`));
  controller.on('connection', (state) =>
    process.stdout.write(`${new Date().toISOString()} connection ${state}\n`),
  );
}

/** Why no register may be known: the hint `watch --once` and `fanout` print on stderr. */
export function noDevicesHint(command: string, mqttUrl: string, ns: string): string {
  const shown = mqttUrl.replace(/\/\/[^@/]*@/, '//');
  return (
    `regbridge ${command}: no register has reported under namespace ${ns} on ${shown}: ` +
    "check the broker port in --mqtt-url and --ns (the registers' --ns), and that a register runs"
  );
}

export function registerWatchCommand(program: Command): void {
  const command = indexedCommand(program, 'watch');
  addFlags(command, watchFlags);
  command.action(async (_flags: unknown, cmd: Command) => {
    const config = parseFlagsOrReport(cmd, watchFlags, watchSchema);
    if (!config) return;
    const controller = controllerFor(config, cliLogger(config.logLevel));
    try {
      await controller.start();
    } catch (error) {
      console.error(`regbridge watch: ${(error as Error).message}`);
      process.exitCode = 2;
      return;
    }
    if (config.once) {
      const output = config.json
        ? JSON.stringify(snapshot(controller), null, 2)
        : renderDevices(deviceRows(controller));
      process.stdout.write(`${output}\n`);
      const none = controller.devices().length === 0;
      await controller.stop();
      if (none) {
        // Nothing retained under this namespace: most often the wrong broker port or --ns.
        console.error(noDevicesHint('watch', config.mqttUrl, config.ns));
        process.exitCode = 1;
      }
      return;
    }
    onShutdownSignal(() => controller.stop());
    if (process.stdout.isTTY) followOnTerminal(controller, `regbridge watch  namespace ${config.ns}`);
    else followInPipe(controller);
  });
}
