package io.github.cdkpromptserving.runtime;

/**
 * What one read asks for: the CURRENT version, an exact version, or a label. Carries its table key, its cache key, its
 * catalog rule and its freshness rule, so one cached read path serves all three.
 */
final class ReadTarget {
  enum Kind { CURRENT, VERSION, LABEL }

  final Kind kind;
  final String promptId;
  final Integer version;
  final String label;
  /** Cache key: CURRENT under the id itself, others under {@code #<version>#<id>} / {@code #<label>#<id>} (no valid id starts with #). */
  final String cacheKey;
  /** The table's sort key: {@code CURRENT}, {@code v000003}, {@code LABEL#production}. */
  final String sortKey;

  private ReadTarget(Kind kind, String promptId, Integer version, String label, String cacheKey, String sortKey) {
    this.kind = kind;
    this.promptId = promptId;
    this.version = version;
    this.label = label;
    this.cacheKey = cacheKey;
    this.sortKey = sortKey;
  }

  static ReadTarget current(String promptId) {
    return new ReadTarget(Kind.CURRENT, promptId, null, null, promptId, Schema.CURRENT);
  }

  static ReadTarget version(String promptId, int version) {
    String sortKey = version >= 1 && version <= Schema.MAX_VERSION_NUMBER ? Schema.versionKey(version) : null;
    return new ReadTarget(Kind.VERSION, promptId, version, null, "#" + version + "#" + promptId, sortKey);
  }

  static ReadTarget label(String promptId, String label) {
    return new ReadTarget(Kind.LABEL, promptId, null, label, "#" + label + "#" + promptId, Schema.LABEL_SORT_KEY_PREFIX + label);
  }

  /** The target of {@code getPrompt(id, options)}: a label, an exact version, else CURRENT. */
  static ReadTarget of(String promptId, GetOptions get) {
    if (get.label != null) {
      if (get.version != null) throw new PromptServingException("give `version` or `label`, not both: a label names its own version");
      return label(promptId, get.label);
    }
    return get.version != null ? version(promptId, get.version) : current(promptId);
  }

  /**
   * The catalog (ACTIVE ids) rules out CURRENT and exact versions of unknown ids; a label is served even after the
   * source deleted its prompt (sourceDeleted), so the catalog never rules a label read out.
   */
  boolean usesCatalog() {
    return kind != Kind.LABEL;
  }

  /** Until when a copy read at {@code fetchedAt} is fresh: versions are immutable, the others age. */
  long expiresAt(long fetchedAt, long maxAgeMs) {
    return kind == Kind.VERSION ? Long.MAX_VALUE : fetchedAt + maxAgeMs;
  }

  /** Why this target can never exist (not found without a remote call), or null. */
  String problem() {
    if (!Schema.isValidPromptId(promptId)) return "not a valid prompt id (" + Schema.PROMPT_ID_RULE + ", which is reserved)";
    if (kind == Kind.VERSION && sortKey == null) return "a version is an integer from 1 to " + Schema.MAX_VERSION_NUMBER;
    if (kind == Kind.LABEL) {
      String p = Schema.labelNameProblem(label);
      if (p != null) return "not a valid label (" + p + ")";
    }
    return null;
  }

  /** The reason a not-found answer gives when the table had nothing. */
  String missingReason() {
    return kind == Kind.LABEL ? "no label '" + label + "'" : null;
  }

  PromptNotFoundException notFound(String reason) {
    return new PromptNotFoundException(promptId, version, reason);
  }
}
