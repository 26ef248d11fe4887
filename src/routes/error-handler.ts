/**
 * One error body for everything (docs/api.md): `{statusCode, error, code, message}`
 * (+ `id`, `status` for TASK_DOES_NOT_EXIST), whether the error is ours (ApiError), the task
 * engine's (DomainError, translated by api-error.ts), a failed zod validation, one of fastify's
 * own (bad JSON, wrong content type, body too large), an unknown route or a bug (500, logged
 * with its stack; the client sees no internals).
 */
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { hasZodFastifySchemaValidationErrors } from 'fastify-type-provider-zod';
import { DomainError, type HttpErrorCode, hasHttpStatus } from '../errors.ts';
import { ApiError, fromDomainError } from './api-error.ts';

interface ValidationIssue {
  instancePath: string;
  message?: string;
}

const WHERE: Record<string, string> = {
  body: 'body field',
  querystring: 'query parameter',
  params: 'path parameter',
  headers: 'header',
};

/** "body field 'vendorScript' is required; query parameter 'waitMs' must be ...". */
export function validationMessage(context: string | undefined, issues: readonly ValidationIssue[]): string {
  const parts = issues.map((issue) => {
    const path = issue.instancePath.replace(/^\//, '').replaceAll('/', '.');
    const where = path ? `${WHERE[context ?? ''] ?? context ?? 'request'} '${path}'` : (context ?? 'request');
    const message = issue.message ?? 'is invalid';
    // Our schemas use predicates ("is required"); zod's own messages are sentences.
    return /^[a-z]/.test(message) ? `${where} ${message}` : `${where}: ${message}`;
  });
  return [...new Set(parts)].join('; ');
}

/** fastify's own errors, by code, as contract errors. */
function fromFastifyError(error: FastifyError, bodyLimit: number): ApiError | undefined {
  switch (error.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new ApiError('SCRIPT_TOO_LARGE', `Request body is larger than ${bodyLimit} bytes`);
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new ApiError('UNSUPPORTED_MEDIA_TYPE', 'Content-Type must be application/json');
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return new ApiError('INVALID_REQUEST', 'Body is empty but Content-Type is application/json');
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      // Also prototype poisoning (`__proto__` keys). The parser's own message, which would quote
      // the body (and maybe a password), is never passed on.
      return new ApiError('INVALID_REQUEST', 'Body is not valid JSON');
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return new ApiError('INVALID_REQUEST', 'Body size does not match Content-Length');
    default:
      break;
  }
  const status = error.statusCode ?? 500;
  if (status >= 400 && status < 500) {
    const byStatus: Record<number, HttpErrorCode> = {
      404: 'ROUTE_NOT_FOUND',
      413: 'SCRIPT_TOO_LARGE',
      415: 'UNSUPPORTED_MEDIA_TYPE',
    };
    return new ApiError(byStatus[status] ?? 'INVALID_REQUEST', error.message);
  }
  return undefined;
}

export function sendApiError(reply: FastifyReply, error: ApiError): FastifyReply {
  // Bypass the route's response schema: error bodies are exactly what toBody() says.
  return reply
    .code(error.statusCode)
    .headers(error.headers)
    .type('application/json; charset=utf-8')
    .serializer(JSON.stringify)
    .send(error.toBody());
}

export function installErrorHandling(app: FastifyInstance, bodyLimit: number): void {
  app.setErrorHandler((error: FastifyError, request: FastifyRequest, reply: FastifyReply) => {
    if (error instanceof ApiError) return sendApiError(reply, error);
    if (error instanceof DomainError) {
      if (!hasHttpStatus(error.code)) request.log.error({ err: error }, 'a domain error without a REST form');
      return sendApiError(reply, fromDomainError(error));
    }
    if (hasZodFastifySchemaValidationErrors(error)) {
      return sendApiError(
        reply,
        new ApiError('INVALID_REQUEST', validationMessage(error.validationContext, error.validation)),
      );
    }
    const mapped = fromFastifyError(error, bodyLimit);
    if (mapped) return sendApiError(reply, mapped);
    request.log.error({ err: error }, 'unexpected error while answering a request');
    return sendApiError(
      reply,
      new ApiError('INTERNAL_ERROR', 'Internal error; the service logged the details'),
    );
  });

  app.setNotFoundHandler((request, reply) => {
    const path = request.url.split('?')[0];
    sendApiError(reply, new ApiError('ROUTE_NOT_FOUND', `No route for ${request.method} ${path}`));
  });
}
