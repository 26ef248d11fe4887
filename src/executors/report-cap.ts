/**
 * The report size limit (`outputCap`, bytes of UTF-8) shared by both executors: a report is the
 * first `cap` bytes of what the script produced, cut back to a whole character, so the service
 * never holds more than the cap per task whatever a script prints.
 */

/** The longest prefix of `bytes` of at most `max` bytes that does not split a UTF-8 character. */
export function utf8Prefix(bytes: Buffer, max: number): Buffer {
  if (bytes.length <= max) return bytes;
  let end = max;
  // Step back over continuation bytes (10xxxxxx) to the start of the character cut in two.
  while (end > 0 && end > max - 3 && (bytes[end]! & 0xc0) === 0x80) end -= 1;
  return bytes.subarray(0, end);
}

/** Report lines joined with `\n`, keeping at most `cap` bytes. */
export class CappedLines {
  private readonly lines: string[] = [];
  private bytes = 0;
  private full = false;

  constructor(private readonly cap: number) {}

  /** True once something was dropped. */
  get truncated(): boolean {
    return this.full;
  }

  add(line: string): void {
    if (this.full) return;
    const separator = this.lines.length > 0 ? 1 : 0;
    const size = Buffer.byteLength(line) + separator;
    if (this.bytes + size <= this.cap) {
      this.lines.push(line);
      this.bytes += size;
      return;
    }
    this.full = true;
    const room = this.cap - this.bytes - separator;
    if (room > 0) {
      this.lines.push(utf8Prefix(Buffer.from(line), room).toString('utf8'));
      this.bytes = this.cap;
    }
  }

  text(): string {
    return this.lines.join('\n');
  }
}
