import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.Future;

import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * A transactional producer with the Java reference client (transactions v2 on an Apache Kafka 4.x broker: the
 * producer epoch is bumped at the end of every transaction). On each "run N" line of stdin it runs N transactions of
 * a few records each over every partition, committing them except every third, which it aborts, and prints each as a
 * JSON line ({"what": "transaction", "outcome", "offsets"}); an exception ends its run with an "exception" line
 * (ProducerFencedException once a second instance took its transactional id). "stop" (or stdin closing) closes it.
 *
 * Usage: TransactionalProducer bootstrap client.id transactional.id topic partitions [replication: create the topic]
 */
public final class TransactionalProducer {
    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], clientId = args[1], txnId = args[2], topic = args[3];
        int partitions = Integer.parseInt(args[4]);
        if (args.length > 5) {
            SampleProducer.createTopic(bootstrap, clientId, topic, partitions, Short.parseShort(args[5]));
        }
        Properties props = new Properties();
        props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(ProducerConfig.CLIENT_ID_CONFIG, clientId);
        props.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, txnId);
        props.put(ProducerConfig.LINGER_MS_CONFIG, "5");
        props.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        props.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        int done = 0;
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(props);
             BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
            producer.initTransactions();
            Json.emit(clientId, "initialized", Map.of("transactional_id", txnId));
            String line;
            while ((line = in.readLine()) != null && !line.trim().equals("stop")) {
                int n = Integer.parseInt(line.trim().split("\\s+")[1]);
                try {
                    for (int i = 0; i < n; i++, done++) {
                        boolean abort = done % 3 == 2;
                        producer.beginTransaction();
                        List<Future<RecordMetadata>> acks = new ArrayList<>();
                        for (int k = 0; k < 2 * partitions; k++) {
                            byte[] value = (clientId + " txn " + done + " #" + k).getBytes(StandardCharsets.UTF_8);
                            acks.add(producer.send(new ProducerRecord<>(topic, k % partitions, null, value)));
                        }
                        producer.flush();
                        Map<String, List<Long>> offsets = new TreeMap<>();
                        for (Future<RecordMetadata> ack : acks) {
                            RecordMetadata md = ack.get();
                            offsets.computeIfAbsent(md.topic() + ":" + md.partition(), key -> new ArrayList<>())
                                    .add(md.offset());
                        }
                        if (abort) {
                            producer.abortTransaction();
                        } else {
                            producer.commitTransaction();
                        }
                        Json.emit(clientId, "transaction", Map.of("transactional_id", txnId,
                                "outcome", abort ? "aborted" : "committed", "offsets", offsets));
                    }
                } catch (KafkaException | java.util.concurrent.ExecutionException e) {
                    Throwable cause = e instanceof KafkaException ? e : e.getCause();
                    Json.emit(clientId, "exception", Map.of("during", "transaction", "transactional_id", txnId,
                            "exception", cause.getClass().getSimpleName(),
                            "message", String.valueOf(cause.getMessage())));
                }
                Json.emit(clientId, "ran", Map.of("transactions", done));
            }
        } catch (KafkaException e) {
            Json.emit(clientId, "exception", Map.of("during", "close", "exception", e.getClass().getSimpleName(),
                    "message", String.valueOf(e.getMessage())));
        }
        Json.emit(clientId, "closed", Map.of());
    }
}
