import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicBoolean;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerGroupMetadata;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * One member of a KIP-848 consumer group (group.protocol=consumer) with the Java reference client, in its own JVM so
 * the sample harness can freeze it for real. It writes what the application saw as JSON lines on stdout, the sample's
 * ground truth: rebalance callbacks (assigned, revoked, lost) with the member id and epoch, the offsets every poll
 * returned, commits and the exceptions they raised, each with its wall-clock time.
 *
 * Usage: GroupMember key=value... with bootstrap, client.id, group.id, topic, and optionally group.instance.id
 * (a static member), isolation.level, stall.after.records (after receiving that many records and before committing
 * them, the process stops itself with SIGSTOP, like a JVM frozen by a long GC pause; the harness resumes it with
 * SIGCONT) and max.seconds. It polls and commits after every poll until a "stop" line on stdin (or stdin closing):
 * then it closes the consumer, which leaves the group (a static member leaves temporarily, keeping its assignment for
 * the session).
 */
public final class GroupMember {
    private static String clientId;

    public static void main(String[] args) throws Exception {
        Map<String, String> opt = Args.of(args);
        clientId = opt.get("client.id");
        Properties props = new Properties();
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, opt.get("bootstrap"));
        props.put(ConsumerConfig.CLIENT_ID_CONFIG, clientId);
        props.put(ConsumerConfig.GROUP_ID_CONFIG, opt.get("group.id"));
        props.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, "consumer");
        props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        props.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        props.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, opt.getOrDefault("max.poll.records", "10"));
        props.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        props.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        props.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, opt.getOrDefault("isolation.level", "read_uncommitted"));
        if (opt.containsKey("group.instance.id")) {
            props.put(ConsumerConfig.GROUP_INSTANCE_ID_CONFIG, opt.get("group.instance.id"));
        }
        int stallAfter = Integer.parseInt(opt.getOrDefault("stall.after.records", "0"));
        long deadline = System.nanoTime() + Long.parseLong(opt.getOrDefault("max.seconds", "120")) * 1_000_000_000L;

        AtomicBoolean stop = Stop.onStdin();

        Json.emit(clientId, "started", Map.of("group_instance_id", opt.getOrDefault("group.instance.id", "")));
        int received = 0;
        boolean stalled = false;
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(props)) {
            consumer.subscribe(List.of(opt.get("topic")), new Listener(consumer));
            while (!stop.get() && System.nanoTime() < deadline) {
                ConsumerRecords<byte[], byte[]> records;
                try {
                    records = consumer.poll(Duration.ofMillis(200));
                } catch (RuntimeException e) {
                    error("poll", e);
                    continue;
                }
                if (records.isEmpty()) {
                    continue;
                }
                Map<TopicPartition, OffsetAndMetadata> next = new HashMap<>();
                for (TopicPartition tp : records.partitions()) {
                    List<Long> offsets = new ArrayList<>();
                    for (ConsumerRecord<byte[], byte[]> r : records.records(tp)) {
                        offsets.add(r.offset());
                    }
                    next.put(tp, new OffsetAndMetadata(offsets.get(offsets.size() - 1) + 1));
                    Json.emit(clientId, "records",
                            Map.of("topic", tp.topic(), "partition", tp.partition(), "offsets", offsets));
                }
                received += records.count();
                if (stallAfter > 0 && !stalled && received >= stallAfter) {
                    stalled = true;
                    ConsumerGroupMetadata group = consumer.groupMetadata();
                    Json.emit(clientId, "stall", Map.of("member_id", group.memberId(),
                            "member_epoch", group.generationId(), "uncommitted", records.count()));
                    new ProcessBuilder("kill", "-STOP", Long.toString(ProcessHandle.current().pid()))
                            .inheritIO().start().waitFor();
                    Json.emit(clientId, "resumed", Map.of());
                }
                try {
                    consumer.commitSync(next, Duration.ofSeconds(10));
                    Json.emit(clientId, "committed", Map.of("offsets", offsetsJson(next)));
                } catch (RuntimeException e) {
                    error("commit", e);
                }
            }
            Json.emit(clientId, "closing", Map.of());
        } catch (RuntimeException e) {
            error("close", e);
        }
        Json.emit(clientId, "closed", Map.of("records", received));
    }

    /** The callbacks, with the member id and epoch the consumer has when each runs. */
    private static final class Listener implements ConsumerRebalanceListener {
        private final KafkaConsumer<byte[], byte[]> consumer;

        Listener(KafkaConsumer<byte[], byte[]> consumer) {
            this.consumer = consumer;
        }

        private void callback(String what, Collection<TopicPartition> partitions) {
            ConsumerGroupMetadata group = consumer.groupMetadata();
            List<String> names = new ArrayList<>();
            for (TopicPartition tp : partitions) {
                names.add(tp.topic() + ":" + tp.partition());
            }
            names.sort(null);
            Json.emit(clientId, what,
                    Map.of("member_id", group.memberId(), "member_epoch", group.generationId(), "partitions", names));
        }

        @Override
        public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
            callback("partitions_assigned", partitions);
        }

        @Override
        public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
            callback("partitions_revoked", partitions);
        }

        @Override
        public void onPartitionsLost(Collection<TopicPartition> partitions) {
            callback("partitions_lost", partitions);
        }
    }

    private static void error(String during, RuntimeException e) {
        Json.emit(clientId, "exception", Map.of("during", during, "exception", e.getClass().getSimpleName(),
                "message", String.valueOf(e.getMessage())));
    }

    private static Map<String, Long> offsetsJson(Map<TopicPartition, OffsetAndMetadata> offsets) {
        Map<String, Long> out = new TreeMap<>();
        offsets.forEach((tp, om) -> out.put(tp.topic() + ":" + tp.partition(), om.offset()));
        return out;
    }
}
