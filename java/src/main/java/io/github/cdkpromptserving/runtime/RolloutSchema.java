package io.github.cdkpromptserving.runtime;

import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;

/**
 * A label item's rollout map (src/schema/labels.ts): its fields' rules and the problem said when one is broken (the
 * label is then served arm A, counted). Behind {@link Schema#parseRollout}; the arms are {@link Rollout}.
 */
final class RolloutSchema {
  private RolloutSchema() {}

  private static final Pattern CHECKSUM = Pattern.compile("sha256:[0-9a-f]{64}");

  /** A rollout map parsed: exactly one of {@code spec} and {@code problem} is set. */
  @SuppressWarnings("unchecked")
  static Schema.ParsedRollout parse(Object value) {
    if (!(value instanceof Map)) return new Schema.ParsedRollout(null, "rollout is not a map");
    Map<String, Object> map = (Map<String, Object>) value;
    Object rolloutId = map.get("rollout_id");
    Object candidateVersion = map.get("candidate_version");
    Object candidateChecksum = map.get("candidate_checksum");
    Object percentBp = map.get("percent_bp");
    if (!(rolloutId instanceof String) || ((String) rolloutId).isEmpty() || ((String) rolloutId).length() > 128) {
      return new Schema.ParsedRollout(null, "rollout_id " + show(rolloutId, map.containsKey("rollout_id")) + " is not a string of 1 to 128 characters");
    }
    if (!inRange(candidateVersion, 1, Schema.MAX_VERSION_NUMBER)) {
      return new Schema.ParsedRollout(null, "candidate_version " + show(candidateVersion, map.containsKey("candidate_version"))
          + " is not a whole number from 1 to " + Schema.MAX_VERSION_NUMBER);
    }
    if (!(candidateChecksum instanceof String) || !CHECKSUM.matcher((String) candidateChecksum).matches()) {
      return new Schema.ParsedRollout(null, "candidate_checksum " + show(candidateChecksum, map.containsKey("candidate_checksum"))
          + " is not sha256: and 64 lowercase hex digits");
    }
    if (!inRange(percentBp, 0, Schema.ROLLOUT_SCALE)) {
      return new Schema.ParsedRollout(null, "percent_bp " + show(percentBp, map.containsKey("percent_bp")) + " is not a whole number from 0 to " + Schema.ROLLOUT_SCALE);
    }
    return new Schema.ParsedRollout(new Schema.RolloutSpec((String) rolloutId, ((Number) candidateVersion).intValue(), (String) candidateChecksum,
        ((Number) percentBp).intValue()), null);
  }

  private static boolean inRange(Object v, double min, double max) {
    return Schema.isWhole(v) && ((Number) v).doubleValue() >= min && ((Number) v).doubleValue() <= max;
  }

  private static String show(Object value, boolean present) {
    if (!present) return "absent";
    if (value instanceof Number && !Double.isFinite(((Number) value).doubleValue())) return Json.numberToString(((Number) value).doubleValue());
    if (value == null || value instanceof String || value instanceof Number || value instanceof Boolean) {
      String text = Json.stringify(value);
      return text.length() > 40 ? text.substring(0, 37) + "..." : text;
    }
    return value instanceof List ? "a list" : value instanceof byte[] ? "binary" : "a map";
  }
}
