import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicBoolean;

import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerInterceptor;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.CloseOptions;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.TaskMetadata;
import org.apache.kafka.streams.ThreadMetadata;
import org.apache.kafka.streams.processor.api.FixedKeyProcessor;
import org.apache.kafka.streams.processor.api.FixedKeyProcessorContext;
import org.apache.kafka.streams.processor.api.FixedKeyRecord;

/**
 * One instance of a Kafka Streams application in a KIP-1071 streams group (group.protocol=streams), in its own JVM:
 * source topic -> processValues (upper-cases the value) -> sink topic, one stream thread. The broker assigns its
 * tasks (one per source partition); what the instance saw is the sample's ground truth, as JSON lines on stdout with
 * wall-clock times: every state transition (KafkaStreams.setStateListener), the active and standby tasks of its
 * thread whenever they change (metadataForLocalThreads, with each task's partitions), each task's processor
 * initialised and closed (ProcessorContext.taskId, the task moving here or away), every record it processed
 * (task, partition, offset) and every record its producer wrote to the sink, as the broker acknowledged it (a
 * producer interceptor: Streams hands the application no other account of its sink's offsets).
 *
 * Usage: StreamsApp key=value... with bootstrap, client.id, application.id, source, sink, optionally
 * sink.partitions (create the sink topic first, with an Admin client named client.id-sink-admin), state.dir and
 * max.seconds. It runs until a "stop" line on stdin (or stdin closing), then closes, leaving the group.
 */
public final class StreamsApp {
    private static String clientId;

    public static void main(String[] args) throws Exception {
        Map<String, String> opt = Args.of(args);
        clientId = opt.get("client.id");
        if (opt.containsKey("sink.partitions")) {
            SampleProducer.createTopic(opt.get("bootstrap"), clientId + "-sink", opt.get("sink"),
                    Integer.parseInt(opt.get("sink.partitions")), (short) 1);
        }
        Properties props = new Properties();
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, opt.get("bootstrap"));
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, opt.get("application.id"));
        props.put(StreamsConfig.CLIENT_ID_CONFIG, clientId);
        props.put(StreamsConfig.GROUP_PROTOCOL_CONFIG, "streams");
        props.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, 1);
        props.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 500);
        props.put(StreamsConfig.STATE_DIR_CONFIG, opt.getOrDefault("state.dir", "/tmp/kafka-streams"));
        props.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.ByteArraySerde.class);
        props.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.ByteArraySerde.class);
        props.put(StreamsConfig.consumerPrefix("auto.offset.reset"), "earliest");
        props.put(StreamsConfig.producerPrefix(ProducerConfig.INTERCEPTOR_CLASSES_CONFIG), SinkAcks.class.getName());
        long deadline = System.nanoTime() + Long.parseLong(opt.getOrDefault("max.seconds", "120")) * 1_000_000_000L;

        StreamsBuilder builder = new StreamsBuilder();
        builder.<byte[], byte[]>stream(opt.get("source")).processValues(Upper::new).to(opt.get("sink"));
        AtomicBoolean stop = Stop.onStdin();
        Json.emit(clientId, "started", Map.of("application_id", opt.get("application.id")));
        try (KafkaStreams streams = new KafkaStreams(builder.build(), props)) {
            streams.setStateListener((now, before) ->
                    Json.emit(clientId, "state", Map.of("old_state", before.name(), "new_state", now.name())));
            streams.start();
            Map<String, Object> tasks = Map.of();
            while (!stop.get() && System.nanoTime() < deadline) {
                Thread.sleep(100);
                if (streams.state() == KafkaStreams.State.RUNNING) {
                    Map<String, Object> current = tasks(streams);
                    if (!current.equals(tasks)) {
                        tasks = current;
                        Json.emit(clientId, "tasks", current);
                    }
                }
            }
            Json.emit(clientId, "closing", Map.of());
            boolean closed = streams.close(CloseOptions.groupMembershipOperation(
                    CloseOptions.GroupMembershipOperation.LEAVE_GROUP).withTimeout(Duration.ofSeconds(15)));
            Json.emit(clientId, "closed", Map.of("clean", closed));
        }
    }

    /** The active and standby tasks of the instance's stream thread: {task id: [topic:partition, ...]} each. */
    private static Map<String, Object> tasks(KafkaStreams streams) {
        Map<String, List<String>> active = new TreeMap<>();
        Map<String, List<String>> standby = new TreeMap<>();
        for (ThreadMetadata thread : streams.metadataForLocalThreads()) {
            thread.activeTasks().forEach(task -> active.put(task.taskId().toString(), partitions(task)));
            thread.standbyTasks().forEach(task -> standby.put(task.taskId().toString(), partitions(task)));
        }
        return Map.of("active", active, "standby", standby);
    }

    private static List<String> partitions(TaskMetadata task) {
        List<String> names = new ArrayList<>();
        for (TopicPartition tp : task.topicPartitions()) {
            names.add(tp.topic() + ":" + tp.partition());
        }
        names.sort(null);
        return names;
    }

    /** Every record the instance's producer wrote, once acknowledged: an "acked" line like SampleProducer's. */
    public static final class SinkAcks implements ProducerInterceptor<byte[], byte[]> {
        private String producerId;

        @Override
        public void configure(Map<String, ?> configs) {
            producerId = String.valueOf(configs.get(ProducerConfig.CLIENT_ID_CONFIG));
        }

        @Override
        public ProducerRecord<byte[], byte[]> onSend(ProducerRecord<byte[], byte[]> record) {
            return record;
        }

        @Override
        public void onAcknowledgement(RecordMetadata md, Exception exception) {
            if (exception == null && md.hasOffset()) {
                Json.emit(producerId, "acked", Map.of("offsets", Map.of(md.topic() + ":" + md.partition(),
                        List.of(md.offset()))));
            }
        }

        @Override
        public void close() {
        }
    }

    /** The topology's one processor: says which task it runs in when the task starts and stops here. */
    private static final class Upper implements FixedKeyProcessor<byte[], byte[], byte[]> {
        private FixedKeyProcessorContext<byte[], byte[]> context;

        @Override
        public void init(FixedKeyProcessorContext<byte[], byte[]> context) {
            this.context = context;
            Json.emit(clientId, "task_initialized", Map.of("task_id", context.taskId().toString()));
        }

        @Override
        public void process(FixedKeyRecord<byte[], byte[]> record) {
            context.recordMetadata().ifPresent(md -> Json.emit(clientId, "processed", Map.of(
                    "task_id", context.taskId().toString(), "topic", md.topic(), "partition", md.partition(),
                    "offset", md.offset())));
            String value = new String(record.value(), StandardCharsets.UTF_8).toUpperCase(Locale.ROOT);
            context.forward(record.withValue(value.getBytes(StandardCharsets.UTF_8)));
        }

        @Override
        public void close() {
            Json.emit(clientId, "task_closed", Map.of("task_id", context.taskId().toString()));
        }
    }
}
