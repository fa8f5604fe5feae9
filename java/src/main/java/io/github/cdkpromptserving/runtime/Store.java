package io.github.cdkpromptserving.runtime;

import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;
import java.util.function.LongSupplier;
import software.amazon.awssdk.core.exception.SdkException;
import software.amazon.awssdk.core.exception.SdkServiceException;
import software.amazon.awssdk.services.dynamodb.DynamoDbClient;
import software.amazon.awssdk.services.dynamodb.model.AttributeValue;
import software.amazon.awssdk.services.dynamodb.model.GetItemRequest;
import software.amazon.awssdk.services.dynamodb.model.GetItemResponse;

/**
 * The table (src/runtime/store.ts): one eventually consistent {@code GetItem}, retried on throttling and server errors
 * within {@code requestTimeoutMs}; and the DynamoDB client it reads with, which it closes before a SnapStart snapshot
 * and makes again after the restore when it made it (a client given to it is never closed).
 */
final class Store {
  private final ResolvedOptions options;
  private final LongSupplier clock;
  private final Counters counters;
  /** Volatile: a client this one made is closed before a SnapStart snapshot and made again after the restore. */
  private volatile DynamoDbClient dynamoDb;
  private final boolean ownsDynamoDb;

  /** {@code given} null: this store makes its client (and closes it). */
  Store(ResolvedOptions options, LongSupplier clock, Counters counters, DynamoDbClient given) {
    this.options = options;
    this.clock = clock;
    this.counters = counters;
    this.ownsDynamoDb = given == null;
    this.dynamoDb = given != null ? given : DefaultClients.dynamoDb(options);
  }

  /** One eventually consistent GetItem, retried on throttling and server errors within {@code requestTimeoutMs}. */
  Map<String, Object> getItem(String promptId, String sortKey) {
    long deadline = clock.getAsLong() + options.requestTimeoutMs;
    Map<String, AttributeValue> key = new HashMap<>(4);
    key.put(Schema.PARTITION_KEY, AttributeValue.builder().s(promptId).build());
    key.put(Schema.SORT_KEY, AttributeValue.builder().s(sortKey).build());
    for (int attempt = 1;; attempt++) {
      long left = deadline - clock.getAsLong();
      counters.count(Counters.STORE_READS);
      try {
        GetItemResponse response = dynamoDb().getItem(GetItemRequest.builder().tableName(options.tableName).key(key)
            .overrideConfiguration(o -> o.apiCallTimeout(Duration.ofMillis(Math.max(1, left)))).build());
        return response.hasItem() && !response.item().isEmpty() ? DdbCodec.fromItem(response.item()) : null;
      } catch (SdkException e) {
        long backoff = Math.min(1000, 25L << Math.min(attempt, 5)) / 2 + ThreadLocalRandom.current().nextLong(Math.min(1000, 25L << Math.min(attempt, 5)) / 2 + 1);
        boolean retryable = e.retryable() || (e instanceof SdkServiceException && (((SdkServiceException) e).isThrottlingException()
            || ((SdkServiceException) e).statusCode() >= 500));
        if (retryable && attempt < options.maxAttempts && clock.getAsLong() + backoff < deadline) {
          counters.count(Counters.RETRIES);
          try {
            Thread.sleep(backoff);
          } catch (InterruptedException ie) {
            Thread.currentThread().interrupt();
          }
          continue;
        }
        counters.count(Counters.STORE_ERRORS);
        throw new PromptStoreException("cannot read " + promptId + "/" + sortKey + " from table " + options.tableName + ": "
            + e.getMessage(), e);
      }
    }
  }

  private DynamoDbClient dynamoDb() {
    DynamoDbClient c = dynamoDb;
    if (c == null) {
      synchronized (this) {
        c = dynamoDb;
        if (c == null) dynamoDb = c = DefaultClients.dynamoDb(options);
      }
    }
    return c;
  }

  /** Before a snapshot: the client this store made is closed (with its credentials provider). */
  void beforeCheckpoint() {
    if (ownsDynamoDb) {
      DynamoDbClient old = dynamoDb;
      dynamoDb = null;
      if (old != null) old.close();
    }
  }

  void afterRestore() {
    if (ownsDynamoDb && dynamoDb == null) dynamoDb = DefaultClients.dynamoDb(options);
  }

  /** Whether an open DynamoDB client is held (false between a snapshot and a restore). */
  boolean holdsClient() {
    return dynamoDb != null;
  }

  void close() {
    DynamoDbClient c = dynamoDb;
    if (ownsDynamoDb && c != null) c.close();
  }
}
