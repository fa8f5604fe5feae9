package io.github.cdkpromptserving.runtime;

/**
 * The catalog item's rule (src/schema/catalog.ts): when a Bloom catalog read from the table or the L2 is consistent
 * enough to rule ids out. Behind {@link Schema#catalogProblem}.
 */
final class CatalogSchema {
  private CatalogSchema() {}

  /** Why a catalog item cannot be trusted (readers ignore it), or null when it is consistent. */
  static String problem(Object bloom, Object bits, Object hashes, Object count, Object revision) {
    if (!(bloom instanceof byte[])) return "`bloom` must be binary";
    byte[] b = (byte[]) bloom;
    if (!Schema.isWhole(bits) || ((Number) bits).doubleValue() < 8 || ((Number) bits).doubleValue() > Schema.BLOOM_MAX_BITS) {
      return "`bloom_bits` must be a whole number from 8 to " + Schema.BLOOM_MAX_BITS;
    }
    int nbits = ((Number) bits).intValue();
    int want = (nbits + 7) / 8;
    if (b.length != want) return "`bloom` must hold ceil(bloom_bits / 8) = " + want + " bytes, got " + b.length;
    if (!Schema.isWhole(hashes) || ((Number) hashes).doubleValue() < 1 || ((Number) hashes).doubleValue() > Schema.BLOOM_MAX_HASHES) {
      return "`bloom_hashes` must be a whole number from 1 to " + Schema.BLOOM_MAX_HASHES;
    }
    if (!isSafeWhole(count) || ((Number) count).doubleValue() < 0) return "`count` must be a whole number, at least 0";
    if (revision != null && (!isSafeWhole(revision) || ((Number) revision).doubleValue() < 0)) return "`revision` must be a whole number, at least 0";
    long set = 0;
    for (int j = 0; j < b.length; j++) {
      int v = b[j] & 0xff;
      if (j == b.length - 1 && nbits % 8 != 0 && (v >> (nbits % 8)) != 0) return "bits at or beyond `bloom_bits` are set";
      set += Integer.bitCount(v);
    }
    double c = ((Number) count).doubleValue();
    int h = ((Number) hashes).intValue();
    if (c == 0 && set > 0) return "`count` is 0 but the filter has set bits";
    if (c > 0 && set == 0) return "`count` is " + Json.numberToString(c) + " but the filter is empty";
    if (set > c * h) return "the filter has " + set + " set bits, more than count × bloom_hashes = " + Json.numberToString(c * h);
    return null;
  }

  private static boolean isSafeWhole(Object v) {
    return Schema.isWhole(v) && Math.abs(((Number) v).doubleValue()) <= 9007199254740991.0;
  }
}
