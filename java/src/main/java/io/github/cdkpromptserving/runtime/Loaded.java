package io.github.cdkpromptserving.runtime;

import java.util.Map;

/** What a remote read brought: the item (null: none), where from ({@code table}, {@code stream}, {@code fill}), when read. */
final class Loaded {
  final Map<String, Object> item;
  final String source;
  final long fetchedAt;

  Loaded(Map<String, Object> item, String source, long fetchedAt) {
    this.item = item;
    this.source = source;
    this.fetchedAt = fetchedAt;
  }
}
