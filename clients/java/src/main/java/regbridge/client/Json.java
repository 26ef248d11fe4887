package regbridge.client;

import java.math.BigDecimal;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A small JSON (RFC 8259) reader and writer, enough for the device's bodies, so the client needs
 * nothing but the JDK. Reading gives {@code Map<String, Object>} (insertion order), {@code List},
 * {@code String}, {@code Long} (integers that fit), {@code BigDecimal} (other numbers),
 * {@code Boolean} and {@code null}. Strings are Java strings (UTF-16): {@code \\uD83D\\uDE00}
 * escapes become the same surrogate pair a raw UTF-8 emoji decodes to.
 */
final class Json {
    private Json() {}

    /** Parses one JSON text; anything after it but whitespace is an error. */
    static Object parse(String text) {
        Reader reader = new Reader(text);
        reader.skipWhitespace();
        Object value = reader.readValue(0);
        reader.skipWhitespace();
        if (reader.pos != text.length()) throw reader.error("unexpected data after the value");
        return value;
    }

    /** Writes a JSON object whose values are strings (the only request bodies the client sends). */
    static String writeObject(Map<String, String> fields) {
        StringBuilder out = new StringBuilder(64);
        out.append('{');
        boolean first = true;
        for (Map.Entry<String, String> field : fields.entrySet()) {
            if (!first) out.append(',');
            first = false;
            writeString(out, field.getKey());
            out.append(':');
            if (field.getValue() == null) out.append("null");
            else writeString(out, field.getValue());
        }
        return out.append('}').toString();
    }

    /**
     * Writes a JSON string. Non-ASCII text is written as is (the body is sent as UTF-8); control
     * characters, quote and backslash are escaped; a lone surrogate, which UTF-8 cannot encode, is
     * written as a {@code \\u} escape so it reaches the device unchanged instead of as '?'.
     */
    static void writeString(StringBuilder out, String value) {
        out.append('"');
        int length = value.length();
        for (int i = 0; i < length; i++) {
            char c = value.charAt(i);
            switch (c) {
                case '"': out.append("\\\""); break;
                case '\\': out.append("\\\\"); break;
                case '\n': out.append("\\n"); break;
                case '\r': out.append("\\r"); break;
                case '\t': out.append("\\t"); break;
                case '\b': out.append("\\b"); break;
                case '\f': out.append("\\f"); break;
                default:
                    if (c < 0x20) {
                        unicodeEscape(out, c);
                    } else if (Character.isHighSurrogate(c)) {
                        if (i + 1 < length && Character.isLowSurrogate(value.charAt(i + 1))) {
                            out.append(c).append(value.charAt(++i));
                        } else {
                            unicodeEscape(out, c);
                        }
                    } else if (Character.isLowSurrogate(c)) {
                        unicodeEscape(out, c);
                    } else {
                        out.append(c);
                    }
            }
        }
        out.append('"');
    }

    private static void unicodeEscape(StringBuilder out, char c) {
        out.append("\\u");
        String hex = Integer.toHexString(c);
        for (int pad = hex.length(); pad < 4; pad++) out.append('0');
        out.append(hex);
    }

    /** Why a text is not JSON, with the offset where reading stopped. */
    static final class JsonException extends RuntimeException {
        private static final long serialVersionUID = 1L;

        JsonException(String message) {
            super(message);
        }
    }

    private static final class Reader {
        /** Deeper nesting than any device body has; bounds the recursion on hostile input. */
        private static final int MAX_DEPTH = 64;
        private final String text;
        private int pos;

        Reader(String text) {
            this.text = text;
        }

        JsonException error(String what) {
            return new JsonException("invalid JSON at offset " + pos + ": " + what);
        }

        void skipWhitespace() {
            while (pos < text.length()) {
                char c = text.charAt(pos);
                if (c != ' ' && c != '\t' && c != '\n' && c != '\r') return;
                pos++;
            }
        }

        Object readValue(int depth) {
            if (depth > MAX_DEPTH) throw error("nested too deeply");
            if (pos >= text.length()) throw error("unexpected end");
            char c = text.charAt(pos);
            switch (c) {
                case '{': return readObject(depth + 1);
                case '[': return readArray(depth + 1);
                case '"': return readString();
                case 't': return readLiteral("true", Boolean.TRUE);
                case 'f': return readLiteral("false", Boolean.FALSE);
                case 'n': return readLiteral("null", null);
                default:
                    if (c == '-' || (c >= '0' && c <= '9')) return readNumber();
                    throw error("unexpected character '" + c + "'");
            }
        }

        private Object readLiteral(String word, Object value) {
            if (!text.startsWith(word, pos)) throw error("expected " + word);
            pos += word.length();
            return value;
        }

        private Map<String, Object> readObject(int depth) {
            Map<String, Object> object = new LinkedHashMap<>();
            pos++;
            skipWhitespace();
            if (peek() == '}') {
                pos++;
                return object;
            }
            for (;;) {
                skipWhitespace();
                if (peek() != '"') throw error("expected a member name");
                String name = readString();
                skipWhitespace();
                expect(':');
                skipWhitespace();
                object.put(name, readValue(depth));
                skipWhitespace();
                char c = next();
                if (c == '}') return object;
                if (c != ',') throw error("expected ',' or '}'");
            }
        }

        private List<Object> readArray(int depth) {
            List<Object> array = new ArrayList<>();
            pos++;
            skipWhitespace();
            if (peek() == ']') {
                pos++;
                return array;
            }
            for (;;) {
                skipWhitespace();
                array.add(readValue(depth));
                skipWhitespace();
                char c = next();
                if (c == ']') return array;
                if (c != ',') throw error("expected ',' or ']'");
            }
        }

        private String readString() {
            pos++; // opening quote
            StringBuilder out = new StringBuilder();
            for (;;) {
                if (pos >= text.length()) throw error("unterminated string");
                char c = text.charAt(pos++);
                if (c == '"') return out.toString();
                if (c < 0x20) throw error("control character in string");
                if (c != '\\') {
                    out.append(c);
                    continue;
                }
                char escape = next();
                switch (escape) {
                    case '"': out.append('"'); break;
                    case '\\': out.append('\\'); break;
                    case '/': out.append('/'); break;
                    case 'b': out.append('\b'); break;
                    case 'f': out.append('\f'); break;
                    case 'n': out.append('\n'); break;
                    case 'r': out.append('\r'); break;
                    case 't': out.append('\t'); break;
                    // One UTF-16 unit; a pair of escapes (\\uD83D\\uDE00) yields the pair as is.
                    case 'u': out.append(readHex4()); break;
                    default: throw error("invalid escape '\\" + escape + "'");
                }
            }
        }

        private char readHex4() {
            if (pos + 4 > text.length()) throw error("truncated \\u escape");
            int value = 0;
            for (int i = 0; i < 4; i++) {
                int digit = Character.digit(text.charAt(pos++), 16);
                if (digit < 0) throw error("invalid \\u escape");
                value = value * 16 + digit;
            }
            return (char) value;
        }

        private Object readNumber() {
            int start = pos;
            if (peek() == '-') pos++;
            if (peek() == '0') {
                pos++;
            } else if (isDigit(peek())) {
                while (isDigit(peek())) pos++;
            } else {
                throw error("invalid number");
            }
            boolean integral = true;
            if (peek() == '.') {
                integral = false;
                pos++;
                if (!isDigit(peek())) throw error("invalid number");
                while (isDigit(peek())) pos++;
            }
            if (peek() == 'e' || peek() == 'E') {
                integral = false;
                pos++;
                if (peek() == '+' || peek() == '-') pos++;
                if (!isDigit(peek())) throw error("invalid number");
                while (isDigit(peek())) pos++;
            }
            String literal = text.substring(start, pos);
            if (integral && literal.length() <= 18) return Long.valueOf(literal);
            BigDecimal decimal = new BigDecimal(literal);
            if (integral) {
                try {
                    return decimal.longValueExact();
                } catch (ArithmeticException tooLarge) {
                    return decimal;
                }
            }
            return decimal;
        }

        private static boolean isDigit(char c) {
            return c >= '0' && c <= '9';
        }

        /** The next character, or NUL at the end (never valid where peek is used). */
        private char peek() {
            return pos < text.length() ? text.charAt(pos) : '\0';
        }

        private char next() {
            if (pos >= text.length()) throw error("unexpected end");
            return text.charAt(pos++);
        }

        private void expect(char c) {
            if (next() != c) throw error("expected '" + c + "'");
        }
    }
}
