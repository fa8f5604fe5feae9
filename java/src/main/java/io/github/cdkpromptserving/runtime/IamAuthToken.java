package io.github.cdkpromptserving.runtime;

import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.List;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

/**
 * ElastiCache IAM auth tokens (src/runtime/iam-token.ts): a SigV4-presigned {@code GET http://<cache>/?Action=connect&User=<user>}
 * (and {@code ResourceType=ServerlessCache} for a serverless cache), service {@code elasticache}, 900 seconds, without the
 * scheme. Byte-identical with the Node and Python clients (fixture iam-token.json). Used as the password of the L2 connection.
 */
public final class IamAuthToken {
  public static final int EXPIRES_SECONDS = 900;
  private static final DateTimeFormatter STAMP = DateTimeFormatter.ofPattern("yyyyMMdd'T'HHmmss'Z'").withZone(ZoneOffset.UTC);

  private IamAuthToken() {}

  public static String create(String cacheName, String userId, String region, String accessKeyId, String secretAccessKey,
      String sessionToken, boolean serverless, Instant now) {
    String stamp = STAMP.format(now);
    String day = stamp.substring(0, 8);
    String scope = day + "/" + region + "/elasticache/aws4_request";
    List<String[]> params = new ArrayList<>();
    params.add(new String[] {"Action", "connect"});
    params.add(new String[] {"User", userId});
    if (serverless) params.add(new String[] {"ResourceType", "ServerlessCache"});
    params.add(new String[] {"X-Amz-Algorithm", "AWS4-HMAC-SHA256"});
    params.add(new String[] {"X-Amz-Credential", accessKeyId + "/" + scope});
    params.add(new String[] {"X-Amz-Date", stamp});
    params.add(new String[] {"X-Amz-Expires", String.valueOf(EXPIRES_SECONDS)});
    params.add(new String[] {"X-Amz-SignedHeaders", "host"});
    if (sessionToken != null && !sessionToken.isEmpty()) params.add(new String[] {"X-Amz-Security-Token", sessionToken});
    List<String[]> encoded = new ArrayList<>();
    for (String[] p : params) encoded.add(new String[] {encode(p[0]), encode(p[1])});
    List<String[]> sorted = new ArrayList<>(encoded);
    sorted.sort((a, b) -> a[0].equals(b[0]) ? a[1].compareTo(b[1]) : a[0].compareTo(b[0]));
    StringBuilder canonicalQuery = new StringBuilder();
    for (String[] p : sorted) canonicalQuery.append(canonicalQuery.length() == 0 ? "" : "&").append(p[0]).append('=').append(p[1]);
    String canonicalRequest = String.join("\n", "GET", "/", canonicalQuery, "host:" + cacheName, "", "host", sha256Hex(""));
    String stringToSign = String.join("\n", "AWS4-HMAC-SHA256", stamp, scope, sha256Hex(canonicalRequest));
    byte[] key = hmac(("AWS4" + secretAccessKey).getBytes(StandardCharsets.UTF_8), day);
    for (String part : new String[] {region, "elasticache", "aws4_request"}) key = hmac(key, part);
    String signature = Schema.hex(hmac(key, stringToSign));
    StringBuilder query = new StringBuilder();
    for (String[] p : encoded) query.append(query.length() == 0 ? "" : "&").append(p[0]).append('=').append(p[1]);
    return cacheName + "/?" + query + "&X-Amz-Signature=" + signature;
  }

  /** {@code encodeURIComponent} with {@code !'()*} escaped too (RFC 3986 unreserved characters only stay). */
  static String encode(String text) {
    StringBuilder sb = new StringBuilder();
    for (byte b : Schema.jsUtf8(text)) {
      int c = b & 0xff;
      if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.' || c == '~') {
        sb.append((char) c);
      } else {
        sb.append('%').append(Character.toUpperCase(Character.forDigit(c >> 4, 16))).append(Character.toUpperCase(Character.forDigit(c & 0xf, 16)));
      }
    }
    return sb.toString();
  }

  private static String sha256Hex(String text) {
    return Schema.hex(Schema.sha256(Schema.jsUtf8(text)));
  }

  private static byte[] hmac(byte[] key, String data) {
    try {
      Mac mac = Mac.getInstance("HmacSHA256");
      mac.init(new SecretKeySpec(key, "HmacSHA256"));
      return mac.doFinal(data.getBytes(StandardCharsets.UTF_8));
    } catch (java.security.GeneralSecurityException e) {
      throw new IllegalStateException(e);
    }
  }
}
