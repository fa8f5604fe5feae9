package io.github.cdkpromptserving.runtime;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import software.amazon.awssdk.core.SdkBytes;
import software.amazon.awssdk.services.dynamodb.model.AttributeValue;

/** DynamoDB attribute values to the JSON values of the contract (numbers as doubles, sets as lists, binary as byte[]). */
final class DdbCodec {
  private DdbCodec() {}

  static Map<String, Object> fromItem(Map<String, AttributeValue> item) {
    Map<String, Object> out = new LinkedHashMap<>();
    for (Map.Entry<String, AttributeValue> e : item.entrySet()) out.put(e.getKey(), fromAttr(e.getValue()));
    return out;
  }

  static Object fromAttr(AttributeValue a) {
    if (a.s() != null) return a.s();
    if (a.n() != null) return Double.parseDouble(a.n());
    if (a.bool() != null) return a.bool();
    if (a.nul() != null) return null;
    if (a.hasL()) {
      List<Object> l = new ArrayList<>();
      for (AttributeValue v : a.l()) l.add(fromAttr(v));
      return l;
    }
    if (a.hasM()) return fromItem(a.m());
    if (a.b() != null) return a.b().asByteArray();
    if (a.hasSs()) return new ArrayList<Object>(a.ss());
    if (a.hasNs()) {
      List<Object> l = new ArrayList<>();
      for (String n : a.ns()) l.add(Double.parseDouble(n));
      return l;
    }
    if (a.hasBs()) {
      List<Object> l = new ArrayList<>();
      for (SdkBytes b : a.bs()) l.add(b.asByteArray());
      return l;
    }
    // An empty L or M: the SDK reports hasL()/hasM() false for an auto-construct list, true for a real empty one.
    throw new PromptStoreException("unsupported attribute value " + a);
  }
}
