package io.github.cdkpromptserving.runtime;

import java.util.ArrayList;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** The L2 wire contract (src/schema/l2.ts): keys, stream and fill values, the epoch, tokens. */
public final class L2Schema {
  private L2Schema() {}

  public static final String KEY_PREFIX = "cdk-prompt-serving:v3";
  public static final int VALUE_TTL_SECONDS = 24 * 60 * 60;
  public static final long MAX_CLOCK_SKEW_MS = 5_000;
  private static final Pattern INCARNATION = Pattern.compile("\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}\\.\\d{3}");
  private static final Pattern SEQUENCE = Pattern.compile("\\d{1,64}");
  private static final Pattern EPOCH = Pattern.compile("(\\d{1,15}) (\\S+)");

  public static String itemKey(String table, String promptId, String sortKey) {
    return KEY_PREFIX + "/" + table + "/" + promptId + "/" + sortKey;
  }

  public static String catalogKey(String table) {
    return itemKey(table, Schema.CATALOG_ID, Schema.CURRENT);
  }

  public static String fillKey(String table, String promptId, String sortKey) {
    return KEY_PREFIX + "/" + table + "/#fill/" + promptId + "/" + sortKey;
  }

  public static String epochKey(String table) {
    return KEY_PREFIX + "/" + table + "/#epoch";
  }

  public static String keyPattern(String table) {
    return KEY_PREFIX + "/" + table + "/*";
  }

  public static String fillPattern(String table) {
    return KEY_PREFIX + "/" + table + "/#fill/*";
  }

  public static long fillTtlSeconds(long maxAgeMs, long staleWhileRevalidateMs) {
    if (maxAgeMs < 1000) return 0;
    return Math.max(1, (maxAgeMs + staleWhileRevalidateMs) / 1000);
  }

  static boolean isIncarnation(Object v) {
    return v instanceof String && INCARNATION.matcher((String) v).matches();
  }

  /** Orders two (incarnation, sequence) tokens: negative, 0, positive. */
  public static int compareTokens(String incA, String seqA, String incB, String seqB) {
    if (!incA.equals(incB)) return incA.compareTo(incB) < 0 ? -1 : 1;
    String x = seqA.replaceFirst("^0+", "");
    String y = seqB.replaceFirst("^0+", "");
    if (x.length() != y.length()) return x.length() - y.length();
    return Integer.signum(x.compareTo(y));
  }

  public static String encodeFillValue(String inc, long fetchedAt, Map<String, Object> dynamoJsonItem) {
    Map<String, Object> v = new LinkedHashMap<>();
    v.put("inc", inc);
    v.put("fetchedAt", (double) fetchedAt);
    v.put("item", dynamoJsonItem);
    return Json.stringify(v);
  }

  public static String encodeStreamValue(String inc, String seq, long writtenAt, Map<String, Object> dynamoJsonItem) {
    Map<String, Object> v = new LinkedHashMap<>();
    v.put("inc", inc);
    v.put("seq", seq);
    v.put("writtenAt", (double) writtenAt);
    v.put("item", dynamoJsonItem);
    return Json.stringify(v);
  }

  /** A decoded stream value: {@code item} null means the row was removed. */
  static final class StreamValue {
    final String inc;
    final String seq;
    final Map<String, Object> item;

    StreamValue(String inc, String seq, Map<String, Object> item) {
      this.inc = inc;
      this.seq = seq;
      this.item = item;
    }
  }

  static final class FillValue {
    final String inc;
    final long fetchedAt;
    final Map<String, Object> item;

    FillValue(String inc, long fetchedAt, Map<String, Object> item) {
      this.inc = inc;
      this.fetchedAt = fetchedAt;
      this.item = item;
    }
  }

  private static Map<String, Object> parseObject(String raw) {
    if (raw == null) return null;
    try {
      Object v = Json.parse(raw);
      return v instanceof Map ? Fixtures0.map(v) : null;
    } catch (RuntimeException e) {
      return null;
    }
  }

  private static Map<String, Object> itemOf(Object item, String promptId, String sortKey) {
    if (!(item instanceof Map)) return null;
    Map<String, Object> m = Fixtures0.map(item);
    Object pk = m.get(Schema.PARTITION_KEY);
    Object sk = m.get(Schema.SORT_KEY);
    if (!(pk instanceof Map) || !promptId.equals(Fixtures0.map(pk).get("S"))) return null;
    if (!(sk instanceof Map) || !sortKey.equals(Fixtures0.map(sk).get("S"))) return null;
    return m;
  }

  static StreamValue decodeStreamValue(String raw, String promptId, String sortKey) {
    Map<String, Object> v = parseObject(raw);
    if (v == null) return null;
    Object inc = v.get("inc");
    Object seq = v.get("seq");
    Object writtenAt = v.get("writtenAt");
    if (!isIncarnation(inc) || !(seq instanceof String) || !SEQUENCE.matcher((String) seq).matches()) return null;
    if (!(writtenAt instanceof Double) || !Double.isFinite((Double) writtenAt)) return null;
    if (v.containsKey("item") && v.get("item") == null) return new StreamValue((String) inc, (String) seq, null);
    Map<String, Object> item = itemOf(v.get("item"), promptId, sortKey);
    return item == null ? null : new StreamValue((String) inc, (String) seq, item);
  }

  static FillValue decodeFillValue(String raw, String promptId, String sortKey, long now) {
    Map<String, Object> v = parseObject(raw);
    if (v == null) return null;
    Object inc = v.get("inc");
    Object fetchedAt = v.get("fetchedAt");
    if (!v.containsKey("inc") || (inc != null && !isIncarnation(inc))) {
      if (v.containsKey("inc") || inc != null) return null;
      return null;
    }
    if (!(fetchedAt instanceof Double) || !Double.isFinite((Double) fetchedAt) || (Double) fetchedAt > now + MAX_CLOCK_SKEW_MS) return null;
    Map<String, Object> item = itemOf(v.get("item"), promptId, sortKey);
    return item == null ? null : new FillValue((String) inc, Math.min((long) (double) (Double) fetchedAt, now), item);
  }

  /** The incarnation an epoch value names, or null. */
  public static String epochIncarnation(String raw) {
    if (raw == null) return null;
    Matcher m = EPOCH.matcher(raw);
    return m.matches() && isIncarnation(m.group(2)) ? m.group(2) : null;
  }

  static long epochCounter(String raw) {
    Matcher m = raw == null ? null : EPOCH.matcher(raw);
    return m != null && m.matches() && isIncarnation(m.group(2)) ? Long.parseLong(m.group(1)) : -1;
  }

  /** DynamoDB JSON of an item (as decoded by DdbCodec) — binary as base64, numbers as their JavaScript text. */
  static Map<String, Object> toDynamoJson(Map<String, Object> item) {
    Map<String, Object> out = new LinkedHashMap<>();
    for (Map.Entry<String, Object> e : item.entrySet()) out.put(e.getKey(), toJsonValue(e.getValue()));
    return out;
  }

  @SuppressWarnings("unchecked")
  private static Map<String, Object> toJsonValue(Object v) {
    Map<String, Object> out = new LinkedHashMap<>();
    if (v == null) out.put("NULL", true);
    else if (v instanceof String) out.put("S", v);
    else if (v instanceof Number) out.put("N", Json.numberToString(((Number) v).doubleValue()));
    else if (v instanceof Boolean) out.put("BOOL", v);
    else if (v instanceof byte[]) out.put("B", Base64.getEncoder().encodeToString((byte[]) v));
    else if (v instanceof List) {
      List<Object> l = new ArrayList<>();
      for (Object x : (List<Object>) v) l.add(toJsonValue(x));
      out.put("L", l);
    } else if (v instanceof Map) out.put("M", toDynamoJson((Map<String, Object>) v));
    else throw new IllegalArgumentException("not an item value");
    return out;
  }

  /** An item from DynamoDB JSON, or null when a value has no DynamoDB type (the value is then not used). */
  static Map<String, Object> fromDynamoJson(Map<String, Object> item) {
    try {
      Map<String, Object> out = new LinkedHashMap<>();
      for (Map.Entry<String, Object> e : item.entrySet()) out.put(e.getKey(), fromJsonValue(e.getValue()));
      return out;
    } catch (RuntimeException e) {
      return null;
    }
  }

  @SuppressWarnings("unchecked")
  private static Object fromJsonValue(Object av) {
    if (!(av instanceof Map)) throw new IllegalArgumentException("not an attribute value");
    Map<String, Object> a = (Map<String, Object>) av;
    if (a.get("S") instanceof String) return a.get("S");
    if (a.get("N") instanceof String) return Double.parseDouble((String) a.get("N"));
    if (a.get("BOOL") instanceof Boolean) return a.get("BOOL");
    if (a.containsKey("NULL")) return null;
    if (a.get("B") instanceof String) return Base64.getDecoder().decode((String) a.get("B"));
    if (a.get("L") instanceof List) {
      List<Object> l = new ArrayList<>();
      for (Object x : (List<Object>) a.get("L")) l.add(fromJsonValue(x));
      return l;
    }
    if (a.get("M") instanceof Map) {
      Map<String, Object> out = new LinkedHashMap<>();
      for (Map.Entry<String, Object> e : ((Map<String, Object>) a.get("M")).entrySet()) out.put(e.getKey(), fromJsonValue(e.getValue()));
      return out;
    }
    if (a.get("SS") instanceof List) return new ArrayList<>((List<Object>) a.get("SS"));
    if (a.get("NS") instanceof List) {
      List<Object> l = new ArrayList<>();
      for (Object x : (List<Object>) a.get("NS")) l.add(Double.parseDouble((String) x));
      return l;
    }
    throw new IllegalArgumentException("unsupported attribute value " + a.keySet());
  }

  /** Unchecked casts in one place. */
  static final class Fixtures0 {
    @SuppressWarnings("unchecked")
    static Map<String, Object> map(Object o) {
      return (Map<String, Object>) o;
    }
  }
}
