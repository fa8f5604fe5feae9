import io.github.cdkpromptserving.runtime.Prompt;
import io.github.cdkpromptserving.runtime.PromptClient;
import java.util.List;
import java.util.Map;

/**
 * A Java reader as a team writes it: one client per process (a static field: Lambda's init phase), built from the
 * environment addReader sets, registered for SnapStart with the prompts to prime. handleRequest has the shape Lambda
 * calls ({@code Class::handleRequest}, a Map event); main stands in for the runtime: init, then N invocations, then
 * the client's stats as one JSON line.
 */
public class ReaderHandler {
  static final PromptClient PROMPTS = PromptClient.create();

  static {
    PROMPTS.registerSnapStart(List.of("greeting"), List.of());
  }

  public Map<String, Object> handleRequest(Map<String, Object> event, Object context) {
    Prompt prompt = PROMPTS.getPrompt((String) event.getOrDefault("promptId", "greeting"));
    return Map.of("text", prompt.renderText(Map.of("name", event.getOrDefault("name", "Ana")), null),
        "version", prompt.getVersion(), "source", prompt.getProvenance().getSource());
  }

  public static void main(String[] args) {
    ReaderHandler handler = new ReaderHandler();
    int invocations = Integer.parseInt(args.length > 0 ? args[0] : "3");
    for (int i = 0; i < invocations; i++) System.out.println("served " + handler.handleRequest(Map.of("name", "Ana"), null));
    System.out.println("stats " + PROMPTS.stats().toMap());
  }
}
