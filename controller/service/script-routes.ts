/**
 * The script library over HTTP (docs/controller.md, "Script library"): create, new versions,
 * archive, read (latest, one version, all versions), list, and validate a script or a rendered
 * `scriptRef` without starting a job. Roles are checked by access.ts (authors and admins write).
 */
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { AuthService } from '../../src/auth/auth-service.ts';
import { ApiError } from '../../src/routes/api-error.ts';
import { errorResponse, errorResponses, jsonResponse } from '../../src/routes/schemas.ts';
import type { AuditLog } from '../audit-log.ts';
import { dialectProblems, type RenderOutcome, renderRef, type ScriptDialect } from '../script-intake.ts';
import type { ScriptDraft, ScriptLibrary } from '../script-library.ts';
import { definitionProblems, type Problem } from '../script-render.ts';
import { accessOf } from './access.ts';
import { requireToken } from './auth-routes.ts';
import {
  DEFAULT_PAGE,
  inputErrors,
  libraryScriptSchema,
  scriptDraftSchema,
  scriptIdParamsSchema,
  scriptListQuerySchema,
  scriptListSchema,
  scriptVersionParamsSchema,
  securedErrors,
  security,
  validateBodySchema,
  validationSchema,
} from './schemas.ts';

export interface ScriptRoutesOptions {
  auth: AuthService;
  library: ScriptLibrary;
  audit: AuditLog;
  dialect: ScriptDialect;
}

const notFound = errorResponse('SCRIPT_DOES_NOT_EXIST: no library script (or version) with this id');
const invalidParams = errorResponse('INVALID_PARAMS: the parameters or placeholders are wrong; see problems');

export function scriptDoesNotExist(scriptId: string): ApiError {
  return new ApiError('SCRIPT_DOES_NOT_EXIST', `Library script ${scriptId} does not exist`, {
    extra: { scriptId },
  });
}

export function scriptArchived(scriptId: string): ApiError {
  return new ApiError('SCRIPT_ARCHIVED', `Library script ${scriptId} is archived`, { extra: { scriptId } });
}

export function problemsError(code: 'INVALID_PARAMS' | 'INVALID_SCRIPT', problems: Problem[]): ApiError {
  const first = problems[0]!;
  const where = first.line !== undefined ? `line ${first.line}: ` : '';
  const more = problems.length > 1 ? ` (and ${problems.length - 1} more)` : '';
  return new ApiError(code, `${where}${first.message}${more}`, { extra: { problems } });
}

/** A rendered scriptRef, or the error it answers with. */
export function renderedOrThrow(outcome: RenderOutcome): Extract<RenderOutcome, { kind: 'rendered' }> {
  switch (outcome.kind) {
    case 'unknown':
      throw scriptDoesNotExist(outcome.scriptId);
    case 'archived':
      throw scriptArchived(outcome.scriptId);
    case 'invalid':
      throw problemsError('INVALID_PARAMS', outcome.problems);
    default:
      return outcome;
  }
}

export const scriptRoutes: FastifyPluginAsyncZod<ScriptRoutesOptions> = async (app, options) => {
  const { auth, library, audit, dialect } = options;
  app.addHook('onRequest', requireToken(auth));

  const checked = (draft: ScriptDraft): ScriptDraft => {
    const problems = definitionProblems(draft.body, draft.params ?? []);
    if (problems.length > 0) throw problemsError('INVALID_PARAMS', problems);
    return draft;
  };

  app.post('/api/scripts', {
    schema: {
      tags: ['scripts'],
      summary: 'Add a library script (version 1)',
      security,
      body: scriptDraftSchema,
      response: {
        ...securedErrors,
        201: jsonResponse('Created', libraryScriptSchema),
        400: invalidParams,
      },
    },
    handler: async (request, reply) => {
      const { user } = accessOf(request);
      const script = library.create(checked(request.body), user);
      audit.record({
        user,
        address: request.ip,
        action: 'script_created',
        detail: `script ${script.scriptId} "${script.name}" v1`,
      });
      reply.header('location', `/api/scripts/${script.scriptId}`);
      return reply.code(201).send(script);
    },
  });

  app.put('/api/scripts/:scriptId', {
    schema: {
      tags: ['scripts'],
      summary: 'Save a new version of a library script (earlier versions never change)',
      security,
      params: scriptIdParamsSchema,
      body: scriptDraftSchema,
      response: {
        ...securedErrors,
        200: jsonResponse('The new version', libraryScriptSchema),
        400: invalidParams,
        404: notFound,
        409: errorResponse('SCRIPT_ARCHIVED: the script is archived'),
      },
    },
    handler: async (request) => {
      const { user } = accessOf(request);
      const { scriptId } = request.params;
      const script = library.update(scriptId, checked(request.body), user);
      if (script === undefined) throw scriptDoesNotExist(scriptId);
      if (script === 'archived') throw scriptArchived(scriptId);
      audit.record({
        user,
        address: request.ip,
        action: 'script_updated',
        detail: `script ${scriptId} v${script.version}`,
      });
      return script;
    },
  });

  app.delete('/api/scripts/:scriptId', {
    schema: {
      tags: ['scripts'],
      summary: 'Archive a library script: no new job may use it; jobs keep their version',
      security,
      params: scriptIdParamsSchema,
      response: {
        ...securedErrors,
        200: jsonResponse('The script, archived', libraryScriptSchema),
        404: notFound,
      },
    },
    handler: async (request) => {
      const { user } = accessOf(request);
      const script = library.archive(request.params.scriptId, user);
      if (!script) throw scriptDoesNotExist(request.params.scriptId);
      audit.record({
        user,
        address: request.ip,
        action: 'script_archived',
        detail: `script ${script.scriptId}`,
      });
      return script;
    },
  });

  app.get('/api/scripts', {
    schema: {
      tags: ['scripts'],
      summary: 'Library scripts, newest first, latest versions (?limit=, ?before=<scriptId>, ?archived=true)',
      security,
      querystring: scriptListQuerySchema,
      response: {
        ...inputErrors,
        200: jsonResponse('Scripts', scriptListSchema),
        404: notFound,
      },
    },
    handler: async (request) => {
      const { limit, before, archived } = request.query;
      const scripts = library.list(limit ?? DEFAULT_PAGE, {
        ...(before !== undefined && { before }),
        archived: archived === 'true',
      });
      if (!scripts) throw scriptDoesNotExist(before!);
      return { scripts };
    },
  });

  app.get('/api/scripts/:scriptId', {
    schema: {
      tags: ['scripts'],
      summary: 'The latest version of a library script',
      security,
      params: scriptIdParamsSchema,
      response: {
        200: jsonResponse('The script', libraryScriptSchema),
        401: errorResponses.unauthorized,
        404: notFound,
      },
    },
    handler: async (request) => {
      const script = library.get(request.params.scriptId);
      if (!script) throw scriptDoesNotExist(request.params.scriptId);
      return script;
    },
  });

  app.get('/api/scripts/:scriptId/versions', {
    schema: {
      tags: ['scripts'],
      summary: 'Every version of a library script, newest first',
      security,
      params: scriptIdParamsSchema,
      response: {
        200: jsonResponse('Versions', scriptListSchema),
        401: errorResponses.unauthorized,
        404: notFound,
      },
    },
    handler: async (request) => {
      const scripts = library.versions(request.params.scriptId);
      if (scripts.length === 0) throw scriptDoesNotExist(request.params.scriptId);
      return { scripts };
    },
  });

  app.get('/api/scripts/:scriptId/versions/:version', {
    schema: {
      tags: ['scripts'],
      summary: 'One version of a library script',
      security,
      params: scriptVersionParamsSchema,
      response: {
        200: jsonResponse('The version', libraryScriptSchema),
        401: errorResponses.unauthorized,
        404: notFound,
      },
    },
    handler: async (request) => {
      const script = library.get(request.params.scriptId, request.params.version);
      if (!script) throw scriptDoesNotExist(request.params.scriptId);
      return script;
    },
  });

  app.post('/api/scripts/validate', {
    schema: {
      tags: ['scripts'],
      summary: 'Check a script (or render and check a scriptRef) as a job would, without starting one',
      security,
      body: validateBodySchema,
      response: {
        ...inputErrors,
        200: jsonResponse('valid, the (rendered) script, and every problem', validationSchema),
        404: notFound,
        409: errorResponse('SCRIPT_ARCHIVED: the script is archived'),
      },
    },
    handler: async (request) => {
      const body = request.body;
      let script: string;
      if ('scriptRef' in body) {
        const outcome = renderRef(library, body.scriptRef);
        if (outcome.kind === 'invalid') return { valid: false, problems: outcome.problems };
        script = renderedOrThrow(outcome).script;
      } else script = body.script;
      const problems = dialectProblems(script, dialect);
      return { valid: problems.length === 0, script, problems };
    },
  });
};
