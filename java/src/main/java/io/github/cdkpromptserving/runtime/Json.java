package io.github.cdkpromptserving.runtime;

import java.math.BigDecimal;
import java.math.MathContext;
import java.math.RoundingMode;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;

/**
 * The JSON values of the wire contract as JavaScript sees them: objects are insertion-ordered {@code Map<String, Object>},
 * arrays {@code List<Object>}, numbers {@code Double} (what {@code JSON.parse} and {@code Number(attr.N)} give), strings,
 * booleans and {@code null}. Printing follows {@code JSON.stringify} and JavaScript's {@code Number#toString} exactly,
 * so the canonical JSON (checksums) and rendered JSON values are byte-identical with the Node and Python clients.
 */
public final class Json {
  private Json() {}

  /** Parses JSON text (numbers become doubles, as {@code JSON.parse} reads them: 1e400 is Infinity). */
  public static Object parse(String text) {
    JsonParser p = new JsonParser(text);
    p.ws();
    Object v = p.value(0);
    p.ws();
    if (p.i != text.length()) throw new IllegalArgumentException("trailing characters at " + p.i);
    return v;
  }

  /** {@code JSON.stringify(value)}: key order as held; non-finite numbers print {@code null}. */
  public static String stringify(Object value) {
    StringBuilder sb = new StringBuilder();
    write(sb, value, false);
    return sb.toString();
  }

  /** Canonical JSON: keys sorted by UTF-16 code unit, no whitespace; non-finite numbers and binary refused. */
  public static String canonical(Object value) {
    StringBuilder sb = new StringBuilder();
    write(sb, value, true);
    return sb.toString();
  }

  @SuppressWarnings("unchecked")
  private static void write(StringBuilder sb, Object value, boolean canonical) {
    if (value == null) {
      sb.append("null");
    } else if (value instanceof String) {
      quote(sb, (String) value);
    } else if (value instanceof Boolean) {
      sb.append(((Boolean) value) ? "true" : "false");
    } else if (value instanceof Number) {
      double d = ((Number) value).doubleValue();
      if (!Double.isFinite(d)) {
        if (canonical) throw new IllegalArgumentException("cannot canonicalise non-finite number " + numberToString(d));
        sb.append("null");
      } else {
        sb.append(numberToString(d));
      }
    } else if (value instanceof List) {
      sb.append('[');
      boolean first = true;
      for (Object v : (List<Object>) value) {
        if (!first) sb.append(',');
        first = false;
        write(sb, v, canonical);
      }
      sb.append(']');
    } else if (value instanceof Map) {
      Map<String, Object> map = (Map<String, Object>) value;
      List<String> keys = new ArrayList<>(map.keySet());
      if (canonical) Collections.sort(keys);
      sb.append('{');
      boolean first = true;
      for (String k : keys) {
        if (!first) sb.append(',');
        first = false;
        quote(sb, k);
        sb.append(':');
        write(sb, map.get(k), canonical);
      }
      sb.append('}');
    } else if (value instanceof byte[]) {
      throw new IllegalArgumentException("binary values are not allowed in prompt content");
    } else {
      throw new IllegalArgumentException("not a JSON value: " + value.getClass().getName());
    }
  }

  /** A string as {@code JSON.stringify} quotes it (lone surrogates escaped, as well-formed stringify does). */
  public static void quote(StringBuilder sb, String s) {
    sb.append('"');
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      switch (c) {
        case '"': sb.append("\\\""); break;
        case '\\': sb.append("\\\\"); break;
        case '\b': sb.append("\\b"); break;
        case '\f': sb.append("\\f"); break;
        case '\n': sb.append("\\n"); break;
        case '\r': sb.append("\\r"); break;
        case '\t': sb.append("\\t"); break;
        default:
          if (c < 0x20) {
            sb.append(String.format("\\u%04x", (int) c));
          } else if (Character.isHighSurrogate(c)) {
            if (i + 1 < s.length() && Character.isLowSurrogate(s.charAt(i + 1))) {
              sb.append(c).append(s.charAt(++i));
            } else {
              sb.append(String.format("\\u%04x", (int) c));
            }
          } else if (Character.isLowSurrogate(c)) {
            sb.append(String.format("\\u%04x", (int) c));
          } else {
            sb.append(c);
          }
      }
    }
    sb.append('"');
  }

  /** JavaScript's {@code String(number)}: the shortest round-trip digits, JavaScript's exponent rules. */
  public static String numberToString(double d) {
    if (Double.isNaN(d)) return "NaN";
    if (d == Double.POSITIVE_INFINITY) return "Infinity";
    if (d == Double.NEGATIVE_INFINITY) return "-Infinity";
    if (d == 0) return "0";
    if (d == Math.rint(d) && Math.abs(d) < 1e15) return Long.toString((long) d);
    String sign = d < 0 ? "-" : "";
    BigDecimal exact = new BigDecimal(Math.abs(d));
    BigDecimal shortest = null;
    for (int p = 1; p <= 17; p++) {
      BigDecimal r = exact.round(new MathContext(p, RoundingMode.HALF_EVEN));
      if (r.doubleValue() == Math.abs(d)) {
        shortest = r;
        break;
      }
    }
    if (shortest == null) shortest = exact.round(new MathContext(17, RoundingMode.HALF_EVEN));
    BigDecimal stripped = shortest.stripTrailingZeros();
    String digits = stripped.unscaledValue().toString();
    int k = digits.length();
    int n = k - stripped.scale(); // value = 0.digits × 10^n
    StringBuilder sb = new StringBuilder(sign);
    if (k <= n && n <= 21) {
      sb.append(digits);
      for (int i = 0; i < n - k; i++) sb.append('0');
    } else if (0 < n && n <= 21) {
      sb.append(digits, 0, n).append('.').append(digits, n, k);
    } else if (-6 < n && n <= 0) {
      sb.append("0.");
      for (int i = 0; i < -n; i++) sb.append('0');
      sb.append(digits);
    } else {
      int e = n - 1;
      sb.append(digits.charAt(0));
      if (k > 1) sb.append('.').append(digits, 1, k);
      sb.append('e').append(e >= 0 ? "+" : "-").append(Math.abs(e));
    }
    return sb.toString();
  }

  /** {@code Number(text)} for the text of an environment variable: NaN when JavaScript would say NaN. */
  public static double jsNumber(String raw) {
    String s = trimJs(raw);
    if (s.isEmpty()) return 0;
    if (s.length() > 2 && s.charAt(0) == '0') {
      char x = Character.toLowerCase(s.charAt(1));
      int radix = x == 'x' ? 16 : x == 'o' ? 8 : x == 'b' ? 2 : 0;
      if (radix != 0) {
        try {
          return new java.math.BigInteger(s.substring(2), radix).doubleValue();
        } catch (NumberFormatException e) {
          return Double.NaN;
        }
      }
    }
    if (s.equals("Infinity") || s.equals("+Infinity")) return Double.POSITIVE_INFINITY;
    if (s.equals("-Infinity")) return Double.NEGATIVE_INFINITY;
    if (!s.matches("[+-]?(\\d+\\.?\\d*|\\.\\d+)([eE][+-]?\\d+)?")) return Double.NaN;
    return Double.parseDouble(s);
  }

  /** JavaScript's whitespace and line terminators ({@code \s} in a JavaScript regular expression). */
  public static boolean isJsWhitespace(char c) {
    switch (c) {
      case '\t': case '\n': case 0x0b: case '\f': case '\r': case ' ': case 0xa0: case 0x1680:
      case 0x2028: case 0x2029: case 0x202f: case 0x205f: case 0x3000: case 0xfeff:
        return true;
      default:
        return c >= 0x2000 && c <= 0x200a;
    }
  }

  static String trimJs(String s) {
    int a = 0;
    int b = s.length();
    while (a < b && isJsWhitespace(s.charAt(a))) a++;
    while (b > a && isJsWhitespace(s.charAt(b - 1))) b--;
    return s.substring(a, b);
  }
}
