package io.github.cdkpromptserving.runtime;

/** The table could not be read (and no copy within staleIfErrorSeconds was held), or an item breaks the wire contract. */
public class PromptStoreException extends PromptServingException {
  private static final long serialVersionUID = 1L;

  public PromptStoreException(String message) {
    super(message);
  }

  public PromptStoreException(String message, Throwable cause) {
    super(message, cause);
  }
}
