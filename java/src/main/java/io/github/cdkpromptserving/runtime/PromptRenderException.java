package io.github.cdkpromptserving.runtime;

import java.util.ArrayList;
import java.util.List;

/** A render call's variables do not fit the prompt: every missing, unexpected and invalid name in one error. */
public class PromptRenderException extends PromptServingException {
  private static final long serialVersionUID = 1L;
  private final String promptId;
  private final int version;
  private final List<String> missing;
  private final List<String> extra;
  private final List<String> invalid;

  public PromptRenderException(String promptId, int version, List<String> missing, List<String> extra, List<String> invalid) {
    super(message(promptId, version, missing, extra, invalid));
    this.promptId = promptId;
    this.version = version;
    this.missing = List.copyOf(missing);
    this.extra = List.copyOf(extra);
    this.invalid = List.copyOf(invalid);
  }

  public String getPromptId() {
    return promptId;
  }

  public int getVersion() {
    return version;
  }

  public List<String> getMissing() {
    return missing;
  }

  /** The same as {@link #getMissing()} (the name the other clients give it). */
  public List<String> getMissingVariables() {
    return missing;
  }

  public List<String> getExtra() {
    return extra;
  }

  public List<String> getInvalid() {
    return invalid;
  }

  private static String message(String promptId, int version, List<String> missing, List<String> extra, List<String> invalid) {
    List<String> parts = new ArrayList<>();
    if (!missing.isEmpty()) parts.add("missing variable" + s(missing) + " " + list(missing));
    if (!extra.isEmpty()) parts.add("unexpected variable" + s(extra) + " " + list(extra) + " (not in the template nor declared)");
    if (!invalid.isEmpty()) {
      parts.add("invalid value" + s(invalid) + " for " + list(invalid) + " (a value is a string, a finite number or a boolean; "
          + "any JSON value only for a name in json_variables)");
    }
    return "cannot render prompt " + showName(promptId) + " version " + version + ": " + String.join("; ", parts);
  }

  private static String s(List<String> names) {
    return names.size() > 1 ? "s" : "";
  }

  private static String list(List<String> names) {
    List<String> shown = new ArrayList<>();
    for (String n : names) shown.add(showName(n));
    return String.join(", ", shown);
  }

  /** A name quoted, every code unit outside printable ASCII (and \ and ') as \\uXXXX. */
  static String showName(String name) {
    StringBuilder out = new StringBuilder("'");
    for (int i = 0; i < name.length(); i++) {
      char c = name.charAt(i);
      if (c >= 0x20 && c < 0x7f && c != 0x5c && c != 0x27) out.append(c);
      else out.append(String.format("\\u%04x", (int) c));
    }
    return out.append('\'').toString();
  }
}
