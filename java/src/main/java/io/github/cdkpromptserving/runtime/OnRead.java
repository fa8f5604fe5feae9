package io.github.cdkpromptserving.runtime;

/** Called once per served read (hits included) with what was served; a hook that throws never fails the read. */
@FunctionalInterface
public interface OnRead {
  void onRead(ReadInfo info, PromptClient client);
}
