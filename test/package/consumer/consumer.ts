// A consumer's TypeScript file, type-checked with tsc under module/moduleResolution nodenext.
import {
  ConnectionException,
  type DeviceClient,
  RestException,
  TaskDoesNotExistException,
  type TaskStatusName,
  type TasksResponse,
} from 'regbridge';
import type { StoreBroker, StoreBrokerOptions } from 'regbridge/broker';
import { type StatusMessage, statusMessageSchema, topics } from 'regbridge/contract';
import type { FanoutResult, StoreController } from 'regbridge/controller';
import { parseServeConfig, type RunningDevice, startDevice } from 'regbridge/device';

export async function run(client: DeviceClient): Promise<string | null> {
  const id: number = await client.vendorScript('PRINT typed');
  const task: TasksResponse = await client.getTaskStatus(id);
  const status: string = task.status;
  // @ts-expect-error the report is a string or null, never a number: proves real types arrived
  const wrong: number = await client.waitForTask(id);
  void wrong;
  return status === 'FINISHED' ? (task.report ?? null) : null;
}

export const ENDED: readonly TaskStatusName[] = ['FINISHED', 'FAILURE', 'TASK_DOES_NOT_EXIST'];

export function classify(error: unknown): string {
  if (error instanceof TaskDoesNotExistException) return 'gone';
  if (error instanceof ConnectionException) return 'unreachable';
  if (error instanceof RestException) return `${error.statusCode} ${error.code}`;
  return 'other';
}

export function scriptsTopic(ns: string, device: string): string {
  return topics.deviceScripts(ns, device);
}

export const parseStatus = (payload: unknown): StatusMessage => statusMessageSchema.parse(payload);
export type Servers = [typeof StoreBroker, StoreBrokerOptions, typeof StoreController, FanoutResult];
export const device: (port: number) => Promise<RunningDevice> = (port) =>
  startDevice(parseServeConfig({ port, mqtt: false }), { logger: undefined as never });
