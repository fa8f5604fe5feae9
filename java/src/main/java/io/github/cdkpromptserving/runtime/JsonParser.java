package io.github.cdkpromptserving.runtime;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** The reader behind {@link Json#parse}: JSON text to the values {@link Json} describes (numbers as doubles). */
final class JsonParser {
  final String s;
  int i;

  JsonParser(String s) {
    this.s = s;
  }

  void ws() {
    while (i < s.length()) {
      char c = s.charAt(i);
      if (c == ' ' || c == '\t' || c == '\n' || c == '\r') i++;
      else break;
    }
  }

  Object value(int depth) {
    if (depth > 512) throw new IllegalArgumentException("JSON nested too deeply");
    if (i >= s.length()) throw new IllegalArgumentException("unexpected end of JSON");
    char c = s.charAt(i);
    switch (c) {
      case '{': {
        i++;
        Map<String, Object> m = new LinkedHashMap<>();
        ws();
        if (peek('}')) {
          i++;
          return m;
        }
        while (true) {
          ws();
          String k = string();
          ws();
          expect(':');
          ws();
          m.put(k, value(depth + 1));
          ws();
          if (peek(',')) {
            i++;
            continue;
          }
          expect('}');
          return m;
        }
      }
      case '[': {
        i++;
        List<Object> l = new ArrayList<>();
        ws();
        if (peek(']')) {
          i++;
          return l;
        }
        while (true) {
          ws();
          l.add(value(depth + 1));
          ws();
          if (peek(',')) {
            i++;
            continue;
          }
          expect(']');
          return l;
        }
      }
      case '"':
        return string();
      case 't':
        lit("true");
        return Boolean.TRUE;
      case 'f':
        lit("false");
        return Boolean.FALSE;
      case 'n':
        lit("null");
        return null;
      default: {
        int start = i;
        if (peek('-')) i++;
        while (i < s.length() && "0123456789.eE+-".indexOf(s.charAt(i)) >= 0) i++;
        String num = s.substring(start, i);
        if (!num.matches("-?(0|[1-9]\\d*)(\\.\\d+)?([eE][+-]?\\d+)?")) throw new IllegalArgumentException("bad number " + num);
        return Double.parseDouble(num);
      }
    }
  }

  boolean peek(char c) {
    return i < s.length() && s.charAt(i) == c;
  }

  void expect(char c) {
    if (!peek(c)) throw new IllegalArgumentException("expected '" + c + "' at " + i);
    i++;
  }

  void lit(String word) {
    if (!s.startsWith(word, i)) throw new IllegalArgumentException("bad literal at " + i);
    i += word.length();
  }

  String string() {
    expect('"');
    StringBuilder sb = new StringBuilder();
    while (true) {
      if (i >= s.length()) throw new IllegalArgumentException("unterminated string");
      char c = s.charAt(i++);
      if (c == '"') return sb.toString();
      if (c == '\\') {
        char e = s.charAt(i++);
        switch (e) {
          case '"': sb.append('"'); break;
          case '\\': sb.append('\\'); break;
          case '/': sb.append('/'); break;
          case 'b': sb.append('\b'); break;
          case 'f': sb.append('\f'); break;
          case 'n': sb.append('\n'); break;
          case 'r': sb.append('\r'); break;
          case 't': sb.append('\t'); break;
          case 'u':
            sb.append((char) Integer.parseInt(s.substring(i, i + 4), 16));
            i += 4;
            break;
          default: throw new IllegalArgumentException("bad escape at " + i);
        }
      } else {
        if (c < 0x20) throw new IllegalArgumentException("control character in string");
        sb.append(c);
      }
    }
  }
}
