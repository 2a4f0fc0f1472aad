import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.atomic.AtomicBoolean;

/** How the harness (samples/javaclients.py) ends a sample program: the line "stop" on stdin, or stdin closing. */
final class Stop {
    private Stop() {
    }

    /** A flag the program's poll loop reads, set by a daemon thread once the harness says stop. */
    static AtomicBoolean onStdin() {
        AtomicBoolean stop = new AtomicBoolean();
        Thread stdin = new Thread(() -> {
            try (BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
                String line;
                while ((line = in.readLine()) != null && !line.trim().equals("stop")) {
                    // only "stop" means anything
                }
            } catch (Exception e) {
                // stdin gone: stop as well
            }
            stop.set(true);
        });
        stdin.setDaemon(true);
        stdin.start();
        return stop;
    }
}
