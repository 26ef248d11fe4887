/** Whether `text` holds a C0 control character or DEL (a line break in a name, a config value). */
export function hasControlCharacters(text: string): boolean {
  return [...text].some((c) => c < ' ' || c === '\u007f');
}
