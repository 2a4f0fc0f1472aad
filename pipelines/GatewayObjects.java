package kafkatap;

import java.util.ArrayList;
import java.util.List;
import py4j.Gateway;
import py4j.GatewayServer;

/**
 * Many of py4j's gateway objects at once, named by their ids in one string: a list of them, or their release.
 *
 * Why: py4j makes one round trip to this JVM per call, and two of its habits make most of PySpark's calls. It sends
 * a Python list as a new ArrayList and one add per element (a list of columns: its length plus two calls), and it
 * releases every Java object Python dropped with a call of its own: most of a report's calls (counted in
 * gateway_objects.py). Here a list is one call and a batch of releases one call. The ids are the gateway's own
 * (Python holds a list's elements while it is made, and releases only what it dropped), so nothing else changes.
 */
public final class GatewayObjects {
    private final Gateway gateway;

    public GatewayObjects(GatewayServer server) {
        this.gateway = server.getGateway();
    }

    /** The objects of these comma-separated ids, in their order, as py4j's own list conversion makes them. */
    public List<Object> list(String ids) {
        List<Object> objects = new ArrayList<>();
        for (String id : ids.split(",")) {
            objects.add(gateway.getObject(id));
        }
        return objects;
    }

    /** Release the objects of these comma-separated ids, as py4j's memory command does one at a time. */
    public void release(String ids) {
        for (String id : ids.split(",")) {
            gateway.deleteObject(id);
        }
    }
}
