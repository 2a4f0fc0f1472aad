import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicBoolean;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * One member of a KIP-932 share group with the Java reference client (KafkaShareConsumer) in explicit
 * acknowledgement mode, in its own JVM. What the application saw is the sample's ground truth, printed as JSON lines:
 * every record it was handed with the delivery count the broker stated (ConsumerRecord.deliveryCount()) and the
 * acknowledgement it sent, what commitSync returned per partition and what the acknowledgement commit callback was
 * told.
 *
 * Each record's fate is scripted by its offset ("fates": offset:fate,...; default accept): "release" releases its
 * first delivery and accepts the next; "reject" rejects it; "poison" releases every delivery, so the broker archives
 * it at the group's delivery count limit; "hold" keeps its first delivery unacknowledged (no poll, the rest of the
 * batch acknowledged and committed) for "hold.ms", past the acquisition lock, then accepts it: the lock ran out
 * meanwhile and the record went back to the share partition; what the broker answers is in the commit's result.
 *
 * Usage: ShareMember key=value... with bootstrap, client.id, group.id, topic, and optionally fates, hold.ms,
 * fetch.min.bytes (the consumer's setting), max.seconds and configure.group (before subscribing, an Admin client
 * named client.id-admin sets the group's share.auto.offset.reset to earliest and describes the group's configs,
 * printed as "group_configs"). It polls until a "stop" line on stdin (or stdin closing), then closes the consumer.
 */
public final class ShareMember {
    private static String clientId;

    public static void main(String[] args) throws Exception {
        Map<String, String> opt = Args.of(args);
        clientId = opt.get("client.id");
        String group = opt.get("group.id");
        Map<Long, String> fates = new HashMap<>();
        for (String fate : opt.getOrDefault("fates", "").split(",")) {
            if (!fate.isEmpty()) {
                String[] kv = fate.split(":");
                fates.put(Long.parseLong(kv[0]), kv[1]);
            }
        }
        long holdMs = Long.parseLong(opt.getOrDefault("hold.ms", "0"));
        long deadline = System.nanoTime() + Long.parseLong(opt.getOrDefault("max.seconds", "120")) * 1_000_000_000L;
        if (opt.containsKey("configure.group")) {
            configureGroup(opt.get("bootstrap"), group);
        }

        Properties props = new Properties();
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, opt.get("bootstrap"));
        props.put(ConsumerConfig.CLIENT_ID_CONFIG, clientId);
        props.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        props.put(ConsumerConfig.SHARE_ACKNOWLEDGEMENT_MODE_CONFIG, "explicit");
        props.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        props.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        if (opt.containsKey("fetch.min.bytes")) {
            props.put(ConsumerConfig.FETCH_MIN_BYTES_CONFIG, opt.get("fetch.min.bytes"));
        }

        AtomicBoolean stop = Stop.onStdin();

        Json.emit(clientId, "started", Map.of("group_id", group));
        boolean held = false;
        try (KafkaShareConsumer<byte[], byte[]> consumer = new KafkaShareConsumer<>(props)) {
            consumer.setAcknowledgementCommitCallback((offsets, e) -> {
                Map<String, Object> detail = new HashMap<>();
                detail.put("offsets", offsetsJson(offsets));
                detail.put("exception", exceptionName(e));
                Json.emit(clientId, "ack_callback", detail);
            });
            consumer.subscribe(List.of(opt.get("topic")));
            while (!stop.get() && System.nanoTime() < deadline) {
                ConsumerRecords<byte[], byte[]> records;
                try {
                    records = consumer.poll(Duration.ofMillis(200));
                } catch (RuntimeException e) {
                    error("poll", e);
                    continue;
                }
                ConsumerRecord<byte[], byte[]> holding = null;
                for (ConsumerRecord<byte[], byte[]> r : records) {
                    int count = r.deliveryCount().map(Short::intValue).orElse(-1);
                    AcknowledgeType ack = ackFor(fates.getOrDefault(r.offset(), "accept"), count);
                    if (ack == null && !held) {
                        holding = r;
                    } else {
                        consumer.acknowledge(r, ack == null ? AcknowledgeType.ACCEPT : ack);
                    }
                    delivered(r, count, holding == r ? null : (ack == null ? AcknowledgeType.ACCEPT : ack));
                }
                if (records.isEmpty()) {
                    continue;
                }
                commit(consumer, "commit");
                if (holding != null) {
                    held = true;
                    Json.emit(clientId, "holding", Map.of("topic", holding.topic(), "partition", holding.partition(),
                            "offset", holding.offset(), "hold_ms", holdMs,
                            "lock_ms", consumer.acquisitionLockTimeoutMs().orElse(-1)));
                    Thread.sleep(holdMs);
                    consumer.acknowledge(holding, AcknowledgeType.ACCEPT);
                    Json.emit(clientId, "late_ack", Map.of("topic", holding.topic(), "partition",
                            holding.partition(), "offset", holding.offset(), "ack", "accept"));
                    commit(consumer, "late_commit");
                }
            }
            Json.emit(clientId, "closing", Map.of());
        } catch (RuntimeException e) {
            error("close", e);
        }
        Json.emit(clientId, "closed", Map.of());
    }

    /** The acknowledgement for a record's n-th delivery under its fate (null: hold it). */
    private static AcknowledgeType ackFor(String fate, int count) {
        return switch (fate) {
            case "release" -> count == 1 ? AcknowledgeType.RELEASE : AcknowledgeType.ACCEPT;
            case "reject" -> AcknowledgeType.REJECT;
            case "poison" -> AcknowledgeType.RELEASE;
            case "hold" -> count == 1 ? null : AcknowledgeType.ACCEPT;
            default -> AcknowledgeType.ACCEPT;
        };
    }

    private static void delivered(ConsumerRecord<byte[], byte[]> r, int count, AcknowledgeType ack) {
        Map<String, Object> detail = new HashMap<>();
        detail.put("topic", r.topic());
        detail.put("partition", r.partition());
        detail.put("offset", r.offset());
        detail.put("delivery_count", count);
        detail.put("ack", ack == null ? null : ack.toString().toLowerCase());
        Json.emit(clientId, "delivered", detail);
    }

    /** commitSync, with what it returned for each partition: null (the broker took the acknowledgements) or the
     *  exception's class. */
    private static void commit(KafkaShareConsumer<byte[], byte[]> consumer, String what) {
        try {
            Map<String, Object> results = new TreeMap<>();
            for (Map.Entry<TopicIdPartition, Optional<KafkaException>> e : consumer.commitSync().entrySet()) {
                results.put(e.getKey().topic() + ":" + e.getKey().partition(),
                        e.getValue().map(ShareMember::exceptionName).orElse(null));
            }
            Json.emit(clientId, what, Map.of("results", results));
        } catch (RuntimeException e) {
            error(what, e);
        }
    }

    /** Sets the group's share.auto.offset.reset to earliest (the default, latest, would skip records produced
     *  before the share partition is initialised) and prints the group's share configs as the broker describes them. */
    private static void configureGroup(String bootstrap, String group) throws Exception {
        Properties admin = new Properties();
        admin.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        admin.put(AdminClientConfig.CLIENT_ID_CONFIG, clientId + "-admin");
        ConfigResource resource = new ConfigResource(ConfigResource.Type.GROUP, group);
        try (Admin client = Admin.create(admin)) {
            client.incrementalAlterConfigs(Map.of(resource, List.of(new AlterConfigOp(
                    new ConfigEntry("share.auto.offset.reset", "earliest"), AlterConfigOp.OpType.SET)))).all().get();
            Config config = client.describeConfigs(List.of(resource)).all().get().get(resource);
            Map<String, String> shares = new TreeMap<>();
            for (ConfigEntry entry : config.entries()) {
                if (entry.name().startsWith("share.")) {
                    shares.put(entry.name(), entry.value());
                }
            }
            Json.emit(clientId, "group_configs", Map.of("group_id", group, "configs", shares));
        }
    }

    private static String exceptionName(Exception e) {
        return e == null ? null : e.getClass().getSimpleName();
    }

    private static Map<String, List<Long>> offsetsJson(Map<TopicIdPartition, Set<Long>> offsets) {
        Map<String, List<Long>> out = new TreeMap<>();
        offsets.forEach((tp, offs) -> {
            List<Long> sorted = new ArrayList<>(offs);
            sorted.sort(null);
            out.put(tp.topic() + ":" + tp.partition(), sorted);
        });
        return out;
    }

    private static void error(String during, RuntimeException e) {
        Json.emit(clientId, "exception", Map.of("during", during, "exception", e.getClass().getSimpleName(),
                "message", String.valueOf(e.getMessage())));
    }
}
