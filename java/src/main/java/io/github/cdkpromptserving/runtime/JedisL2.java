package io.github.cdkpromptserving.runtime;

import java.time.Instant;
import java.util.Collections;
import java.util.Map;
import java.util.function.Supplier;
import javax.net.ssl.SSLParameters;
import javax.net.ssl.SSLSocketFactory;
import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.DefaultRedisCredentials;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.JedisClientConfig;
import redis.clients.jedis.JedisCluster;
import redis.clients.jedis.RedisClient;
import redis.clients.jedis.RedisCredentials;
import redis.clients.jedis.RedisCredentialsProvider;
import redis.clients.jedis.UnifiedJedis;
import software.amazon.awssdk.auth.credentials.AwsCredentials;
import software.amazon.awssdk.auth.credentials.AwsSessionCredentials;
import software.amazon.awssdk.auth.credentials.DefaultCredentialsProvider;
import software.amazon.awssdk.regions.providers.DefaultAwsRegionProviderChain;

/**
 * The built-in L2 adapter: ElastiCache for Valkey (or any Redis-protocol server) through Jedis, cluster mode or not,
 * TLS, and IAM auth (a fresh SigV4 token as the password of each new connection). Only loaded when
 * {@code PROMPT_SERVING_CACHE_ENDPOINT} is set; Jedis is an optional dependency a reader without the cache never carries.
 * Connects lazily, and {@link #reset()} drops every connection (before a SnapStart snapshot).
 */
public final class JedisL2 implements PromptCacheL2, SharedTier.Resettable {
  /** Settings of the connection (what the environment or a test gives). */
  public static final class Config {
    public String host;
    public int port;
    public boolean tls = true;
    public boolean cluster = true;
    /** IAM auth: the user id and cache name the token is signed for; null for password (or no) auth. */
    public String iamUserId;
    public String iamCacheName;
    public boolean serverless = true;
    public String username;
    public String password;
    public SSLSocketFactory sslSocketFactory;
    public int connectTimeoutMs = 1000;
    public int commandTimeoutMs = 100;
  }

  private final Config config;
  private volatile UnifiedJedis jedis;

  public JedisL2(Config config) {
    this.config = config;
  }

  /** From {@code PROMPT_SERVING_CACHE_*} (null without an endpoint); the message of a bad value names the variable. */
  static PromptCacheL2 fromEnvironment(Map<String, String> env, ResolvedOptions options) {
    String endpoint = env.getOrDefault("PROMPT_SERVING_CACHE_ENDPOINT", "").trim();
    if (endpoint.isEmpty()) return null;
    java.util.regex.Matcher m = java.util.regex.Pattern.compile("(.+):(\\d{1,5})").matcher(endpoint);
    if (!m.matches()) throw new PromptServingException("PROMPT_SERVING_CACHE_ENDPOINT=" + Json.stringify(endpoint) + " must be host:port");
    Config c = new Config();
    c.host = m.group(1);
    c.port = Integer.parseInt(m.group(2));
    c.tls = flag(env, "PROMPT_SERVING_CACHE_TLS");
    c.cluster = flag(env, "PROMPT_SERVING_CACHE_CLUSTER");
    String auth = oneOf(env, "PROMPT_SERVING_CACHE_AUTH", "iam", "none");
    String resource = oneOf(env, "PROMPT_SERVING_CACHE_RESOURCE_TYPE", "ServerlessCache", "ReplicationGroup");
    if (auth.equals("iam")) {
      c.iamUserId = required(env, "PROMPT_SERVING_CACHE_USER");
      c.iamCacheName = required(env, "PROMPT_SERVING_CACHE_NAME");
      c.serverless = resource.equals("ServerlessCache");
    }
    c.connectTimeoutMs = (int) options.l2ConnectTimeoutMs;
    c.commandTimeoutMs = (int) options.l2TimeoutMs;
    return new JedisL2(c);
  }

  private static boolean flag(Map<String, String> env, String name) {
    String raw = env.get(name);
    String v = raw == null ? "" : raw.trim().toLowerCase(java.util.Locale.ROOT);
    if (v.isEmpty()) return true;
    if (!v.equals("true") && !v.equals("false")) throw new PromptServingException(name + "=" + Json.stringify(raw) + " must be true or false");
    return v.equals("true");
  }

  private static String oneOf(Map<String, String> env, String name, String first, String second) {
    String v = env.getOrDefault(name, "").trim();
    if (v.isEmpty()) return first;
    if (!v.equals(first) && !v.equals(second)) throw new PromptServingException(name + "=" + Json.stringify(v) + " must be " + first + " or " + second);
    return v;
  }

  private static String required(Map<String, String> env, String name) {
    String v = env.getOrDefault(name, "").trim();
    if (v.isEmpty()) throw new PromptServingException(name + " must be set when PROMPT_SERVING_CACHE_AUTH is iam (the construct sets it)");
    return v;
  }

  private UnifiedJedis jedis() {
    UnifiedJedis j = jedis;
    if (j == null) {
      synchronized (this) {
        j = jedis;
        if (j == null) jedis = j = connect();
      }
    }
    return j;
  }

  private UnifiedJedis connect() {
    DefaultJedisClientConfig.Builder b = DefaultJedisClientConfig.builder()
        .connectionTimeoutMillis(config.connectTimeoutMs)
        .socketTimeoutMillis(Math.max(config.commandTimeoutMs, 1))
        .clientName("cdk-prompt-serving-java")
        .ssl(config.tls);
    if (config.tls) {
      SSLParameters params = new SSLParameters();
      params.setEndpointIdentificationAlgorithm("HTTPS");
      b.sslParameters(params);
      if (config.sslSocketFactory != null) b.sslSocketFactory(config.sslSocketFactory);
    }
    if (config.iamUserId != null) {
      b.credentialsProvider(new IamCredentials(config));
    } else if (config.password != null) {
      b.user(config.username).password(config.password);
    }
    JedisClientConfig clientConfig = b.build();
    HostAndPort node = new HostAndPort(config.host, config.port);
    return config.cluster ? new JedisCluster(Collections.singleton(node), clientConfig) : RedisClient.builder().hostAndPort(node).clientConfig(clientConfig).build();
  }

  /** A new IAM token for each new connection (tokens last 15 minutes; connections outlive them, as ElastiCache allows). */
  private static final class IamCredentials implements RedisCredentialsProvider {
    private final Config config;

    IamCredentials(Config config) {
      this.config = config;
    }

    @Override
    public RedisCredentials get() {
      AwsCredentials creds;
      try (DefaultCredentialsProvider provider = DefaultCredentialsProvider.builder().build()) {
        creds = provider.resolveCredentials();
      }
      String region = new DefaultAwsRegionProviderChain().getRegion().id();
      String session = creds instanceof AwsSessionCredentials ? ((AwsSessionCredentials) creds).sessionToken() : null;
      String token = IamAuthToken.create(config.iamCacheName, config.iamUserId, region, creds.accessKeyId(), creds.secretAccessKey(),
          session, config.serverless, Instant.now());
      return new DefaultRedisCredentials(config.iamUserId, token);
    }
  }

  @Override
  public String get(String key) {
    return jedis().get(key);
  }

  @Override
  public void set(String key, String value, int ttlSeconds) {
    // SET … EX (not SETEX): the reader's ACL allows `set` only (src/schema/l2.ts L2_READER_COMMANDS)
    jedis().set(key, value, redis.clients.jedis.params.SetParams.setParams().ex(ttlSeconds));
  }

  @Override
  public boolean writeThrough() {
    return true;
  }

  /** Whether a connection (pool) is open. */
  boolean connected() {
    return jedis != null;
  }

  @Override
  public synchronized void reset() {
    UnifiedJedis j = jedis;
    jedis = null;
    if (j != null) j.close();
  }

  @Override
  public void close() {
    reset();
  }

  static Supplier<String> describe(Config c) {
    return () -> c.host + ":" + c.port;
  }
}
