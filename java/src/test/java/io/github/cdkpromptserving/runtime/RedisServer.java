package io.github.cdkpromptserving.runtime;

import java.io.IOException;
import java.io.InputStream;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyStore;
import java.security.cert.CertificateFactory;
import java.security.cert.X509Certificate;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLSocketFactory;
import javax.net.ssl.TrustManagerFactory;
import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.JedisCluster;

/**
 * A real {@code redis-server} as python/tests/services.py starts it (secure): TLS only (certificate by openssl), cluster
 * mode with one node owning every slot, ACL users {@code admin}, {@code reader} (the library's reader rules: read every
 * key of the library, write fills only, the reader commands) and {@code iam-reader} (any password, standing in for IAM).
 */
final class RedisServer implements AutoCloseable {
  static final String ADMIN_PASSWORD = "admin-password";
  static final String READER_PASSWORD = "reader-secret";

  final int port;
  final Path dir;
  final Path ca;
  final SSLSocketFactory ssl;
  private final Process process;
  private JedisCluster admin;

  RedisServer() throws Exception {
    this(freePort());
  }

  RedisServer(int port) throws Exception {
    this.port = port;
    this.dir = Files.createTempDirectory("prompt-serving-redis-java");
    this.ca = dir.resolve("cert.pem");
    Path key = dir.resolve("key.pem");
    run("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key.toString(), "-out", ca.toString(), "-days", "2",
        "-subj", "/CN=localhost", "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost");
    String p = L2Schema.KEY_PREFIX;
    List<String> readerRules = List.of("%R~" + p + "/*", "~" + p + "/*/#fill/*", "-@all", "+get", "+set", "+ping", "+hello", "+auth",
        "+cluster|slots", "+cluster|shards", "+client|setname", "+readonly");
    List<String> args = new ArrayList<>(List.of("redis-server", "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir.toString(),
        "--port", "0", "--tls-port", String.valueOf(port), "--tls-cert-file", ca.toString(), "--tls-key-file", key.toString(),
        "--tls-ca-cert-file", ca.toString(), "--tls-auth-clients", "no", "--cluster-enabled", "yes", "--cluster-port", String.valueOf(freePort()),
        "--cluster-config-file", dir.resolve("nodes.conf").toString(), "--tls-cluster", "yes",
        "--user", "default", "off", "--user", "admin", "on", ">" + ADMIN_PASSWORD, "~*", "&*", "+@all",
        "--user", "reader", "on", ">" + READER_PASSWORD));
    args.addAll(readerRules);
    args.addAll(List.of("--user", "iam-reader", "on", "nopass"));
    args.addAll(readerRules);
    process = new ProcessBuilder(args).redirectErrorStream(true).redirectOutput(dir.resolve("redis.log").toFile()).start();
    ssl = sslFactory(ca);
    long until = System.currentTimeMillis() + 15_000;
    while (true) {
      try (redis.clients.jedis.Jedis j = new redis.clients.jedis.Jedis(new HostAndPort("127.0.0.1", port), adminConfig())) {
        j.ping();
        j.sendCommand(redis.clients.jedis.Protocol.Command.CLUSTER, "ADDSLOTSRANGE", "0", "16383");
        while (!j.clusterInfo().contains("cluster_state:ok")) Thread.sleep(50);
        break;
      } catch (RuntimeException e) {
        if (System.currentTimeMillis() > until || !process.isAlive()) throw new IllegalStateException("redis-server did not start: "
            + Files.readString(dir.resolve("redis.log")), e);
        Thread.sleep(50);
      }
    }
  }

  DefaultJedisClientConfig adminConfig() {
    return DefaultJedisClientConfig.builder().ssl(true).sslSocketFactory(ssl).user("admin").password(ADMIN_PASSWORD).build();
  }

  /** An admin connection (every key and command). */
  synchronized JedisCluster admin() {
    if (admin == null) admin = new JedisCluster(Collections.singleton(new HostAndPort("127.0.0.1", port)), adminConfig());
    return admin;
  }

  /** The library's L2 adapter as the reader user over TLS (cluster mode). */
  JedisL2 reader(String user, String password) {
    JedisL2.Config c = new JedisL2.Config();
    c.host = "127.0.0.1";
    c.port = port;
    c.username = user;
    c.password = password;
    c.sslSocketFactory = ssl;
    c.commandTimeoutMs = 2000;
    return new JedisL2(c);
  }

  static SSLSocketFactory sslFactory(Path caPem) throws Exception {
    KeyStore store = KeyStore.getInstance(KeyStore.getDefaultType());
    store.load(null, null);
    try (InputStream in = Files.newInputStream(caPem)) {
      store.setCertificateEntry("ca", (X509Certificate) CertificateFactory.getInstance("X.509").generateCertificate(in));
    }
    TrustManagerFactory tmf = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
    tmf.init(store);
    SSLContext ctx = SSLContext.getInstance("TLS");
    ctx.init(null, tmf.getTrustManagers(), null);
    return ctx.getSocketFactory();
  }

  static int freePort() throws IOException {
    try (ServerSocket s = new ServerSocket(0)) {
      return s.getLocalPort();
    }
  }

  private static void run(String... cmd) throws IOException, InterruptedException {
    Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
    String out = new String(p.getInputStream().readAllBytes());
    if (p.waitFor() != 0) throw new IllegalStateException(String.join(" ", cmd) + ": " + out);
  }

  @Override
  public void close() {
    if (admin != null) admin.close();
    process.destroy();
  }
}
