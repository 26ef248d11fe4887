/**
 * Reads a Server-Sent Events response as text, as far as the tests need it: the controller
 * service's `/api/events` (test/controller/controller-service-api.test.ts, test/controller/controller-event-stream.test.ts).
 */
export interface EventStreamReader {
  /** Everything read since the start or the last clear(). */
  readonly text: string;
  /** Reads on until `pattern` matches the text; throws if the stream ends first. */
  readUntil(pattern: RegExp): Promise<void>;
  clear(): void;
  cancel(): Promise<void>;
}

export function readEventStream(response: Response): EventStreamReader {
  const reader = response.body!.getReader();
  const decoder = new TextDecoder();
  let text = '';
  return {
    get text() {
      return text;
    },
    async readUntil(pattern) {
      while (!pattern.test(text)) {
        const { value, done } = await reader.read();
        if (done) throw new Error(`stream ended: ${text}`);
        text += decoder.decode(value, { stream: true });
      }
    },
    clear() {
      text = '';
    },
    cancel: () => reader.cancel(),
  };
}
