package io.github.cdkpromptserving.runtime;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import software.amazon.awssdk.services.dynamodb.DynamoDbClient;

/** SnapStart: priming before the snapshot, nothing connected across it, a working client after a simulated restore. */
class SnapStartTest {
  static RedisServer redis;
  static final DynamoDbLocal.Counter counter = new DynamoDbLocal.Counter();
  static DynamoDbClient ddb;
  static String table;

  @BeforeAll
  static void start() throws Exception {
    redis = new RedisServer();
    ddb = DynamoDbLocal.client(counter);
    table = DynamoDbLocal.createTable(ddb);
    ClientTest.ddb = ddb;
    ClientTest.table = table;
    ClientTest.put("greeting", "CURRENT", 2, "Hello {{name}} v2", ClientTest.SUM_V1, null);
  }

  @AfterAll
  static void stop() {
    if (redis != null) redis.close();
  }

  @Test
  void primedPromptsAreServedFromMemoryAfterARestoreAndNoConnectionCrossesTheSnapshot() {
    // GIVEN a client with the L2 (write-through: it watches the epoch) registered for SnapStart, priming one prompt
    JedisL2 l2 = redis.reader("reader", RedisServer.READER_PASSWORD);
    redis.admin().set(L2Schema.epochKey(table), "1 2026-01-02T03:04:05.678");
    try (PromptClient client = PromptClient.builder().tableName(table).dynamoDbClient(ddb).environment(Map.of()).l2(l2)
        .maxAgeSeconds(300).build()) {
      SnapStart hook = client.registerSnapStart(List.of("greeting"), List.of());
      counter.reset();
      // WHEN the runtime takes the snapshot
      hook.beforeCheckpoint(null);
      // THEN the prompt was read (primed) and no L2 connection is left open
      assertEquals(1, counter.count("greeting/CURRENT"));
      assertFalse(l2.connected(), "the L2 connection crossed the snapshot");
      // WHEN the function is restored and invoked
      hook.afterRestore(null);
      counter.reset();
      long l2Hits = client.stats().l2Hits;
      Prompt served = client.getPrompt("greeting");
      // THEN the primed copy is served from memory, after the epoch was read again on a new connection
      assertEquals("l1", served.getProvenance().getSource());
      assertEquals(0, counter.keys.size());
      assertTrue(l2.connected(), "the epoch is re-read after the restore");
      assertEquals(l2Hits, client.stats().l2Hits);
    }
  }

  @Test
  void aDynamoDbClientTheReaderMadeIsClosedBeforeTheSnapshotAndMadeAgainAfter() {
    System.setProperty("aws.region", "us-east-1");
    System.setProperty("aws.accessKeyId", "local");
    System.setProperty("aws.secretAccessKey", "local");
    System.setProperty("aws.endpointUrlDynamoDb", "http://127.0.0.1:" + DynamoDbLocal.port());
    try (PromptClient client = PromptClient.builder().tableName(table).withoutL2().environment(Map.of()).build()) {
      assertEquals(2, client.getPrompt("greeting").getVersion());
      SnapStart hook = client.registerSnapStart(List.of(), List.of());
      hook.beforeCheckpoint(null);
      assertFalse(client.holdsDynamoDbClient(), "the DynamoDB client (and its credentials) crossed the snapshot");
      hook.afterRestore(null);
      client.invalidate("greeting");
      assertEquals(2, client.getPrompt("greeting").getVersion());
      assertTrue(client.holdsDynamoDbClient());
    } finally {
      System.clearProperty("aws.endpointUrlDynamoDb");
    }
  }
}
