package io.github.cdkpromptserving.runtime;

import java.util.ArrayList;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import software.amazon.awssdk.core.SdkBytes;
import software.amazon.awssdk.services.dynamodb.model.AttributeValue;

/** DynamoDB JSON ({@code {"S": …}}, as the fixtures and the L2 values hold items) to SDK attribute values. */
final class DdbJson {
  private DdbJson() {}

  static Map<String, AttributeValue> toItem(Map<String, Object> item) {
    Map<String, AttributeValue> out = new LinkedHashMap<>();
    for (Map.Entry<String, Object> e : item.entrySet()) out.put(e.getKey(), toAttr(Fixtures.map(e.getValue())));
    return out;
  }

  static AttributeValue toAttr(Map<String, Object> a) {
    if (a.containsKey("S")) return AttributeValue.builder().s((String) a.get("S")).build();
    if (a.containsKey("N")) return AttributeValue.builder().n((String) a.get("N")).build();
    if (a.containsKey("BOOL")) return AttributeValue.builder().bool((Boolean) a.get("BOOL")).build();
    if (a.containsKey("NULL")) return AttributeValue.builder().nul(true).build();
    if (a.containsKey("B")) return AttributeValue.builder().b(SdkBytes.fromByteArray(Base64.getDecoder().decode((String) a.get("B")))).build();
    if (a.containsKey("L")) {
      List<AttributeValue> l = new ArrayList<>();
      for (Object v : Fixtures.list(a.get("L"))) l.add(toAttr(Fixtures.map(v)));
      return AttributeValue.builder().l(l).build();
    }
    if (a.containsKey("M")) return AttributeValue.builder().m(toItem(Fixtures.map(a.get("M")))).build();
    if (a.containsKey("SS")) {
      List<String> l = new ArrayList<>();
      for (Object v : Fixtures.list(a.get("SS"))) l.add((String) v);
      return AttributeValue.builder().ss(l).build();
    }
    if (a.containsKey("NS")) {
      List<String> l = new ArrayList<>();
      for (Object v : Fixtures.list(a.get("NS"))) l.add((String) v);
      return AttributeValue.builder().ns(l).build();
    }
    throw new IllegalArgumentException("unsupported attribute " + a.keySet());
  }
}
