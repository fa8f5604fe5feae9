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

  /** Registers the hooks with CRaC's global context (kept, and never called, outside a CRaC runtime). */
  static SnapStart register(PromptClient client, Collection<String> primeIds, Collection<String> primeLabels) {
    SnapStart hook = new SnapStart(client, primeIds, primeLabels);
    try {
      org.crac.Core.getGlobalContext().register(hook);
    } catch (RuntimeException | LinkageError e) {
      // no CRaC API on the class path or no global context: nothing is snapshotted
    }
    return hook;
  }

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
    if (client.coarse != null) client.coarse.suspend();
    if (client.l2 != null) client.l2.beforeCheckpoint();
    client.store.beforeCheckpoint();
    client.l1.forgetNotFound();
    if (client.l2 != null && client.l2.writeThrough()) client.epochTrustedUntil = 0;
  }

  @Override
  public void afterRestore(Context<? extends Resource> context) {
    if (client.coarse != null) client.coarse.resume();
    client.store.afterRestore();
    if (client.l2 != null) client.l2.afterRestore();
  }
}
