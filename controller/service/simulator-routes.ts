/**
 * `GET /api/simulator/commands`: the simulator's command table (src/executors/simulator-commands.ts)
 * for the dashboard's hints and for anyone checking a script before sending it. The same table
 * the registers' simulator parses with, so a hint cannot name a command it refuses. No token:
 * it describes the product, nothing of the store.
 */
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import * as z from 'zod';
import { commandUsage, SIMULATOR_COMMANDS } from '../../src/executors/simulator-commands.ts';
import { errorResponses, jsonResponse } from '../../src/routes/schemas.ts';
import { named } from './schemas.ts';

const argumentSchema = z.object({
  name: z.string(),
  kind: z.enum([
    'text',
    'milliseconds',
    'amount',
    'amount-or-percent',
    'quantity',
    'name',
    'vat-group',
    'choice',
  ]),
  optional: z.boolean().optional(),
  choices: z.array(z.string()).optional(),
});

const commandListSchema = named(
  z.object({
    commands: z.array(
      z.object({
        command: z.string(),
        usage: z.string(),
        arguments: z.array(argumentSchema),
        description: z.string(),
        example: z.string(),
        needsReceipt: z.boolean(),
      }),
    ),
  }),
  'SimulatorCommands',
  "The simulator's commands: words, argument shape, what each does, an example line",
);

const body = { commands: SIMULATOR_COMMANDS.map((c) => ({ ...c, usage: commandUsage(c) })) };

export const simulatorRoutes: FastifyPluginAsyncZod = async (app) => {
  app.get('/api/simulator/commands', {
    schema: {
      tags: ['service'],
      summary: "The simulator's command table (what a script may say); no token needed",
      response: {
        200: jsonResponse('Every command, in the order of docs/simulator.md', commandListSchema),
        500: errorResponses.internal,
      },
    },
    handler: async () => body,
  });
};
