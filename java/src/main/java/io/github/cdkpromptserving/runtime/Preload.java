package io.github.cdkpromptserving.runtime;

import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;

/**
 * {@link PromptClient#preload} (src/runtime/preload.ts): the catalog, then the CURRENT version of each id and each of
 * its labels (with a rollout's candidate) read in parallel, so the first requests are served from memory.
 */
final class Preload {
  private Preload() {}

  static void preload(PromptClient client, Collection<String> promptIds, Collection<String> labels) {
    List<String> ids = new ArrayList<>(promptIds == null ? List.of() : promptIds);
    List<String> names = labels == null ? List.of() : new ArrayList<>(labels);
    for (String label : names) {
      String p = Schema.labelNameProblem(label);
      if (p != null) throw new PromptNotFoundException(ids.isEmpty() ? "" : ids.get(0), null, "not a valid label (" + p + ")");
    }
    for (String id : ids) {
      String p = ReadTarget.current(id).problem();
      if (p != null) throw new PromptNotFoundException(id, null, p);
    }
    client.catalog.refresh();
    ReadPath readPath = client.readPath;
    List<CompletableFuture<?>> loads = new ArrayList<>();
    for (String id : ids) {
      loads.add(CompletableFuture.runAsync(() -> quietly(() -> client.getPrompt(id)), ReadPath.BACKGROUND));
      for (String label : names) {
        loads.add(CompletableFuture.runAsync(() -> quietly(() -> {
          Entry e = readPath.load(ReadTarget.label(id, label));
          if (e.rollout != null && e.rollout.servesB() && e.rollout.armB == null) readPath.rollouts.loadCandidate(e);
        }), ReadPath.BACKGROUND));
      }
    }
    for (CompletableFuture<?> f : loads) {
      try {
        f.join();
      } catch (CompletionException e) {
        if (e.getCause() instanceof RuntimeException) throw (RuntimeException) e.getCause();
        throw e;
      }
    }
  }

  private static void quietly(Runnable r) {
    try {
      r.run();
    } catch (PromptNotFoundException ignored) {
      // unknown ids do not fail a preload
    }
  }
}
