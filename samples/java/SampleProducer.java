import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Random;
import java.util.TreeMap;
import java.util.concurrent.Future;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * The sample's producer with the Java reference client: creates its topic (Admin), then on each "produce N" line of
 * stdin sends N records round robin over the partitions, waits for every acknowledgement and prints them as one JSON
 * line ({"what": "acked", "offsets": {"topic:partition": [offsets]}}), the sample's ground truth of what was
 * written, with the client's own count of the record sends it retried and the ones that failed so far (its
 * producer-metrics record-retry-total and record-error-total: retries are invisible to the callbacks, which see
 * only the final outcome); "stop" (or stdin closing) closes it.
 *
 * Usage: SampleProducer bootstrap client.id topic partitions replication
 */
public final class SampleProducer {
    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], clientId = args[1], topic = args[2];
        int partitions = Integer.parseInt(args[3]);
        short replication = Short.parseShort(args[4]);
        createTopic(bootstrap, clientId, topic, partitions, replication);

        Properties props = new Properties();
        props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(ProducerConfig.CLIENT_ID_CONFIG, clientId);
        props.put(ProducerConfig.LINGER_MS_CONFIG, "5");
        props.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        props.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        Random rng = new Random(44);
        int sent = 0;
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(props);
             BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
            String line;
            while ((line = in.readLine()) != null && !line.trim().equals("stop")) {
                int n = Integer.parseInt(line.trim().split("\\s+")[1]);
                List<Future<RecordMetadata>> acks = new ArrayList<>();
                for (int i = 0; i < n; i++, sent++) {
                    byte[] key = ("host-" + rng.nextInt(20)).getBytes(StandardCharsets.UTF_8);
                    byte[] value = ("metric-" + sent + " load=" + rng.nextInt(100)).getBytes(StandardCharsets.UTF_8);
                    acks.add(producer.send(new ProducerRecord<>(topic, sent % partitions, key, value)));
                }
                Map<String, List<Long>> offsets = new TreeMap<>();
                for (Future<RecordMetadata> ack : acks) {
                    RecordMetadata md = ack.get();
                    offsets.computeIfAbsent(md.topic() + ":" + md.partition(), k -> new ArrayList<>()).add(md.offset());
                }
                Json.emit(clientId, "acked", Map.of("offsets", offsets,
                        "record_retry_total", metric(producer, "record-retry-total"),
                        "record_error_total", metric(producer, "record-error-total")));
            }
        }
        Json.emit(clientId, "closed", new HashMap<>());
    }

    /** A cumulative count of the producer's "producer-metrics" group. */
    static long metric(KafkaProducer<byte[], byte[]> producer, String name) {
        return producer.metrics().entrySet().stream()
                .filter(e -> e.getKey().group().equals("producer-metrics") && e.getKey().name().equals(name))
                .mapToLong(e -> ((Number) e.getValue().metricValue()).longValue()).sum();
    }

    /** Creates `topic` with an Admin client named `clientId`-admin, and says so. */
    static void createTopic(String bootstrap, String clientId, String topic, int partitions, short replication)
            throws Exception {
        Properties admin = new Properties();
        admin.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        admin.put(AdminClientConfig.CLIENT_ID_CONFIG, clientId + "-admin");
        try (Admin client = Admin.create(admin)) {
            client.createTopics(List.of(new NewTopic(topic, partitions, replication))).all().get();
        }
        Json.emit(clientId, "topic_created", Map.of("topic", topic, "partitions", partitions));
    }

}
