package kafkatap;

import java.lang.management.ManagementFactory;
import java.util.HashSet;
import java.util.Set;

import javax.management.ObjectName;

/**
 * Links every class this JVM has loaded, before its classes are dumped into the class archive (class_archive.py).
 *
 * Why: JDK 17's dynamic dump leaves out each class a JVM loaded but never linked (one it only named while verifying
 * another, say): about 4,200 of the 25,700 classes a run of the bundled sample loads, which every later run then
 * loads, parses and verifies from the jars again. Linking them first (the JVM links a class whose members reflection
 * asks for, and runs no static initializer for it) puts them in the archive. Linking may load further classes, so it
 * goes on until a round finds no class it has not seen (at most MAX_ROUNDS); a class that cannot be linked (a
 * dependency its jar leaves out, a class no name loads from here) stays out, as before.
 */
public final class LoadedClasses {
    private static final int MAX_ROUNDS = 5;

    private LoadedClasses() {
    }

    /** Links the loaded classes, round after round; returns how many it linked. */
    public static int link() throws Exception {
        ClassLoader loader = ClassLoader.getSystemClassLoader();
        Set<String> seen = new HashSet<>();
        int linked = 0;
        for (int round = 0; round < MAX_ROUNDS; round++) {
            Set<String> names = names();
            names.removeAll(seen);
            if (names.isEmpty()) {
                break;
            }
            seen.addAll(names);
            for (String name : names) {
                try {
                    Class<?> loaded = Class.forName(name, false, loader);
                    if (loaded.isInterface()) { // Java answers an interface's constructors without asking the JVM
                        loaded.getDeclaredMethods();
                    } else {
                        loaded.getDeclaredConstructors();
                    }
                    linked++;
                } catch (ClassNotFoundException | LinkageError unlinkable) { // it stays out of the archive
                }
            }
        }
        return linked;
    }

    /**
     * The names of the classes this JVM has loaded, from its VM.class_hierarchy diagnostic command: one class a line,
     * "|--name/loader" under its superclass. Hidden classes (lambdas), whose names hold a '/' too, are left out: no
     * name loads them.
     */
    private static Set<String> names() throws Exception {
        String hierarchy = (String) ManagementFactory.getPlatformMBeanServer().invoke(
                new ObjectName("com.sun.management:type=DiagnosticCommand"), "vmClassHierarchy",
                new Object[] {new String[0]}, new String[] {String[].class.getName()});
        Set<String> names = new HashSet<>();
        for (String line : hierarchy.split("\n")) {
            int start = line.lastIndexOf("--") + 2;
            int end = line.lastIndexOf('/');
            if (start < 2 || end <= start) {
                continue;
            }
            String name = line.substring(start, end);
            if (name.indexOf('/') < 0) {
                names.add(name);
            }
        }
        return names;
    }
}
