package io.github.cdkpromptserving.runtime;

/** Base of every error the client throws (PromptServingError in the Node and Python clients). */
public class PromptServingException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  public PromptServingException(String message) {
    super(message);
  }

  public PromptServingException(String message, Throwable cause) {
    super(message, cause);
  }
}
