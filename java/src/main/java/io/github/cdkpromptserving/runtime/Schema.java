package io.github.cdkpromptserving.runtime;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The wire contract (src/schema/ of the construct): keys, prompt ids, the Bloom catalog, the checksum, label names,
 * rollout maps and buckets, template placeholders. Every rule here answers the conformance fixtures as the Node and
 * Python clients do.
 */
public final class Schema {
  private Schema() {}

  public static final String PARTITION_KEY = "prompt_id";
  public static final String SORT_KEY = "version";
  public static final String CURRENT = "CURRENT";
  public static final String RESERVED_PREFIX = "#";
  public static final String CATALOG_ID = "#catalog";
  public static final int MAX_VERSION_NUMBER = 999_999;
  public static final int MAX_PROMPT_ID_BYTES = 1024;
  public static final String PROMPT_ID_RULE = "1 to 1,024 bytes of UTF-8, not starting with '#'";
  public static final String LABEL_SORT_KEY_PREFIX = "LABEL#";
  public static final int ROLLOUT_SCALE = 10_000;
  public static final int BLOOM_MIN_BITS = 1024;
  public static final int BLOOM_MAX_HASHES = 16;
  public static final int BLOOM_MAX_BITS = 400 * 1024 * 8;
  public static final double BLOOM_FALSE_POSITIVE_RATE = 0.01;

  /** Attributes that describe an item rather than the prompt (everything else is content). */
  public static final Set<String> METADATA_ATTRIBUTES = Set.of("prompt_id", "version", "version_number", "latest_version_number",
      "checksum", "status", "source", "source_version", "source_checksum", "source_revision", "source_updated_at", "source_read_at",
      "synced_at", "activated_at", "activated_by", "schema_version", "revision");
  /** Attributes of a label item that are not prompt content. */
  public static final Set<String> LABEL_ITEM_ATTRIBUTES = Set.of("label", "moved_at", "moved_by", "source_deleted_at", "rollout");

  // -- prompt ids ------------------------------------------------------------------------------------------------

  /** Bytes of {@code id} in UTF-8, or -1 when it holds a lone surrogate. */
  public static int utf8ByteLength(String id) {
    int bytes = 0;
    for (int i = 0; i < id.length(); i++) {
      char c = id.charAt(i);
      if (c < 0x80) bytes += 1;
      else if (c < 0x800) bytes += 2;
      else if (Character.isHighSurrogate(c)) {
        if (i + 1 >= id.length() || !Character.isLowSurrogate(id.charAt(i + 1))) return -1;
        bytes += 4;
        i++;
      } else if (Character.isLowSurrogate(c)) return -1;
      else bytes += 3;
    }
    return bytes;
  }

  /** Why {@code id} cannot be a prompt id, or null when it can. */
  public static String promptIdProblem(Object id) {
    if (!(id instanceof String)) return "a prompt id must be a string, got " + jsTypeOf(id);
    String s = (String) id;
    if (s.isEmpty()) return "a prompt id must not be empty";
    if (s.startsWith(RESERVED_PREFIX)) return "prompt ids starting with '#' are reserved";
    int bytes = utf8ByteLength(s);
    if (bytes < 0) return "a prompt id must be well-formed Unicode (it holds a lone surrogate)";
    if (bytes > MAX_PROMPT_ID_BYTES) return "a prompt id must be at most " + MAX_PROMPT_ID_BYTES + " bytes of UTF-8, got " + bytes;
    return null;
  }

  public static boolean isValidPromptId(Object id) {
    return promptIdProblem(id) == null;
  }

  /** Sort key of version {@code n}: {@code v} and six digits. */
  public static String versionKey(int n) {
    if (n < 1 || n > MAX_VERSION_NUMBER) throw new IllegalArgumentException("version number must be an integer from 1 to " + MAX_VERSION_NUMBER + ", got " + n);
    return String.format("v%06d", n);
  }

  /** Inverse of {@link #versionKey}; -1 for anything else. */
  public static int parseVersionKey(String key) {
    if (key == null || !key.matches("v\\d{6}")) return -1;
    int n = Integer.parseInt(key.substring(1));
    return n >= 1 ? n : -1;
  }

  // -- encodings -------------------------------------------------------------------------------------------------

  /** UTF-8 as Node's {@code Buffer.from(s, 'utf8')} writes it: a pair is one character, a lone surrogate U+FFFD. */
  public static byte[] jsUtf8(String s) {
    boolean wellFormed = utf8ByteLength(s) >= 0;
    if (wellFormed) return s.getBytes(StandardCharsets.UTF_8);
    StringBuilder sb = new StringBuilder(s.length());
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      if (Character.isHighSurrogate(c) && i + 1 < s.length() && Character.isLowSurrogate(s.charAt(i + 1))) {
        sb.append(c).append(s.charAt(++i));
      } else if (Character.isSurrogate(c)) {
        sb.append('\ufffd');
      } else {
        sb.append(c);
      }
    }
    return sb.toString().getBytes(StandardCharsets.UTF_8);
  }

  static byte[] sha256(byte[] data) {
    try {
      return MessageDigest.getInstance("SHA-256").digest(data);
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }

  static String hex(byte[] bytes) {
    StringBuilder sb = new StringBuilder(bytes.length * 2);
    for (byte b : bytes) sb.append(Character.forDigit((b >> 4) & 0xf, 16)).append(Character.forDigit(b & 0xf, 16));
    return sb.toString();
  }

  private static long uint32(byte[] d, int at) {
    return ((d[at] & 0xffL) << 24) | ((d[at + 1] & 0xffL) << 16) | ((d[at + 2] & 0xffL) << 8) | (d[at + 3] & 0xffL);
  }

  // -- Bloom catalog ---------------------------------------------------------------------------------------------

  /** {bits, hashes} of the filter the sync sizes for {@code count} ids. */
  public static int[] bloomParameters(int count) {
    int n = Math.max(1, count);
    double ideal = Math.ceil((-n * Math.log(BLOOM_FALSE_POSITIVE_RATE)) / (Math.log(2) * Math.log(2)));
    int bits = (int) Math.max(BLOOM_MIN_BITS, Math.ceil(ideal / 8) * 8);
    int hashes = (int) Math.min(BLOOM_MAX_HASHES, Math.max(1, jsRound(((double) bits / n) * Math.log(2))));
    return new int[] {bits, hashes};
  }

  private static long jsRound(double x) {
    return (long) Math.floor(x + 0.5);
  }

  public static long[] bloomIndexes(String id, long bits, int hashes) {
    byte[] digest = sha256(jsUtf8(id));
    long h1 = uint32(digest, 0);
    long h2 = uint32(digest, 4);
    long[] out = new long[hashes];
    for (int i = 0; i < hashes; i++) out[i] = (h1 + i * h2) % bits;
    return out;
  }

  public static byte[] bloomBuild(Iterable<String> ids, int bits, int hashes) {
    byte[] bytes = new byte[(bits + 7) / 8];
    for (String id : ids) for (long j : bloomIndexes(id, bits, hashes)) bytes[(int) (j >> 3)] |= (byte) (1 << (j & 7));
    return bytes;
  }

  public static boolean bloomMightContain(byte[] bytes, long bits, int hashes, String id) {
    for (long j : bloomIndexes(id, bits, hashes)) {
      int at = (int) (j >> 3);
      int b = at < bytes.length ? bytes[at] & 0xff : 0;
      if ((b & (1 << (j & 7))) == 0) return false;
    }
    return true;
  }

  static boolean isWhole(Object v) {
    if (!(v instanceof Number)) return false;
    double d = ((Number) v).doubleValue();
    return Double.isFinite(d) && d == Math.rint(d);
  }

  /** Why a catalog item cannot be trusted (readers ignore it), or null when it is consistent (see {@link CatalogSchema}). */
  public static String catalogProblem(Object bloom, Object bits, Object hashes, Object count, Object revision) {
    return CatalogSchema.problem(bloom, bits, hashes, count, revision);
  }

  // -- checksum --------------------------------------------------------------------------------------------------

  /** The content part of an item (everything but the metadata attributes). */
  public static Map<String, Object> contentOf(Map<String, Object> item) {
    Map<String, Object> out = new LinkedHashMap<>();
    for (Map.Entry<String, Object> e : item.entrySet()) if (!METADATA_ATTRIBUTES.contains(e.getKey())) out.put(e.getKey(), e.getValue());
    return out;
  }

  /** {@code sha256:} and 64 lowercase hex digits of the canonical JSON of the content. */
  public static String checksum(Map<String, Object> content) {
    return "sha256:" + hex(sha256(jsUtf8(Json.canonical(contentOf(content)))));
  }

  // -- labels and rollouts ---------------------------------------------------------------------------------------

  private static final Pattern LABEL_NAME = Pattern.compile("[a-z][a-z0-9_-]{0,62}");

  /** Why {@code name} cannot be a label name, or null. */
  public static String labelNameProblem(Object name) {
    if (!(name instanceof String)) return "a label name must be a string, got " + jsTypeOf(name);
    String s = (String) name;
    if (!LABEL_NAME.matcher(s).matches()) {
      String shown = s.length() > 80 ? s.substring(0, 60) + "…" : s;
      return "label name " + Json.stringify(shown) + " must match ^[a-z][a-z0-9_-]{0,62}$ (a lowercase letter, then up to 62 lowercase letters, digits, '-' or '_')";
    }
    if (s.equals("current") || s.equals("latest")) return "label name '" + s + "' is reserved (current, latest)";
    return null;
  }

  /** The sticky bucket: first 4 bytes of SHA-256(UTF-8 of id NUL label NUL key), big-endian, mod 10000. */
  public static int rolloutBucket(String promptId, String label, String key) {
    byte[] digest = sha256(jsUtf8(promptId + '\u0000' + label + '\u0000' + key));
    return (int) (uint32(digest, 0) % ROLLOUT_SCALE);
  }

  public static String rolloutArm(int bucket, int percentBp) {
    return bucket < percentBp ? "B" : "A";
  }

  /** A usable rollout map. */
  public static final class RolloutSpec {
    public final String rolloutId;
    public final int candidateVersion;
    public final String candidateChecksum;
    public final int percentBp;

    RolloutSpec(String rolloutId, int candidateVersion, String candidateChecksum, int percentBp) {
      this.rolloutId = rolloutId;
      this.candidateVersion = candidateVersion;
      this.candidateChecksum = candidateChecksum;
      this.percentBp = percentBp;
    }
  }

  /** A rollout map parsed: exactly one of {@code spec} and {@code problem} is set. */
  public static final class ParsedRollout {
    public final RolloutSpec spec;
    public final String problem;

    ParsedRollout(RolloutSpec spec, String problem) {
      this.spec = spec;
      this.problem = problem;
    }
  }

  /** A label item's rollout map read as the other clients read it (see {@link RolloutSchema}). */
  public static ParsedRollout parseRollout(Object value) {
    return RolloutSchema.parse(value);
  }

  // -- templates -------------------------------------------------------------------------------------------------

  private static final String JS_SPACE = "[\\t\\n\\u000b\\f\\r \\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000\\ufeff]";
  /** {@code {{ name }}}: the same pattern as the Node client, with JavaScript's {@code \s}. */
  public static final Pattern TEMPLATE_VARIABLE = Pattern.compile("\\{\\{" + JS_SPACE + "*([A-Za-z_][A-Za-z0-9_.-]*)" + JS_SPACE + "*\\}\\}");

  /** Placeholder names of a template, in order of first use. */
  public static List<String> templateVariables(String template) {
    Set<String> seen = new LinkedHashSet<>();
    Matcher m = TEMPLATE_VARIABLE.matcher(template);
    while (m.find()) seen.add(m.group(1));
    return new ArrayList<>(seen);
  }

  /** JavaScript's {@code typeof} of a JSON value, {@code null} for null (as the messages of the other clients say). */
  static String jsTypeOf(Object v) {
    if (v == null) return "null";
    if (v instanceof String) return "string";
    if (v instanceof Number) return "number";
    if (v instanceof Boolean) return "boolean";
    return "object";
  }

  static byte[] concat(byte[]... parts) {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    for (byte[] p : parts) out.writeBytes(p);
    return out.toByteArray();
  }
}
