/**
 * A cheap acceptance check in front of `scriptSubmissionSchema` (topics.ts), as the controller
 * has for what it receives (controller/message-checks.ts): a submission the check accepts is
 * taken as JSON.parse made it; anything else goes through zod as before, so a refusal reads
 * exactly as it always did.
 *
 * Why: every script a register receives over MQTT was decoded by zod's object parse (a copy and
 * a walk of every field), about 4 % of a register's busy time in a 500-register fan-out
 * (docs/benchmarks.md, "Fourth pass (register hosts)"). The check accepts only what the schema
 * accepts unchanged: no key zod would strip, every value of the type and length the schema
 * demands; test/submission-check.test.ts compares both on every case.
 */
import { isPlainObject, keysOf, onlyKeys } from './plain-checks.ts';
import { replyTopicSchema, requestIdSchema, scriptSubmissionSchema } from './topics.ts';

const KEYS = keysOf(scriptSubmissionSchema);
// Lengths read from the schemas themselves, so the check cannot drift from them.
const REQUEST_ID_MAX = requestIdSchema.maxLength ?? 0;
/**
 * replyTopicSchema: 1 to its maximum length, no `+`, `#` or NUL, not starting with `$`. Anything
 * this refuses may still be valid: zod decides it.
 */
const REPLY_TOPIC = new RegExp(`^[^$+#\\0][^+#\\0]{0,${(replyTopicSchema.maxLength ?? 1) - 1}}$`);

export function isPlainSubmission(value: unknown): boolean {
  if (!isPlainObject(value) || !onlyKeys(value, KEYS)) return false;
  const v = value;
  if (typeof v.script !== 'string') return false;
  const { requestId, replyTo, notAfter } = v;
  if (
    requestId !== undefined &&
    (typeof requestId !== 'string' || requestId.length === 0 || requestId.length > REQUEST_ID_MAX)
  )
    return false;
  if (replyTo !== undefined && (typeof replyTo !== 'string' || !REPLY_TOPIC.test(replyTo))) return false;
  return (
    notAfter === undefined ||
    (typeof notAfter === 'number' && Number.isSafeInteger(notAfter) && notAfter >= 0)
  );
}
