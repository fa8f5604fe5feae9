package io.github.cdkpromptserving.runtime;

import java.util.LinkedHashMap;
import java.util.Map;

/** How a label item is served (src/runtime/labels.ts): its content without the label attributes, its version, label and sourceDeleted. */
final class LabelItems {
  private LabelItems() {}

  static Prompt promptFromLabelItem(Map<String, Object> item, String label) {
    return promptFromLabelItem(item, label, new Provenance("table", false, System.currentTimeMillis()));
  }

  static Prompt promptFromLabelItem(Map<String, Object> item, String label, Provenance provenance) {
    Map<String, Object> content = new LinkedHashMap<>();
    for (Map.Entry<String, Object> e : item.entrySet()) if (!Schema.LABEL_ITEM_ATTRIBUTES.contains(e.getKey())) content.put(e.getKey(), e.getValue());
    Object deletedAt = item.get("source_deleted_at");
    boolean sourceDeleted = deletedAt instanceof String && !((String) deletedAt).isEmpty();
    return Prompt.fromItem(content, 1, provenance).forLabel(label, null, sourceDeleted);
  }
}
