package io.github.cdkpromptserving.runtime.bench;

import java.net.URI;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicLong;
import software.amazon.awssdk.auth.credentials.AwsBasicCredentials;
import software.amazon.awssdk.auth.credentials.StaticCredentialsProvider;
import software.amazon.awssdk.core.interceptor.Context;
import software.amazon.awssdk.core.interceptor.ExecutionAttributes;
import software.amazon.awssdk.core.interceptor.ExecutionInterceptor;
import software.amazon.awssdk.http.SdkHttpClient;
import software.amazon.awssdk.http.apache.ApacheHttpClient;
import software.amazon.awssdk.http.crt.AwsCrtHttpClient;
import software.amazon.awssdk.http.urlconnection.UrlConnectionHttpClient;
import software.amazon.awssdk.regions.Region;
import software.amazon.awssdk.services.dynamodb.DynamoDbClient;
import software.amazon.awssdk.services.dynamodb.model.AttributeValue;
import software.amazon.awssdk.services.dynamodb.model.GetItemRequest;

/**
 * The Java client measured against its floor, side by side in one run (scripts/bench-java-runtime.sh runs it):
 * <ul>
 *   <li>{@code cold <kind>}: one fresh JVM: class loading + client construction + the first read, for {@code url},
 *   {@code apache}, {@code crt} (a bare DynamoDbClient with that HTTP client and one GetItem) and {@code prompt} (a
 *   PromptClient, url-connection, and its first getPrompt: the catalog read beside the item's);</li>
 *   <li>{@code hot}: a cached get vs {@code ConcurrentHashMap.get}; a miss vs a raw GetItem (p50, p99); 1000 concurrent
 *   cold gets of one id; Powertools v1's DynamoDB provider (cached get and miss) beside it.</li>
 * </ul>
 * Arguments: mode, endpoint (DynamoDB Local), table.
 */
public final class Bench {
  private Bench() {}

  public static void main(String[] args) throws Exception {
    long t0 = System.nanoTime();
    String mode = args[0];
    String endpoint = args[1];
    String table = args[2];
    if (mode.equals("cold")) {
      String kind = args[3];
      String result;
      if (kind.equals("prompt")) {
        io.github.cdkpromptserving.runtime.PromptClient client = io.github.cdkpromptserving.runtime.PromptClient.builder()
            .tableName(table).withoutL2().environment(Map.of()).build();
        result = client.getPrompt("bench-0").getChecksum();
      } else {
        DynamoDbClient ddb = DynamoDbClient.builder().httpClient(http(kind)).build();
        result = ddb.getItem(GetItemRequest.builder().tableName(table).key(key("bench-0")).build()).item().get("checksum").s();
      }
      System.out.printf("cold %s %.1f ms (%s)%n", kind, (System.nanoTime() - t0) / 1e6, result.substring(0, 12));
      System.exit(0);
    }
    if (mode.equals("setup")) {
      setup(endpoint, table);
      System.exit(0);
    }
    hot(endpoint, table);
    System.exit(0);
  }

  /** The bench tables: 100 prompts (and their catalog) in the serving shape; one item in Powertools' shape. */
  static void setup(String endpoint, String table) {
    DynamoDbClient ddb = local(endpoint, null);
    java.util.function.BiConsumer<String, String[]> create = (name, keys) -> ddb.createTable(b -> {
      List<software.amazon.awssdk.services.dynamodb.model.AttributeDefinition> defs = new ArrayList<>();
      List<software.amazon.awssdk.services.dynamodb.model.KeySchemaElement> schema = new ArrayList<>();
      for (int i = 0; i < keys.length; i++) {
        defs.add(software.amazon.awssdk.services.dynamodb.model.AttributeDefinition.builder().attributeName(keys[i]).attributeType("S").build());
        schema.add(software.amazon.awssdk.services.dynamodb.model.KeySchemaElement.builder().attributeName(keys[i]).keyType(i == 0 ? "HASH" : "RANGE").build());
      }
      b.tableName(name).billingMode("PAY_PER_REQUEST").attributeDefinitions(defs).keySchema(schema);
    });
    create.accept(table, new String[] {"prompt_id", "version"});
    create.accept(table + "-powertools", new String[] {"id"});
    List<String> ids = new ArrayList<>();
    for (int i = 0; i < 100; i++) {
      String id = "bench-" + i;
      ids.add(id);
      ddb.putItem(b -> b.tableName(table).item(Map.of("prompt_id", s(id), "version", s("CURRENT"), "version_number", n(1),
          "checksum", s("sha256:" + "0".repeat(64)), "status", s("ACTIVE"), "template_type", s("TEXT"),
          "text", s("Summarise {{document}} for {{audience}} in a few sentences."))));
    }
    int[] p = io.github.cdkpromptserving.runtime.Schema.bloomParameters(ids.size());
    ddb.putItem(b -> b.tableName(table).item(Map.of("prompt_id", s("#catalog"), "version", s("CURRENT"),
        "bloom", AttributeValue.builder().b(software.amazon.awssdk.core.SdkBytes.fromByteArray(
            io.github.cdkpromptserving.runtime.Schema.bloomBuild(ids, p[0], p[1]))).build(),
        "bloom_bits", n(p[0]), "bloom_hashes", n(p[1]), "count", n(ids.size()), "revision", n(1))));
    ddb.putItem(b -> b.tableName(table + "-powertools").item(Map.of("id", s("bench-0"), "value", s("Summarise {{document}} for {{audience}}."))));
  }

  static AttributeValue s(String v) {
    return AttributeValue.builder().s(v).build();
  }

  static AttributeValue n(int v) {
    return AttributeValue.builder().n(String.valueOf(v)).build();
  }

  static SdkHttpClient http(String kind) {
    switch (kind) {
      case "url": return UrlConnectionHttpClient.create();
      case "apache": return ApacheHttpClient.create();
      case "crt": return AwsCrtHttpClient.create();
      default: throw new IllegalArgumentException(kind);
    }
  }

  static Map<String, AttributeValue> key(String id) {
    return Map.of("prompt_id", AttributeValue.builder().s(id).build(), "version", AttributeValue.builder().s("CURRENT").build());
  }

  static DynamoDbClient local(String endpoint, ExecutionInterceptor counter) {
    return DynamoDbClient.builder().endpointOverride(URI.create(endpoint)).region(Region.US_EAST_1)
        .credentialsProvider(StaticCredentialsProvider.create(AwsBasicCredentials.create("local", "local")))
        .httpClient(UrlConnectionHttpClient.create())
        .overrideConfiguration(o -> {
          if (counter != null) o.addExecutionInterceptor(counter);
        }).build();
  }

  static void hot(String endpoint, String table) throws Exception {
    AtomicLong getItems = new AtomicLong();
    DynamoDbClient ddb = local(endpoint, new ExecutionInterceptor() {
      @Override
      public void beforeExecution(Context.BeforeExecution context, ExecutionAttributes attributes) {
        if (context.request() instanceof GetItemRequest) getItems.incrementAndGet();
      }
    });
    io.github.cdkpromptserving.runtime.PromptClient client = io.github.cdkpromptserving.runtime.PromptClient.builder()
        .tableName(table).dynamoDbClient(ddb).withoutL2().environment(Map.of()).maxAgeSeconds(3600).requestTimeoutMs(30000).build();

    // cached get vs ConcurrentHashMap.get (both return the held object; ids cycle over 100 keys)
    String[] ids = new String[100];
    ConcurrentHashMap<String, Object> map = new ConcurrentHashMap<>();
    for (int i = 0; i < ids.length; i++) {
      ids[i] = "bench-" + i;
      map.put(ids[i], client.getPrompt(ids[i]));
    }
    long sink = 0;
    double chm = Double.MAX_VALUE;
    double cached = Double.MAX_VALUE;
    int n = 5_000_000;
    for (int round = 0; round < 7; round++) {
      long a = System.nanoTime();
      for (int i = 0; i < n; i++) sink += map.get(ids[i % 100]).hashCode();
      long b = System.nanoTime();
      for (int i = 0; i < n; i++) sink += client.getPrompt(ids[i % 100]).hashCode();
      long c = System.nanoTime();
      if (round >= 2) {
        chm = Math.min(chm, (b - a) / (double) n);
        cached = Math.min(cached, (c - b) / (double) n);
      }
    }
    System.out.printf("hot cached get %.1f ns, ConcurrentHashMap.get %.1f ns, ratio %.2f (best of 5 rounds of %d)%n", cached, chm, cached / chm, n);

    // miss vs raw GetItem (the catalog is warm: a miss is one GetItem)
    int iters = 400;
    double[] raw = new double[iters];
    double[] miss = new double[iters];
    for (int i = 0; i < iters + 50; i++) {
      long a = System.nanoTime();
      ddb.getItem(GetItemRequest.builder().tableName(table).key(key("bench-1")).build());
      long b = System.nanoTime();
      client.invalidate("bench-1");
      long c = System.nanoTime();
      client.getPrompt("bench-1");
      long d = System.nanoTime();
      if (i >= 50) {
        raw[i - 50] = (b - a) / 1e6;
        miss[i - 50] = (d - c) / 1e6;
      }
    }
    Arrays.sort(raw);
    Arrays.sort(miss);
    System.out.printf("hot miss p50 %.3f ms p99 %.3f ms; raw GetItem p50 %.3f ms p99 %.3f ms; ratios %.2f / %.2f (%d each, interleaved)%n",
        miss[iters / 2], miss[iters * 99 / 100], raw[iters / 2], raw[iters * 99 / 100], miss[iters / 2] / raw[iters / 2],
        miss[iters * 99 / 100] / raw[iters * 99 / 100], iters);

    // 1000 concurrent cold gets of one id
    io.github.cdkpromptserving.runtime.PromptClient cold = io.github.cdkpromptserving.runtime.PromptClient.builder()
        .tableName(table).dynamoDbClient(ddb).withoutL2().environment(Map.of()).requestTimeoutMs(30000).build();
    cold.getPrompt("bench-2"); // the catalog warm, the id not: count the item's reads only
    cold.invalidate("bench-3");
    long before = getItems.get();
    CountDownLatch go = new CountDownLatch(1);
    List<Thread> threads = new ArrayList<>();
    for (int i = 0; i < 1000; i++) {
      Thread t = new Thread(() -> {
        try {
          go.await();
          cold.getPrompt("bench-3");
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
      });
      t.start();
      threads.add(t);
    }
    go.countDown();
    for (Thread t : threads) t.join();
    System.out.printf("1000 concurrent cold gets of one id: %d GetItem%n", getItems.get() - before);

    // Powertools v1 DynamoDB provider (its own table shape: id / value), beside: cached get and miss
    software.amazon.lambda.powertools.parameters.DynamoDbProvider pt =
        software.amazon.lambda.powertools.parameters.ParamManager.getDynamoDbProvider(ddb, table + "-powertools");
    pt.withMaxAge(3600, java.time.temporal.ChronoUnit.SECONDS);
    pt.get("bench-0");
    double ptCached = Double.MAX_VALUE;
    for (int round = 0; round < 5; round++) {
      long a = System.nanoTime();
      for (int i = 0; i < 1_000_000; i++) sink += pt.withMaxAge(3600, java.time.temporal.ChronoUnit.SECONDS).get("bench-0").length();
      ptCached = Math.min(ptCached, (System.nanoTime() - a) / 1e6);
    }
    double[] ptMiss = new double[200];
    for (int i = 0; i < 200; i++) {
      long a = System.nanoTime();
      pt.withMaxAge(0, java.time.temporal.ChronoUnit.SECONDS).get("bench-0");
      ptMiss[i] = (System.nanoTime() - a) / 1e6;
    }
    Arrays.sort(ptMiss);
    System.out.printf("powertools-parameters 1.18.0 DynamoDbProvider: cached get %.1f ns, miss p50 %.3f ms p99 %.3f ms%n", ptCached, ptMiss[100], ptMiss[198]);
    if (sink == 42) System.out.println();
  }
}
