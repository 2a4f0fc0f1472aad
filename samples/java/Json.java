import java.util.Collection;
import java.util.Map;
import java.util.StringJoiner;
import java.util.TreeMap;

/** The few JSON values the sample programs print (strings, numbers, booleans, lists, maps): no library needed. */
final class Json {
    private Json() {
    }

    /** One line of ground truth on stdout (the harness's pipe): {"wall": unix seconds, "client_id", "what", ...}. */
    static synchronized void emit(String clientId, String what, Map<String, ?> detail) {
        StringBuilder out = new StringBuilder("{\"wall\": ").append(System.currentTimeMillis() / 1000.0)
                .append(", \"client_id\": ").append(of(clientId)).append(", \"what\": ").append(of(what));
        new TreeMap<>(detail).forEach((k, v) -> out.append(", ").append(of(k)).append(": ").append(of(v)));
        System.out.println(out.append('}'));
        System.out.flush();
    }

    static String of(Object value) {
        if (value == null) {
            return "null";
        }
        if (value instanceof Number || value instanceof Boolean) {
            return value.toString();
        }
        if (value instanceof Collection<?> items) {
            StringJoiner out = new StringJoiner(", ", "[", "]");
            items.forEach(item -> out.add(of(item)));
            return out.toString();
        }
        if (value instanceof Map<?, ?> map) {
            StringJoiner out = new StringJoiner(", ", "{", "}");
            map.forEach((k, v) -> out.add(of(String.valueOf(k)) + ": " + of(v)));
            return out.toString();
        }
        StringBuilder out = new StringBuilder("\"");
        for (char c : value.toString().toCharArray()) {
            switch (c) {
                case '"' -> out.append("\\\"");
                case '\\' -> out.append("\\\\");
                case '\n' -> out.append("\\n");
                case '\r' -> out.append("\\r");
                case '\t' -> out.append("\\t");
                default -> {
                    if (c < 0x20) {
                        out.append(String.format("\\u%04x", (int) c));
                    } else {
                        out.append(c);
                    }
                }
            }
        }
        return out.append('"').toString();
    }
}
