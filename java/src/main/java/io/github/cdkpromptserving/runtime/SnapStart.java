package io.github.cdkpromptserving.runtime;

import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import org.crac.Context;
import org.crac.Resource;

/**
 * The SnapStart (CRaC) hooks of one {@link PromptClient}: priming before the snapshot, no connection or credential
 * carried across it, reconnection after the restore. Made by {@link PromptClient#registerSnapStart}.
 */
public final class SnapStart implements Resource {
  private final PromptClient client;
  private final List<String> primeIds;
  private final List<String> primeLabels;

  SnapStart(PromptClient client, Collection<String> primeIds, Collection<String> primeLabels) {
    this.client = client;
    this.primeIds = primeIds == null ? List.of() : new ArrayList<>(primeIds);
    this.primeLabels = primeLabels == null ? List.of() : new ArrayList<>(primeLabels);
  }

  @Override
  public void beforeCheckpoint(Context<? extends Resource> context) {
    try {
      if (!primeIds.isEmpty()) client.preload(primeIds, primeLabels);
    } catch (RuntimeException e) {
      // priming is best effort: a snapshot without the prompts still restores, and reads them then
      System.err.println("{\"level\":\"WARN\",\"message\":" + Json.stringify("cdk-prompt-serving: priming before the snapshot failed: "
          + e.getMessage()) + "}");
    }
    client.beforeCheckpoint();
  }

  @Override
  public void afterRestore(Context<? extends Resource> context) {
    client.afterRestore();
  }
}
