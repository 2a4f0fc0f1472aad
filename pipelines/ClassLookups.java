package kafkatap;

import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * A class loader in front of the driver's own (the context class loader of the thread that starts the SparkContext,
 * and of kafkatap's job threads) that remembers the names its parent could not load, and says so at once the next
 * time.
 *
 * Why: Spark compiles the Java it generates for a query with Janino, which resolves every name of that code through
 * the thread's context class loader, and most of what it asks for is no class ("org", "org.apache", ... while it
 * resolves a qualified name). Each such miss searched all of pyspark's 280 jars again: on a 228k-frame capture, 657
 * compilations took 5.1 s, a tenth of the JVM's profile samples were those searches, and with this loader they took
 * 3.8 s. The executor of a local session takes its class loader's parent from the thread that starts it, so its tasks'
 * compilations ask here too.
 *
 * A name is remembered as missing only once the parent refused it, and the parent's class path does not change after
 * the JVM started (spark.jars are added before it runs anything); a class added later through SparkContext.addJar goes
 * to the executors' own loaders, which ask here first and then look in their jars, as before.
 */
public final class ClassLookups extends ClassLoader {
    private final Set<String> missing = ConcurrentHashMap.newKeySet();

    public ClassLookups(ClassLoader parent) {
        super(parent);
    }

    @Override
    protected Class<?> loadClass(String name, boolean resolve) throws ClassNotFoundException {
        if (missing.contains(name)) {
            throw new Missing(name);
        }
        try {
            return super.loadClass(name, resolve);
        } catch (ClassNotFoundException e) {
            missing.add(name);
            throw e;
        }
    }

    /** A miss told again: without a stack trace, which would cost more than the answer (callers only catch it). */
    static final class Missing extends ClassNotFoundException {
        Missing(String name) {
            super(name);
        }

        @Override
        public synchronized Throwable fillInStackTrace() {
            return this;
        }
    }
}
