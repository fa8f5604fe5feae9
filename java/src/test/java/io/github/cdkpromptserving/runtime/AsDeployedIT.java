package io.github.cdkpromptserving.runtime;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.tools.JavaCompiler;
import javax.tools.ToolProvider;
import org.junit.jupiter.api.Test;
import software.amazon.awssdk.services.dynamodb.DynamoDbClient;

/**
 * As deployed: the shaded Lambda jar with a team's handler packed into it, copied to an isolated directory under /tmp and
 * run with only the JDK (a clean environment: the variables addReader and Lambda set, nothing from this build), against
 * DynamoDB Local and a TLS redis-server in cluster mode with the template's reader ACL user authenticated by an IAM
 * token. Two processes stand for two Lambda instances: the first reads the table (and fills the L2), the second the L2;
 * both then serve from memory, and say so in stats().
 */
class AsDeployedIT {
  @Test
  void aJavaHandlerFromTheShadedJarReadsThroughTheTableTheL2AndMemory() throws Exception {
    Path jar = Paths.get(System.getProperty("lambda.jar"));
    assertTrue(Files.exists(jar), "run after package: " + jar);
    DynamoDbClient ddb = DynamoDbLocal.client(null);
    String table = DynamoDbLocal.createTable(ddb);
    ClientTest.ddb = ddb;
    ClientTest.table = table;
    ClientTest.put("greeting", "CURRENT", 2, "Hello {{name}} v2", ClientTest.SUM_V1, null);
    try (RedisServer redis = new RedisServer()) {
      redis.admin().set(L2Schema.epochKey(table), "1 2026-01-02T03:04:05.678");
      Path iso = Files.createTempDirectory(Paths.get("/tmp"), "prompt-serving-java-lambda-");
      Path function = iso.resolve("function.jar");
      Files.copy(jar, function);
      // the team's handler, compiled against the jar and packed into it
      Path classes = Files.createDirectories(iso.resolve("classes"));
      JavaCompiler javac = ToolProvider.getSystemJavaCompiler();
      int rc = javac.run(null, null, null, "--release", "17", "-cp", function.toString(), "-d", classes.toString(),
          Fixtures.REPO.resolve("java/src/it/handler/ReaderHandler.java").toString());
      assertEquals(0, rc);
      String javaHome = System.getProperty("java.home");
      run(iso, List.of(javaHome + "/bin/jar", "uf", function.toString(), "-C", classes.toString(), "ReaderHandler.class"), Map.of());
      // the CA in a trust store, as Lambda's JVM trusts Amazon's
      run(iso, List.of(javaHome + "/bin/keytool", "-importcert", "-noprompt", "-alias", "cache-ca", "-file", redis.ca.toString(),
          "-keystore", iso.resolve("trust.p12").toString(), "-storetype", "PKCS12", "-storepass", "changeit"), Map.of());
      Map<String, String> env = Map.ofEntries(
          Map.entry("PROMPT_SERVING_TABLE_NAME", table),
          Map.entry("PROMPT_SERVING_CACHE_ENDPOINT", "127.0.0.1:" + redis.port),
          Map.entry("PROMPT_SERVING_CACHE_TLS", "true"),
          Map.entry("PROMPT_SERVING_CACHE_CLUSTER", "true"),
          Map.entry("PROMPT_SERVING_CACHE_AUTH", "iam"),
          Map.entry("PROMPT_SERVING_CACHE_USER", "iam-reader"),
          Map.entry("PROMPT_SERVING_CACHE_NAME", "prompts-cache"),
          Map.entry("PROMPT_SERVING_CACHE_RESOURCE_TYPE", "ServerlessCache"),
          Map.entry("AWS_REGION", "us-east-1"),
          Map.entry("AWS_ACCESS_KEY_ID", "AKIDLOCAL"),
          Map.entry("AWS_SECRET_ACCESS_KEY", "local-secret"),
          Map.entry("AWS_SESSION_TOKEN", "local-session"),
          Map.entry("AWS_ENDPOINT_URL_DYNAMODB", "http://127.0.0.1:" + DynamoDbLocal.port()));
      List<String> java = List.of(javaHome + "/bin/java", "-Djavax.net.ssl.trustStore=" + iso.resolve("trust.p12"),
          "-Djavax.net.ssl.trustStorePassword=changeit", "-Djavax.net.ssl.trustStoreType=PKCS12", "-cp", function.toString(), "ReaderHandler", "3");
      String first = run(iso, java, env);
      String second = run(iso, java, env);
      assertEquals(List.of("table", "l1", "l1"), sources(first), first);
      assertEquals(List.of("l2", "l1", "l1"), sources(second), second);
      Map<String, Long> s1 = stats(first);
      Map<String, Long> s2 = stats(second);
      assertEquals(2L, s1.get("hits"));
      assertTrue(s1.get("storeReads") >= 1 && s1.get("l2Misses") >= 1, first);
      assertEquals(2L, s2.get("hits"));
      assertTrue(s2.get("l2Hits") >= 1, second);
      assertEquals(0L, s1.get("l2Errors") + s2.get("l2Errors") + s1.get("l2Unavailable") + s2.get("l2Unavailable"), first + second);
      System.out.println("as deployed, first instance: " + s1 + "\nas deployed, second instance: " + s2);
    }
  }

  private static List<String> sources(String out) {
    List<String> found = new ArrayList<>();
    Matcher m = Pattern.compile("served \\{.*?source=(\\w+)").matcher(out);
    while (m.find()) found.add(m.group(1));
    return found;
  }

  private static Map<String, Long> stats(String out) {
    Matcher m = Pattern.compile("stats \\{(.*)\\}").matcher(out);
    assertTrue(m.find(), out);
    Map<String, Long> s = new java.util.LinkedHashMap<>();
    for (String kv : m.group(1).split(", ")) {
      String[] p = kv.split("=");
      s.put(p[0], Long.parseLong(p[1]));
    }
    return s;
  }

  private static String run(Path cwd, List<String> cmd, Map<String, String> env) throws IOException, InterruptedException {
    ProcessBuilder pb = new ProcessBuilder(cmd).directory(cwd.toFile()).redirectErrorStream(true);
    pb.environment().clear();
    pb.environment().put("PATH", "/usr/bin:/bin");
    pb.environment().putAll(env);
    Process p = pb.start();
    String out = new String(p.getInputStream().readAllBytes());
    assertEquals(0, p.waitFor(), String.join(" ", cmd) + "\n" + out);
    return out;
  }
}
