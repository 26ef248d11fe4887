/**
 * The package entry `regbridge/device`: a whole device in another program (what `regbridge serve`
 * runs: REST app, task queue, executor, MQTT bridge, optional embedded broker), its validated
 * config, and the parts for a custom assembly. docs/client.md shows its use.
 */
export { type AppOptions, buildApp } from '../src/app.ts';
export { ConfigError } from '../src/config.ts';
export {
  createExecutor,
  type ExecutionResult,
  type Executor,
  SimulatorExecutor,
} from '../src/executors/index.ts';
export { createLogger, type Logger } from '../src/logger.ts';
export { TaskQueue, type TaskQueueOptions } from '../src/tasks/task-queue.ts';
export { VERSION } from '../src/version.ts';
export { ListenError, type RunningDevice, type StartDeviceOptions, startDevice } from './device.ts';
export {
  parseServeConfig,
  type ServeConfig,
  type ServeConfigInput,
  serveConfigSchema,
} from './serve-config.ts';
