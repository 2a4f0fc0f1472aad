import java.util.HashMap;
import java.util.Map;

/** The key=value arguments the harness (samples/javaclients.py) starts a sample program with. */
final class Args {
    private Args() {
    }

    static Map<String, String> of(String[] args) {
        Map<String, String> opt = new HashMap<>();
        for (String arg : args) {
            int eq = arg.indexOf('=');
            opt.put(arg.substring(0, eq), arg.substring(eq + 1));
        }
        return opt;
    }
}
