package io.github.cdkpromptserving.runtime;

import java.time.Duration;
import software.amazon.awssdk.core.retry.RetryMode;
import software.amazon.awssdk.http.urlconnection.UrlConnectionHttpClient;
import software.amazon.awssdk.services.dynamodb.DynamoDbClient;

/**
 * The DynamoDB client a {@link PromptClient} makes when none is given: the URL-connection HTTP client (the fastest to
 * start in Lambda, docs/adr/0008-java-runtime-client.md), one attempt per call (the client retries itself, within its
 * deadline, and counts the retries), region and credentials from the environment.
 */
final class DefaultClients {
  private DefaultClients() {}

  static DynamoDbClient dynamoDb(ResolvedOptions options) {
    return DynamoDbClient.builder()
        .httpClientBuilder(UrlConnectionHttpClient.builder()
            .connectionTimeout(Duration.ofMillis(Math.min(options.requestTimeoutMs, 2000))))
        .overrideConfiguration(o -> o.retryStrategy(RetryMode.STANDARD).retryStrategy(b -> b.maxAttempts(1)))
        .build();
  }
}
